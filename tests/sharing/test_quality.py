"""The normalised quality: one definition, in [0, 1], the same in replays and in placer-search reports."""

import math

import numpy as np
import pytest

from bench.slaq_traces import TraceJob, simulate_sharing
from placer.sharing import allocators
from placer.sharing import report as search_report
from placer.sharing.report import normalised_quality


def test_quality_by_hand():
    # L0 = 10, L_N = 6 (total 4). A dip to 2 on the way once counted as (10 - 2) / 4 = 2.0.
    assert normalised_quality(10.0, 2.0, 4.0) == 1.0
    assert normalised_quality(10.0, 8.0, 4.0) == 0.5
    assert normalised_quality(10.0, 10.0, 4.0) == 0.0
    assert normalised_quality(5.0, 5.0, -1.0) == 1.0  # no reduction: nothing left to win


def test_noisy_search_curve_stays_within_one():
    # Window 1: losses 10, 2, 12, 6 at 1..4 s. The old (L0 - L) / (L0 - L_N) read 2.0 at 2 s
    # and -0.5 at 3 s; on the lowest loss so far it is 1 from 2 s on.
    c = search_report.JobCurve("j", "done", 0.0, 5.0, [1.0, 2.0, 3.0, 4.0], [10.0, 2.0, 12.0, 6.0])
    got = [search_report.quality_at(c, t, window=1) for t in (0.5, 1.5, 2.5, 3.5, 4.5)]
    assert got == [0.0, 0.0, 1.0, 1.0, 1.0]
    # q >= 90% exactly from the time to 90% on (the same total).
    assert search_report.time_to(c, 0.9, window=1) == 2.0


def test_summary_of_noisy_runs_reports_quality_at_most_one():
    rng = np.random.default_rng(7)
    jobs = []
    for i in range(6):
        n = 30
        losses = 5.0 * np.exp(-np.arange(n + 1) / (4 + 3 * i)) + rng.normal(0, 0.6, n + 1)  # noise hides the trend
        jobs.append(TraceJob(f"j{i}", 2.0 * i, losses, np.ones((n + 1, 2))))
    for name in ("fair", "slaq"):
        alloc = allocators.make_allocator(name, epoch_s=1.0)
        r = simulate_sharing(jobs, alloc, 3, epoch_s=1.0, horizon_s=200.0)
        q = r.mean_quality[np.isfinite(r.mean_quality)]
        assert q.size and (q >= 0).all() and (q <= 1).all()
        curves = [
            search_report.JobCurve(
                j,
                "done",
                float(r.arrivals[k]),
                float(r.curves[j][0][-1]),
                r.curves[j][0][1:].tolist(),
                r.curves[j][1][1:].tolist(),
            )
            for k, j in enumerate(r.job_ids)
        ]
        summary = search_report.summarise(name, curves, r.quality_times, slots=3, epoch_s=1.0, wall_s=200.0)
        assert 0 < summary["average_quality"] <= 1
        assert all(x is None or 0 <= x <= 1 for x in summary["mean_quality"])


@pytest.mark.parametrize("seed", range(3))
def test_quality_is_monotone_and_bounded_on_any_curve(seed):
    rng = np.random.default_rng(seed)
    losses = rng.normal(0, 1, 40).tolist()
    c = search_report.JobCurve("j", "done", 0.0, 41.0, list(map(float, range(1, 41))), losses)
    q = [search_report.quality_at(c, t + 0.5) for t in range(42)]
    assert all(0 <= x <= 1 for x in q) and q == sorted(q)
    assert not any(math.isnan(x) for x in q)
