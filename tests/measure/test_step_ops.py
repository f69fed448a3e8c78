"""Ops a training step never runs pay no dispatch, at op level and at group level alike.

a -> b -> c run each step (1 s each on the reference CPU); `init` (an initialiser, cost 0) does not. The
dispatch is 0.25 s, so every sum below is exact in binary floating point.
"""

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core import io as graph_io
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure.simulator import Simulator, simulate


def graph(in_step=None):
    g = OpGraph.create(
        "g", ["init", "a", "b", "c"], ["Assign", "T", "T", "T"], [("a", "b", 100), ("b", "c", 100)],
        device_types=("CPU",), compute_cost=np.array([[0.0], [1.0], [1.0], [1.0]]),
    )  # fmt: skip
    return g.with_step_ops(in_step)


STEP = np.array([False, True, True, True])  # in the graph's order: init, a, b, c


def cpus():
    devices = [cl.Device(f"/device:CPU:{i}", "CPU", 10**9, dispatch=0.25) for i in (0, 1)]
    return cl.make("t", devices, bandwidth=100.0)


def test_an_op_outside_the_step_pays_no_dispatch():
    assert list(graph(STEP).names) == ["init", "a", "b", "c"]
    # a, b, c: 3 x (1 + 0.25) = 3.75 s; init costs 0 and, outside the step, no 0.25 s dispatch.
    assert simulate(graph(STEP), cpus(), np.zeros(4, np.int64)).step_time == 3.75
    # Unknown (every op runs): init pays its dispatch too, 4.0 s.
    assert simulate(graph(), cpus(), np.zeros(4, np.int64)).step_time == 4.0


def test_group_level_agrees_and_the_trace_starts_ops_after_step_dispatches_only():
    g = graph(STEP)
    groups = np.array([0, 0, 0, 1])  # init, a, b in group 0; c alone
    sim = Simulator(g, cpus(), op_group=groups)
    grouped = Placement.from_groups(g, groups, np.array([0, 0]), sim.cluster.device_names)
    # Group 0 pays 2 dispatches (a, b), not 3: 2 x 1.25 = 2.5 s; c 2.5-3.75 s.
    assert sim.measure([grouped])[0].step_time == 3.75
    # The group's trace: init takes 0 s at 0 and delays nothing; a 0-1.25; b 1.25-2.5; c 2.5-3.75.
    for r in (sim.simulate(np.array([0, 0]), trace=True), simulate(g, cpus(), np.zeros(4, np.int64), trace=True)):
        np.testing.assert_array_equal(r.op_start, [0.0, 0.0, 1.25, 2.5])
        np.testing.assert_array_equal(r.op_finish, [0.0, 1.25, 2.5, 3.75])


def test_ops_outside_the_step_round_trip_through_a_graph_file(tmp_path):
    path = str(tmp_path / "g.graph.json")
    graph_io.save(graph(STEP), path)
    np.testing.assert_array_equal(graph_io.load(path).in_step, STEP)
    graph_io.save(graph(), path)
    assert graph_io.load(path).in_step is None  # every op runs: nothing written, nothing read


def test_a_step_sends_nothing_to_an_op_it_does_not_run():
    """`check` (outside the step) reads a's 1000-byte output on the other CPU: at 100 B/s that transfer would
    take 10 s, so charged it ends the step at 1.25 + 10 + 0.25 = 11.5 s; the step never sends it: 3.75 s."""
    g = OpGraph.create(
        "g", ["a", "b", "c", "check"], ["T", "T", "T", "VarIsInitializedOp"],
        [("a", "b", 100), ("b", "c", 100), ("a", "check", 1000)],
        device_types=("CPU",), compute_cost=np.array([[1.0], [1.0], [1.0], [0.0]]),
    )  # fmt: skip
    devices = np.array([0, 0, 0, 1])
    assert simulate(g, cpus(), devices).step_time == 11.5
    step = g.with_step_ops(np.array([True, True, True, False]))
    assert simulate(step, cpus(), devices).step_time == 3.75
    sim = Simulator(step, cpus(), op_group=np.array([0, 0, 1, 2]))
    assert sim.measure([Placement.from_groups(step, sim.op_group, np.array([0, 0, 1]), sim.cluster.device_names)])[
        0
    ].step_time == pytest.approx(3.75)


def test_an_op_outside_the_step_holds_no_memory():
    """`init` writes 1 GB (an initialiser's random tensor of a variable's size): charged, it would be the
    device's peak; a step never makes it, so the peak is a's and b's 100-byte outputs alone."""
    g = OpGraph.create(
        "g", ["init", "a", "b"], ["RandomUniform", "T", "T"], [("a", "b", 100)], output_bytes=[10**9, 100, 100],
        device_types=("CPU",), compute_cost=np.array([[0.0], [1.0], [1.0]]),
    )  # fmt: skip
    on_one = np.zeros(3, np.int64)
    assert simulate(g, cpus(), on_one).peak_memory[0] >= 10**9
    assert simulate(g.with_step_ops(np.array([False, True, True])), cpus(), on_one).peak_memory[0] <= 200
