"""Search reports: the loss a search reports, tables, and the comparison with fair share."""

import math

import pytest

from placer.sharing import report
from placer.sharing.report import time_to_fraction


def test_search_loss_by_kind():
    # Batch mean sqrt step time 3.0 s^0.5, best step time 4 s, reward baseline -2.5 (= -sqrt(6.25)).
    assert report.search_loss("mean", 3.0, 4.0, -2.5) == 3.0
    assert report.search_loss("best", 3.0, 4.0, -2.5) == 2.0
    assert report.search_loss("baseline", 3.0, 4.0, -2.5) == 2.5
    # Undefined yet (no successful sample, no baseline): the batch mean.
    assert report.search_loss("best", 3.0, math.inf, None) == 3.0
    assert report.search_loss("baseline", 3.0, 4.0, None) == 3.0
    with pytest.raises(ValueError, match="unknown loss"):
        report.search_loss("median", 3.0, 4.0, -2.5)


def test_time_to_fraction_by_hand():
    # Loss 10 -> 0 (total 10): 80% means loss <= 2, first at t = 2; 95% at t = 3; from a start at 0.5.
    times, losses = [0.5, 1.0, 2.0, 3.0], [10.0, 5.0, 2.0, 0.0]
    assert time_to_fraction(times, losses, 0.5, 0.8) == 1.5
    assert time_to_fraction(times, losses, 0.5, 0.95) == 2.5
    # Against a larger total than observed (job cut by the horizon): never reached.
    assert time_to_fraction(times, losses, 0.5, 0.9, total=20.0) == math.inf
    assert math.isnan(time_to_fraction([0.0, 1.0], [1.0, 1.0], 0.0, 0.9))


def _summary(policy, t90, quality):
    job = {"name": "a-rather-long-search-name", "status": "done", "iterations": 3, "best_step_time": 0.5}
    job["time_to"] = {"80%": 1.0, "90%": t90, "95%": None}
    return {
        "policy": policy,
        "slots": 4,
        "epoch_s": 5.0,
        "wall_s": 10.0,
        "jobs": [job],
        "mean_time_to": {"80%": 1.0, "90%": t90, "95%": None},
        "average_quality": quality,
    }


def test_table_keeps_whole_names_and_comparison_has_its_sign():
    text = report.format_table(_summary("slaq", 9.0, 0.8))
    assert "a-rather-long-search-name" in text and "9.0" in text
    lines = report.compare_to_fair({"fair": _summary("fair", 10.0, 0.7), "slaq": _summary("slaq", 12.0, 0.6)})
    assert lines == (
        "slaq: mean time to 90% 12.0 s, 20.00% slower than fair (10.0 s), over the 1 jobs that reached 90% "
        "under both; average normalised quality 0.600, 14.3% lower than fair (0.700)"
    )
