"""Tests of regime detection, measured runtime profiles and the SLAQ-safe allocator."""

import numpy as np
import pytest

from placer.sharing import slaq_curves, slaq_regimes
from placer.sharing.allocators import FairAllocator, KneeAllocator, make_allocator
from placer.sharing.slaq import SlaqAllocator
from placer.sharing.slaq_state import JobState


def _drop_curve(k):
    """Loss 10 - 0.1 k for k < 25, then a learning-rate drop by 3 and the same slope."""
    return 10.0 - 0.1 * k - (3.0 if k >= 25 else 0.0)


def test_regime_starts_after_a_learning_rate_drop():
    losses = [_drop_curve(k) for k in range(35)]
    # changes: -0.1 each (no spread: any other change is a jump), then -3.1 into index 25.
    assert slaq_regimes.regime_start(losses) == 25
    assert slaq_regimes.regime_start(losses[:25]) == 0
    noisy = 5.0 + 0.05 * np.random.default_rng(0).standard_normal(200)
    assert slaq_regimes.regime_start(noisy) == 0  # steady noise is no jump


def _feed(job, curve, start, stop, allocator=None, slots=4):
    for k in range(start, stop):
        job.report(k, curve(k), 1.0, 1) if k else job.report(0, curve(0))
        if allocator is not None:
            allocator.allocate([job], slots)


def test_job_state_fits_only_the_regime_after_a_jump():
    j = JobState("a")
    _feed(j, _drop_curve, 0, 35)
    assert j.regime_points == 10
    fit = j.curve()
    assert fit.k0 == 25  # nothing before the drop
    assert slaq_curves.predict(fit, 40) == pytest.approx(_drop_curve(40), abs=0.05)


def test_a_job_never_gets_more_slots_than_its_fastest_measured_count():
    # Measured seconds per iteration on 1..6 slots: fastest on 3, slower beyond.
    profile = [4.0, 2.0, 1.5, 1.6, 2.0, 3.0]
    j = JobState("slow", profile=profile)
    _feed(j, lambda k: 1.0 / (0.01 * k + 0.1), 0, 30)
    assert j.cap == 3
    assert SlaqAllocator().allocate([j], 16) == {"slow": 3}
    assert FairAllocator().allocate([j, JobState("b", max_slots=2)], 16) == {"slow": 3, "b": 2}


def test_slaq_uses_the_measured_profile_for_iteration_time():
    # Two identical curves; one job's iterations take 10 times longer on every slot count,
    # so each extra slot buys it a tenth of the progress: the fast job gets the spare slots.
    curve = lambda k: 1.0 / (0.01 * k + 0.1)  # noqa: E731
    fast, slow = JobState("fast", profile=[1.0, 0.5, 0.34, 0.25]), JobState("slow", profile=[10.0, 5.0, 3.4, 2.5])
    for j in (fast, slow):
        _feed(j, curve, 0, 30)
    alloc = SlaqAllocator(epoch_s=5.0).allocate([fast, slow], 5)
    assert alloc == {"fast": 4, "slow": 1}


def test_registry_names_every_allocator_and_refuses_unknown_ones():
    assert isinstance(make_allocator("slaq-safe"), KneeAllocator)
    assert make_allocator("slaq", objective="maxmin").objective == "min"
    with pytest.raises(ValueError, match="unknown allocator 'best'"):
        make_allocator("best")
    with pytest.raises(ValueError, match="objective"):
        make_allocator("slaq", objective="min")
