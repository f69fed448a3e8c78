"""Tests of the SLAQ and fair-share allocators on small hand-built jobs."""

import heapq
import math

import numpy as np
import pytest

from placer.sharing import slaq
from placer.sharing.allocators import FairAllocator, StaticFairAllocator, water_fill
from placer.sharing.slaq import SlaqAllocator
from placer.sharing.slaq_state import JobState


def _job(job_id, curve, n=30, a=2.0, b=0.1, slots=(1, 2, 4), max_slots=None):
    """A job with n reports of loss curve(k) and iterations of a / s + b seconds."""
    j = JobState(job_id, max_slots=max_slots)
    j.report(0, curve(0))
    for k in range(1, n):
        s = slots[k % len(slots)]
        j.report(k, curve(k), a / s + b, s)
    return j


def _flat():  # converged: its last change is 2e-5 of its first
    return _job("flat", lambda k: 5.0 + 10.0 * 0.7**k)


def _steep():  # still falling at 7% of its first change per iteration
    return _job("steep", lambda k: 1.0 / (0.01 * k + 0.1) + 1.0)


def test_job_state_tracks_history_and_max_change():
    j = JobState("a")
    j.report(0, 10.0)
    j.report(1, 7.0, 2.0, 1)
    j.report(2, 6.5, 1.0, 2)
    assert j.max_change == 3.0
    np.testing.assert_array_equal(j.losses, [10.0, 7.0, 6.5])
    assert (j.runtime().a, j.runtime().b) == pytest.approx((2.0, 0.0))  # t = 2 / s fits both
    with pytest.raises(ValueError):
        j.report(2, 6.0)


def test_steep_job_gets_more_slots_than_flat_one():
    alloc = SlaqAllocator(epoch_s=10.0).allocate([_flat(), _steep()], 16)
    assert alloc["steep"] > alloc["flat"] >= 1
    assert sum(alloc.values()) == 16


def test_every_job_gets_a_slot_and_total_is_bounded():
    jobs = [_job(i, lambda k, i=i: 1.0 / (0.01 * (i + 1) * k + 0.2) + i) for i in range(6)]
    for objective in ("total", "min"):
        for slots in (6, 7, 50):
            alloc = SlaqAllocator(objective, epoch_s=5.0).allocate(jobs, slots)
            assert min(alloc.values()) >= 1
            assert sum(alloc.values()) <= slots


def test_fewer_slots_than_jobs_gives_at_most_one_each():
    alloc = SlaqAllocator(epoch_s=10.0).allocate([_flat(), _steep()], 1)
    assert alloc == {"flat": 0, "steep": 1}


def test_max_slots_is_respected():
    steep = _job("steep", lambda k: 1.0 / (0.01 * k + 0.1) + 1.0, max_slots=3)
    alloc = SlaqAllocator(epoch_s=10.0).allocate([_flat(), steep], 16)
    assert alloc["steep"] == 3
    assert sum(alloc.values()) <= 16


def test_new_job_is_served_first():
    new = JobState("new")
    new.report(0, 3.0)
    alloc = SlaqAllocator(epoch_s=10.0).allocate([_flat(), _steep(), new], 16)
    assert alloc["new"] > alloc["steep"]


def test_max_min_objective_favours_the_worst_job():
    # "behind" is at 1/(0.01*30+1) = 77% of its way from the asymptote; "ahead" at 0.7^30 ~ 0%.
    behind = _job("behind", lambda k: 1.0 / (0.01 * k + 1.0))
    ahead = _job("ahead", lambda k: 3.0 * 0.7**k + 1.0)
    alloc = SlaqAllocator("min", epoch_s=2.0).allocate([ahead, behind], 10)
    assert alloc["behind"] == 9 and alloc["ahead"] == 1


def test_normaliser_decides_between_a_big_first_step_and_a_geometric_curve():
    # Both fall from 1 towards 0 (fitted total reduction 1); iterations take 2/s + 0.1 s.
    # "young" = 1/(k+1) at k=5, largest change 0.5; "old" = 0.9^k at k=20, largest change 0.1.
    # In a 1 s epoch, 1 slot runs 0.476 iterations and 2 slots 0.909, so the second slot
    # wins young 1/6.476 - 1/6.909 = 0.0097 of its total and old 0.9^20 (0.9^0.476 - 0.9^0.909)
    # = 0.0052. Over the largest change: young 0.019, old 0.052.
    young = _job("young", lambda k: 1.0 / (k + 1.0), n=6)
    old = _job("old", lambda k: 0.9**k, n=21)
    by_change = SlaqAllocator(epoch_s=1.0).allocate([young, old], 10)
    by_total = SlaqAllocator(epoch_s=1.0, normalise="fitted_total").allocate([young, old], 10)
    assert by_change["old"] > by_change["young"] >= 1
    assert by_total["young"] > by_total["old"] >= 1


