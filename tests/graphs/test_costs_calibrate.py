"""The tracer's floor comes off profiled CPU costs, and the machine's overheads are kept with them."""

import numpy as np
import pytest

from graphs import costs, costs_calibrate
from placer.core.op_graph import CALIBRATION_KEYS


def test_floor_comes_off_each_median_and_clamps_at_zero():
    index = {"a": 0, "b": 1, "c": 2}
    samples = {
        "a": [3e-6, 1e-6, 2e-6],  # median 2 us - floor 0.5 us = 1.5 us
        "b": [0.25e-6, 0.4e-6],  # median 0.325 us, under the floor: 0
        "x": [9e-6],  # not an op of the graph: ignored
    }  # c was not traced (not in the step): 0
    out = costs.medians_less_floor(samples, index, 0.5e-6)
    np.testing.assert_allclose(out, [1.5e-6, 0.0, 0.0], rtol=0, atol=1e-18)


def test_ladder_sends_one_tensor_per_rung_from_cpu0_to_cpu1():
    for rungs, crossing in ((True, 3), (False, 0)):
        g, _ = costs_calibrate.ladder_graph(3, rungs)
        ops = {op.name: op for op in g.get_operations()}
        assert {ops[f"a{i}"].device[-1] for i in range(4)} == {"0"} and {ops[f"b{i}"].device[-1] for i in range(4)} == {
            "1"
        }
        edges = [(t.op, op) for op in g.get_operations() for t in op.inputs]
        assert sum(src.device != dst.device for src, dst in edges) == crossing


def test_chain_has_its_ops_on_alternating_devices():
    g, _ = costs_calibrate.chain_graph(4, 2, leaves=True)
    adds = [op for op in g.get_operations() if op.type == "AddV2"]
    assert [op.device[-1] for op in adds] == ["0", "1", "0", "1"]
    assert sum(op.type == "Neg" for op in g.get_operations()) == 4


@pytest.fixture(scope="module")
def profiled():
    from tests.graphs.test_costs import _model  # noqa: PLC0415

    mg, graph = _model()
    return graph, costs.profiled_costs(mg, graph, steps=2, warmup=1, device_types=("CPU",))


def test_profiled_costs_carry_the_calibration_in_seconds(profiled):
    _, g = profiled
    assert set(g.calibration) == set(CALIBRATION_KEYS)
    # Sub-microsecond to microseconds on any CPU TF runs on; a unit slip (us or ns) falls outside.
    assert 1e-9 < g.calibration["cpu_trace_floor"] < 1e-4
    assert 1e-9 < g.calibration["cpu_dispatch"] < 1e-4
    assert 0.0 <= g.calibration["cpu_transfer_cost"] < 1e-3


def test_profiled_kernel_windows_keep_real_work(profiled):
    graph, g = profiled
    c = g.cost_for("CPU")
    # h = x[256, 512] @ w[512, 1024]: 2 x 256 x 512 x 1024 = 268 Mflop, far above any trace floor.
    assert c[graph.index()["h"]] > 10 * g.calibration["cpu_trace_floor"]
    assert (c >= 0).all()


def test_profiled_costs_mark_the_ops_a_step_runs(profiled):
    graph, g = profiled
    i = graph.index()
    # "s" (as_string of h) and the variable's initialiser are outside the train op's fan-in.
    assert not g.in_step[i["s"]] and not g.in_step[i["w/Assign"]]
    assert g.in_step[i["h"]] and g.in_step[i["gradients/h_grad/MatMul_1"]]
