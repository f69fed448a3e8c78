"""Tests of the SLAQ bench's noise floor (bench/slaq.py): what no trend prediction can beat."""

import numpy as np
import pytest

from bench import slaq_predict
from bench.slaq_traces import TraceJob


def _job(name, losses):
    return TraceJob(name, 0.0, np.asarray(losses, dtype=float), np.ones((len(losses), 1)))


def test_noise_floor_compares_each_predicted_point_with_its_neighbours():
    # A straight line has no noise; a curve that alternates 1, 3 misses by |1 - 3| / 1 where it is 1
    # and |3 - 1| / 3 where it is 3. 10 ahead, the predicted points are 20 and 30 of 41 losses
    # (40 iterations), and 20, 30 and 40 of 42.
    line = _job("line", np.linspace(2.0, 1.0, 41))
    zigzag = _job("zigzag", np.where(np.arange(41) % 2 == 0, 1.0, 3.0))
    odd = _job("odd", np.where(np.arange(42) % 2 == 0, 3.0, 1.0))  # points 20, 30, 40 are 3s
    stats, per_job = slaq_predict.noise_floor([line, zigzag, odd], ahead=10)
    assert stats["fits"] == 7
    assert per_job["line"] == pytest.approx(0.0, abs=1e-12)
    assert per_job["zigzag"] == pytest.approx(2.0)
    assert per_job["odd"] == pytest.approx(2 / 3)
    assert stats["median"] == pytest.approx(2 / 3)
