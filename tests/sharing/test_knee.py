"""SLAQ-safe (the knee rule): jobs past their knee yield, within a bound, and no worse than fair where SLAQ loses."""

import numpy as np

from bench.slaq_traces import TraceJob, simulate_sharing
from placer.sharing.allocators import FairAllocator, KneeAllocator, make_allocator
from placer.sharing.slaq_state import JobState


def _job(name, curve, iterations, total):
    j = JobState(name, total_iterations=total)
    for k in range(iterations + 1):
        j.report(k, curve(k), *((1.0, 1) if k else ()))
    return j


def _converged(k):
    """Halves its distance to 1 each iteration: all but 9 x 2^-30 of its reduction made by k = 30."""
    return 1.0 + 9.0 * 0.5**k


def test_a_job_past_its_knee_yields_once_per_tenth_of_its_fair_service():
    # "old" has run 30 of 40 iterations and made all of its fitted reduction: past its knee.
    # "young" has run 5 of 100. Fair on 6 slots: 3 + 3. The first epoch "old" has no fair service
    # yet, so it may give up nothing; the second it yields all 3 slots (0 < 0.1 x 3). It has then
    # given up 3 slot-epochs, and may yield again only once 3 < 0.1 x 3 (n - 1) for allocation n:
    # n = 12; then 6 < 0.1 x 3 (n - 1): n = 22.
    old = _job("old", _converged, 30, 40)
    young = _job("young", lambda k: 10.0 - 0.1 * k, 5, 100)
    assert old.fitted_progress() > 0.999
    knee = KneeAllocator(yield_share=0.1, run_yield_share=1.0)  # the run's guard off: the job's ledger alone
    got = [knee.allocate([old, young], 6) for _ in range(22)]
    yielded = [n + 1 for n, a in enumerate(got) if a == {"old": 0, "young": 6}]
    assert yielded == [2, 12, 22]
    assert all(a == {"old": 3, "young": 3} for n, a in enumerate(got) if n + 1 not in yielded)
    assert knee.given_up["old"] == 9 and knee.fair_service["old"] == 66  # 9 / 66 = 13.6%: 3 of it this epoch


def test_the_run_guard_switches_to_fair_when_a_yield_would_cost_the_promise():
    # The same two jobs, the job's own bound off (yield_share 1): only the run's guard limits "old".
    # Fair is 3 + 3 each allocation (6 fair slot-epochs); a yield gives up 3. With the guard at 30%,
    # allocation n yields when (given up so far + 3) / 6 n < 0.3: with G given up, first n > (G + 3) / 1.8:
    # n = 2 (G = 0; "old" had no fair service at n = 1), 4 (G = 3), 6 (G = 6), 7, 9, 11, 12.
    old = _job("old", _converged, 30, 40)
    young = _job("young", lambda k: 10.0 - 0.1 * k, 5, 100)
    knee = KneeAllocator(yield_share=1.0, run_yield_share=0.3)
    got = []
    for _ in range(12):
        got.append(knee.allocate([old, young], 6))
        # the prediction (slot-epochs given up over fair-share slot-epochs) never reaches the guard's share
        assert sum(knee.given_up.values()) / sum(knee.fair_service.values()) < 0.3
    assert [n + 1 for n, a in enumerate(got) if a == {"old": 0, "young": 6}] == [2, 4, 6, 7, 9, 11, 12]
    assert all(a in ({"old": 3, "young": 3}, {"old": 0, "young": 6}) for a in got)
    # With the default 1%, two jobs never yield: one epoch's yield is a quarter of the run's service.
    knee = KneeAllocator(yield_share=1.0)
    assert all(knee.allocate([old, young], 6) == {"old": 3, "young": 3} for _ in range(12))


def test_jobs_whose_knee_cannot_be_told_keep_exactly_their_fair_share():
    # Converged curves, but: no known budget; only 30 of 100 iterations run (a plateau this early
    # may precede a learning-rate drop); a regime of 2 losses just after a drop (no curve fitted).
    no_budget = _job("no-budget", _converged, 30, None)
    early = _job("early", _converged, 30, 100)
    dropped = _job("dropped", lambda k: _converged(k) - (5.0 if k >= 29 else 0.0), 30, 40)
    assert dropped.regime_points == 2 and np.isnan(dropped.fitted_progress())
    jobs = [no_budget, early, dropped, JobState("capped", max_slots=1)]
    knee = KneeAllocator()
    for _ in range(5):
        assert (
            knee.allocate(jobs, 10)
            == FairAllocator().allocate(jobs, 10)
            == {
                "no-budget": 3,
                "early": 3,
                "dropped": 3,
                "capped": 1,
            }
        )
    assert all(v == 0 for v in knee.given_up.values())


def _plateau_then_drop(k):
    """Falls to 1.0 by iteration 10, sits there (a plateau), and drops to 0.2 at iteration 18 of 40."""
    return (0.2 if k >= 18 else 1.0) + 1.0 * 0.6**k


def test_where_slaq_starves_a_plateau_before_a_drop_slaq_safe_stays_within_1_percent_of_fair():
    # "step" (40 iterations, above) and "steady" (5 - 0.05 k, 80 iterations) on 4 slots, iterations of
    # 4 / s seconds on s slots (up to 4), epochs of 2 s.
    # Fair: 2 + 2, 2 s per iteration. step's reduction is 2.0 - 0.2 = 1.8; 90% is a loss of 0.38,
    # first at k = 18: 36 s. steady's 90% is a loss of 1.4 at k = 72: 40 iterations take 80 s (then
    # step is done), the other 32 take 1 s on 4 slots: 112 s. Mean 74 s.
    # SLAQ predicts no gain for step on its plateau and moves its slots to steady, so step reaches
    # its drop later; SLAQ-safe sees that plateau before half of step's budget and keeps 2 + 2.
    secs = lambda n: np.tile(4.0 / np.arange(1, 5), (n + 1, 1))  # noqa: E731
    jobs = [
        TraceJob("step", 0.0, np.array([_plateau_then_drop(k) for k in range(41)]), secs(40)),
        TraceJob("steady", 0.0, np.array([5.0 - 0.05 * k for k in range(81)]), secs(80)),
    ]
    runs = {
        name: simulate_sharing(jobs, make_allocator(name, epoch_s=2.0), 4, epoch_s=2.0, horizon_s=400.0)
        for name in ("fair", "slaq", "slaq-safe")
    }
    t90 = {name: r.mean_time_to(0.9) for name, r in runs.items()}
    quality = {name: r.average_quality() for name, r in runs.items()}
    assert runs["fair"].time_to[0.9].tolist() == [36.0, 112.0]
    assert t90["slaq"] > 1.05 * t90["fair"]  # plain SLAQ loses, on the job with the plateau
    assert runs["slaq"].time_to[0.9][0] > 36.0
    assert t90["slaq-safe"] <= 1.01 * t90["fair"]
    assert quality["slaq-safe"] >= 0.99 * quality["fair"]
