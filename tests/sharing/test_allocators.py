"""Tests of regime detection, measured runtime profiles and the SLAQ-safe allocator."""

import numpy as np
import pytest

from placer.sharing import slaq_curves
from placer.sharing.allocators import FairAllocator, SafeSlaqAllocator, make_allocator, safe_swaps, scored_error
from placer.sharing.slaq import JobState, SlaqAllocator


def _drop_curve(k):
    """Loss 10 - 0.1 k for k < 25, then a learning-rate drop by 3 and the same slope."""
    return 10.0 - 0.1 * k - (3.0 if k >= 25 else 0.0)


def test_regime_starts_after_a_learning_rate_drop():
    losses = [_drop_curve(k) for k in range(35)]
    # changes: -0.1 each (no spread: any other change is a jump), then -3.1 into index 25.
    assert slaq_curves.regime_start(losses) == 25
    assert slaq_curves.regime_start(losses[:25]) == 0
    noisy = 5.0 + 0.05 * np.random.default_rng(0).standard_normal(200)
    assert slaq_curves.regime_start(noisy) == 0  # steady noise is no jump


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


def test_prediction_error_is_scored_per_allocation():
    j = JobState("a")
    alloc = SlaqAllocator()
    _feed(j, lambda k: 10.0 - 0.1 * k, 0, 12, alloc)  # a straight line: predicted within a few %
    assert j.scored_epochs == 5 and j.prediction_error < 0.05
    j.report(12, 10.0 - 0.1 * 12 - 3.0, 1.0, 1)  # the drop: predicted 0.1, got 3.1 -> (3.1 - 0.1) / 3.1
    alloc.allocate([j], 4)
    assert j._errors[-1] == pytest.approx(3.0 / 3.1, rel=1e-3)


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


_PARALLEL = [1.0 / s for s in range(1, 9)]  # seconds per iteration on 1..8 slots: perfectly parallel


def _line(k):
    """Falls 0.1 per iteration (normalised gain 1 per iteration)."""
    return 10.0 - 0.1 * k


def _flat(k):
    """Halves its distance to 1 every iteration: no gain left after 30 iterations."""
    return 1.0 + 9.0 * 0.5**k


def _replay(curves, iterations=30, slots=8):
    """Two jobs on `slots` slots, reported to and allocated by SLAQ-safe every iteration."""
    jobs = [JobState(name, profile=_PARALLEL) for name in curves]
    safe = SafeSlaqAllocator()
    for k in range(iterations):
        for j in jobs:
            j.report(k, curves[j.job_id](k), *((1.0, 1) if k else ()))
        got = safe.allocate(jobs, slots)
    return jobs, got


def test_slaq_safe_moves_slots_to_a_reliable_job_with_a_far_larger_gain():
    # Both curves are predicted well (running errors about 0.1 and 0). On s slots the line runs
    # 5 s / (1/s s) = 5 s iterations per epoch, each worth a normalised 1, so each slot gains it
    # about 5 (a little less as its fit flattens); the flat curve gains nothing. From the fair
    # 4 + 4 every slot but the one the donor keeps moves: 7 + 1, what SLAQ gives too.
    jobs, got = _replay({"line": _line, "flat": _flat})
    assert all(j.prediction_error < 0.2 for j in jobs)
    assert got == {"line": 7, "flat": 1} == SlaqAllocator().allocate(jobs, 8)


def test_slaq_safe_keeps_the_fair_share_when_predictions_are_unreliable():
    # The zigzag rises every other iteration, which no prediction foresees (the predicted loss never
    # rises), so each rise is missed by more than the whole change: its running error is above 1 and
    # its gains shrink to nothing. The wobble has flattened out and its fit predicts no progress,
    # while it moves by 0.001 each iteration: every prediction misses all of it, an error of exactly 1.
    # SLAQ would move the wobble's slots to the zigzag (7 + 1); SLAQ-safe keeps the fair 4 + 4.
    zigzag = lambda k: _line(k) + 0.15 * (k % 2)  # noqa: E731
    wobble = lambda k: _flat(k) + 0.001 * (k % 2)  # noqa: E731
    jobs, got = _replay({"zigzag": zigzag, "wobble": wobble})
    assert jobs[0].prediction_error > 1.0 and jobs[1].prediction_error == pytest.approx(1.0)
    assert all(scored_error(j) >= 1.0 for j in jobs)
    assert SlaqAllocator().allocate(jobs, 8) == {"zigzag": 7, "wobble": 1}
    assert got == {"zigzag": 4, "wobble": 4}
    # Before any prediction is scored no job is trusted either: the fair share exactly.
    fresh = [JobState("x"), JobState("y", max_slots=2)]
    assert SafeSlaqAllocator().allocate(fresh, 9) == FairAllocator().allocate(fresh, 9) == {"x": 7, "y": 2}


def test_a_slot_moves_only_when_the_gain_beats_the_loss_by_more_than_the_errors_and_margin():
    fair = np.array([4, 4])
    flat = np.array([[3.0] * 8, [1.0] * 8])  # gain of each job's s-th slot
    # Exact predictions: 3 > 1.5 x 1, so slots move until the donor is down to its last one.
    assert safe_swaps(fair, flat, np.array([0.0, 0.0]), margin=0.5).tolist() == [7, 1]
    # Errors of 0.4: pessimistic gain 3 x 0.6 = 1.8, optimistic loss 1 x 1.4 = 1.4, and 1.8 < 1.5 x 1.4.
    assert safe_swaps(fair, flat, np.array([0.4, 0.4]), margin=0.5).tolist() == [4, 4]
    # An advantage of 20% is within a margin of 50%, even with exact predictions.
    assert safe_swaps(fair, np.array([[1.2] * 8, [1.0] * 8]), np.array([0.0, 0.0]), margin=0.5).tolist() == [4, 4]
    # Diminishing gains: 2.5 > 1.5 x 1.0 (5 + 3), 2.0 > 1.5 x 1.2 (6 + 2), 1.4 < 1.5 x 1.5: stop.
    shrinking = np.array([[3.0, 3.0, 3.0, 3.0, 2.5, 2.0, 1.4, 1.0], [2.0, 1.5, 1.2, 1.0, 0.9, 0.8, 0.7, 0.6]])
    assert safe_swaps(fair, shrinking, np.array([0.0, 0.0]), margin=0.5).tolist() == [6, 2]
    # A job without a scored error (NaN) is neither a receiver nor a donor.
    assert safe_swaps(fair, flat, np.array([np.nan, 0.0]), margin=0.5).tolist() == [4, 4]
    assert safe_swaps(fair, flat, np.array([0.0, np.nan]), margin=0.5).tolist() == [4, 4]


def test_registry_names_every_allocator_and_refuses_unknown_ones():
    assert isinstance(make_allocator("slaq-safe"), SafeSlaqAllocator)
    assert make_allocator("slaq", objective="maxmin").objective == "min"
    with pytest.raises(ValueError, match="unknown allocator 'best'"):
        make_allocator("best")
    with pytest.raises(ValueError, match="objective"):
        make_allocator("slaq", objective="min")
