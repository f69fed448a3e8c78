"""Bounds of a step under TF's default inter-op pool around the simulator's one-op-at-a-time step.

Ops cost 1 s each on the reference CPU and the overheads are 0.25 s or 0.5 s,
so every figure below is exact in binary floating point.
"""

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core.op_graph import OpGraph
from placer.measure.calibration import pool_bounds
from placer.measure.simulator import simulate

CAL = {"cpu_trace_floor": 0.125, "cpu_dispatch": 0.25, "cpu_transfer_cost": 0.5}


def fork3():
    """a -> b, a -> c: b and c independent, 1 s each on the reference CPU."""
    return OpGraph.create(
        "fork", ["a", "b", "c"], ["T"] * 3, [("a", "b", 100), ("a", "c", 100)], device_types=("CPU",),
        compute_cost=np.ones((3, 1)),
    ).with_calibration(CAL)  # fmt: skip


def local_cpu():
    return cl.make("local", [cl.Device("/device:CPU:0", "CPU", 10**9)], bandwidth=100.0)


def test_bounds_around_the_simulated_step_with_a_hand_off_per_op():
    step = simulate(fork3(), local_cpu(), np.zeros(3, np.int64)).step_time
    assert step == 3.75  # one op at a time: 3 x (1 s + 0.25 s dispatch)
    # 2 pool threads: at least 3.75 / 2 = 1.875 s (b and c at once after a would take 2.5 s, inside);
    # at most every op handed off once at 0.5 s: 3.75 + 3 x 0.5 = 5.25 s.
    assert pool_bounds(step, 3, 0.5, 2) == (1.875, 5.25)


def test_no_hand_off_cost_leaves_the_serial_step_as_the_upper_end():
    assert pool_bounds(3.75, 3, 0.0, 2) == (1.875, 3.75)
    assert pool_bounds(3.75, 3, 0.25, 1) == (3.75, 4.5)  # one thread: no speed-up, 3 hand-offs at 0.25 s


def test_bench_verdict_names_the_bound_and_how_far_outside():
    from bench.fidelity_report import bound_lines  # noqa: PLC0415

    row = {"model": "m", "inter_op_threads": 0, "pool_threads": 2, "sim_s": 3.75, "ops_run": 3, "handoff_s": 0.5}
    (inside,) = bound_lines([dict(row, session_s=5.0)])
    assert "[1.875, 5.25] s: **met**" in inside
    (outside,) = bound_lines([dict(row, session_s=5.5)])
    # (5.5 - 5.25) / 5.25 = +4.8% beyond the upper end
    assert "**NOT met** (+4.8% beyond the upper end)" in outside
    assert bound_lines([dict(row, inter_op_threads=1, session_s=5.0)]) == []  # 1-thread rows have no bound
    # The rounds 0.25 / 0.5 / 1.0 s: the upper end takes the largest, 3.75 + 3 x 1.0 = 6.75 s.
    (spread,) = bound_lines([dict(row, session_s=5.5, handoff_rounds_s=[0.25, 0.5, 1.0])])
    assert "[1.875, 6.75] s: **met**" in spread


@pytest.mark.parametrize("threads", [0, -1])
def test_threads_below_one_count_as_one(threads):
    assert pool_bounds(3.75, 3, 0.0, threads) == (3.75, 3.75)
