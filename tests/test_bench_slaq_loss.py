"""Tests of the loss-signal bench's helpers (bench/slaq_loss.py)."""

import numpy as np
import pytest

from bench import slaq_loss
from bench.slaq_traces import TraceJob


def _job(name, losses, seconds=1.0):
    return TraceJob(name, 0.0, np.array(losses), np.full((len(losses), 1), seconds))


def test_each_job_is_evaluated_on_its_best_so_far_curve():
    mean = [_job("a", [3.0, 2.5, 2.8]), _job("b", [5.0, 4.0, 3.0])]
    best = [_job("b", [4.0, 3.5, 2.0]), _job("a", [2.0, 2.0, 1.5])]
    out = slaq_loss.with_best_evaluation(mean, best)
    assert [j.job_id for j in out] == ["a", "b"]
    np.testing.assert_array_equal(out[0].losses, [3.0, 2.5, 2.8])  # what the allocator sees
    np.testing.assert_array_equal(out[0].quality_losses, [2.0, 2.0, 1.5])
    np.testing.assert_array_equal(out[1].quality_losses, [4.0, 3.5, 2.0])


@pytest.mark.parametrize(
    "best",
    [
        [_job("a", [2.0, 2.0, 1.5], seconds=2.0)],  # other seconds
        [_job("a", [2.0, 1.5])],  # other iterations
        [_job("z", [2.0, 2.0, 1.5])],  # other job
        [_job("a", [2.0, 2.0, 1.5]), _job("b", [1.0, 0.5, 0.2])],  # a job more
    ],
)
def test_traces_of_different_searches_are_refused(best):
    with pytest.raises(ValueError):
        slaq_loss.with_best_evaluation([_job("a", [3.0, 2.5, 2.8])], best)


def test_winner_is_the_lowest_change_ties_to_the_better_prediction():
    rows = {
        "mean": {"change": -0.05, "pred": 0.01},
        "best": {"change": -0.08, "pred": 0.09},
        "baseline": {"change": -0.08, "pred": 0.02},
    }
    assert slaq_loss.winner(rows) == "baseline"
    # Half a workload faster, half slower, one unchanged: the median is 0, the worst +50%.
    assert slaq_loss.change_against_fair(np.array([4.0, 2.0, 4.0]), np.array([3.0, 2.0, 6.0])) == {
        "change": 0.0,
        "worst": 0.5,
    }
    assert slaq_loss.signal_path("d/search_trace.csv", "best") == "d/search_trace_best.csv"
    assert slaq_loss.signal_path("d/search_trace.csv", "mean") == "d/search_trace.csv"


def test_the_verdict_is_judged_under_the_default_allocator_and_plain_slaq_is_named_apart():
    def row(change, slaq_change):
        return {"fits": 1, "pred": 0.01, "p90": 0.02, "fair_t90": 10.0, "change": change, "worst": change,
                "slaq_change": slaq_change, "slaq_worst": slaq_change}  # fmt: skip

    rows = {"mean": row(-0.004, -0.02), "best": row(-0.003, 0.03), "baseline": row(-0.002, -0.07)}
    text = "\n".join(slaq_loss.lines(rows, [0, 1], [_job("a", [3.0, 2.0])]))
    assert (
        "Winner under `slaq-safe` (lowest median change against fair, ties to the lower prediction error): `mean`"
        in text
    )
    assert "Under plain `slaq` the best signal is `baseline` (-7.0%)." in text