def _heap_reference(allocator, jobs, num_slots):
    """Slot-by-slot greedy with a heap of marginal keys: what the vectorised code must equal."""
    m = slaq._unpack(np.array([j.model_row() for j in jobs], dtype=float))
    keys = slaq._slot_keys(
        m, np.arange(2.0, num_slots + 2.0), allocator.epoch_s, allocator.objective, allocator.normalise
    )
    counts = [1] * len(jobs)
    heap = [(-keys[i, 0], i) for i in range(len(jobs))]
    heapq.heapify(heap)
    for _ in range(num_slots - len(jobs)):
        neg, i = heapq.heappop(heap)
        if not np.isfinite(neg):
            break
        counts[i] += 1
        heapq.heappush(heap, (-keys[i, counts[i] - 1], i))
    return {j.job_id: c for j, c in zip(jobs, counts, strict=True)}


@pytest.mark.parametrize(
    "objective,normalise", [("total", "max_change"), ("total", "fitted_total"), ("min", "max_change")]
)
def test_vectorised_allocation_equals_heap_greedy(objective, normalise):
    rng = np.random.default_rng(1)
    jobs = []
    for i in range(8):
        a, b, scale = rng.uniform(0.5, 4.0), rng.uniform(0.01, 0.5), 10 ** rng.uniform(-1, 2)
        curve = [lambda k: 1.0 / (0.02 * k + 0.3), lambda k: 0.93**k, lambda k: 1.0 / (0.001 * k * k + 0.1 * k + 1)][
            i % 3
        ]
        jobs.append(
            _job(
                i,
                lambda k, c=curve, s=scale: s * c(k) + s,
                n=int(rng.integers(8, 40)),
                a=a,
                b=b,
                slots=(1, int(rng.integers(2, 9))),
            )
        )
    allocator = SlaqAllocator(objective, epoch_s=3.0, normalise=normalise)
    for slots in (8, 13, 40, 200):
        assert allocator.allocate(jobs, slots) == _heap_reference(allocator, jobs, slots)


def test_fair_share_splits_evenly_with_remainder_to_earliest():
    jobs = [JobState(i) for i in range(3)]
    assert FairAllocator().allocate(jobs, 11) == {0: 4, 1: 4, 2: 3}
    assert FairAllocator().allocate(jobs, 2) == {0: 1, 1: 1, 2: 0}
    assert FairAllocator().allocate([], 5) == {}


def test_fair_share_gives_a_capped_jobs_unused_slots_to_the_others():
    # 10 slots, caps 2, none, 3: even split 4/3/3 -> job 0 keeps 2, its 2 spare go to
    # job 1 (uncapped) and none to job 2 (already at its cap 3): 2 / 5 / 3, all 10 used.
    jobs = [JobState("a", max_slots=2), JobState("b"), JobState("c", max_slots=3)]
    assert FairAllocator().allocate(jobs, 10) == {"a": 2, "b": 5, "c": 3}
    # The static share leaves those slots idle: 2 / 3 / 3, 2 of 10 unused.
    assert StaticFairAllocator().allocate(jobs, 10) == {"a": 2, "b": 3, "c": 3}


def test_water_fill_uses_every_slot_a_job_below_its_cap_can_take():
    # caps 1, 2, 6 on 8 slots: round 1, share 2 each -> 1, 2, 2 with 3 left; round 2 -> job 2 takes them.
    assert water_fill([1, 2, 6], 8).tolist() == [1, 2, 5]
    # More slots than all caps together: every job at its cap, the rest idle.
    assert water_fill([1, 2, 3], 20).tolist() == [1, 2, 3]
    # Remainder after even rounds goes to the earliest open jobs: 7 on 3 uncapped -> 3, 2, 2.
    assert water_fill([math.inf] * 3, 7).tolist() == [3, 2, 2]
    # Fewer slots than jobs: the earliest get one each.
    assert water_fill([4, 4, 4], 2).tolist() == [1, 1, 0]
    rng = np.random.default_rng(0)
    for _ in range(50):
        caps = rng.integers(1, 9, size=rng.integers(1, 12)).astype(float)
        n = int(rng.integers(0, 60))
        a = water_fill(caps, n)
        assert a.sum() == min(n, caps.sum()) and np.all(a <= caps)
        if a.sum() < n:  # slots idle: every job is at its cap
            assert np.all(a == caps)
        short = a < caps  # max-min: no job below its cap has 2 fewer than another job
        assert not short.any() or a[short].min() >= a.max() - 1


def test_bad_objective_or_normaliser_is_refused():
    with pytest.raises(ValueError, match="objective"):
        SlaqAllocator("best")
    with pytest.raises(ValueError, match="normalise"):
        SlaqAllocator(normalise="span")
