"""Simulator on hand-built graphs whose step times are worked out by hand.

Cluster of the tests: two GPUs, links of 100 bytes/s and 0.5 s latency, so a
transfer of b bytes takes 0.5 + b / 100 seconds.
"""

import json

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core import measurement as base
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure import trace
from placer.measure.simulator import Simulator, simulate


def two_gpus(memory=10_000, speed1=1.0):
    return cl.make(
        "t",
        [cl.Device("/device:GPU:0", "GPU", memory), cl.Device("/device:GPU:1", "GPU", memory, speed1)],
        bandwidth=100.0,
        latency=0.5,
    )


def graph(names, edges, cost, **kw):
    return OpGraph.create(
        "g",
        names,
        ["T"] * len(names),
        edges,
        device_types=("GPU",),
        compute_cost=np.array(cost, dtype=float).reshape(-1, 1),
        **kw,
    )


CHAIN = graph(["a", "b", "c"], [("a", "b", 100), ("b", "c", 50)], [1, 2, 3], output_bytes=[100, 50, 10])


def test_chain_on_one_device():
    r = simulate(CHAIN, two_gpus(), np.array([0, 0, 0]))
    assert r.ok and r.step_time == 6.0
    np.testing.assert_array_equal(r.busy_time, [6.0, 0.0])
    assert r.bytes_moved == 0
    # a's 100 bytes live until b finished (t=3); b's 50 meanwhile; c's 10 after.
    np.testing.assert_array_equal(r.peak_memory, [150, 0])


def test_chain_split_pays_latency_plus_bytes_over_bandwidth():
    # a 0-1 on GPU0; 100 bytes: 0.5 + 1.0 -> 2.5; b 2.5-4.5; c 4.5-7.5 on GPU1.
    r = simulate(CHAIN, two_gpus(), np.array([0, 1, 1]))
    assert r.step_time == pytest.approx(7.5)
    assert r.bytes_moved == 100
    # GPU1 holds the received 100 bytes from t=1 and b's 50 from t=2.5.
    np.testing.assert_array_equal(r.peak_memory, [100, 150])


def test_speed_divides_op_time():
    r = simulate(CHAIN, two_gpus(speed1=2.0), np.array([1, 1, 1]))
    assert r.step_time == pytest.approx(3.0)


def test_two_parallel_branches_on_two_devices():
    g = graph(["r", "x", "y", "z"], [("r", "x", 50), ("r", "y", 50), ("x", "z", 50), ("y", "z", 50)], [1, 4, 4, 1])
    assert simulate(g, two_gpus(), np.array([0, 0, 0, 0])).step_time == 10.0
    # r 0-1; x 1-5 on GPU0; r->GPU1 1-2, y 2-6; y->GPU0 6-7; z 7-8.
    r = simulate(g, two_gpus(), np.array([0, 0, 1, 0]))
    assert r.step_time == pytest.approx(8.0)
    np.testing.assert_allclose(r.busy_time, [6.0, 4.0])


def test_transfers_on_one_link_are_serialised():
    g = graph(["a", "b", "c"], [("a", "c", 100), ("b", "c", 100)], [1, 1, 1])
    # a 0-1, b 1-2 on GPU0; a's transfer 1-2.5, b's waits for the link: 2.5-4.0; c 4-5.
    r = simulate(g, two_gpus(), np.array([0, 0, 1]), trace=True)
    assert r.step_time == pytest.approx(5.0)
    assert sorted((t[2], t[3]) for t in r.transfers) == [(1.0, 2.5), (2.5, 4.0)]


def test_same_tensor_sent_once_per_device():
    g = graph(["a", "b", "c"], [("a", "b", 100), ("a", "c", 100)], [1, 1, 1])
    r = simulate(g, two_gpus(), np.array([0, 1, 1]))
    assert r.bytes_moved == 100
    assert r.step_time == pytest.approx(1 + 1.5 + 2)


def test_control_edge_orders_without_cost():
    g = graph(["a", "b"], [("a", "b")], [1, 1], edge_control=[True])
    r = simulate(g, two_gpus(), np.array([0, 1]))
    assert r.step_time == 2.0 and r.bytes_moved == 0


def test_ready_ops_run_by_priority():
    # b and c both ready at t=1 on GPU0; b (lower index) first, so d (after c) ends at 1+1+5+1.
    g = graph(["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("c", "d")], [1, 1, 5, 1])
    r = simulate(g, two_gpus(), np.array([0, 0, 0, 0]), trace=True)
    np.testing.assert_allclose(r.op_start, [0, 1, 2, 7])


def test_out_of_memory_names_the_device():
    g = graph(["v", "a"], [("v", "a", 10)], [1, 1], persistent_bytes=[900, 0], output_bytes=[10, 200])
    ok = simulate(g, two_gpus(memory=1000), np.array([0, 1]))
    assert ok.ok
    r = simulate(g, two_gpus(memory=1000), np.array([0, 0]))
    assert r.failure == base.OOM and "/device:GPU:0" in r.message
    assert r.peak_memory[0] == 900 + 10 + 200
    assert r.measurement().step_time == float("inf")


def test_unsupported_op_fails_and_names_it():
    g = OpGraph.create(
        "g",
        ["a", "b"],
        ["T", "T"],
        [("a", "b", 1)],
        device_types=("CPU", "GPU"),
        compute_cost=np.array([[1.0, 1.0], [1.0, np.nan]]),
    )
    c = cl.make("c", [cl.Device("/device:CPU:0", "CPU", 100), cl.Device("/device:GPU:0", "GPU", 100)])
    assert simulate(g, c, np.array([1, 0])).ok
    r = simulate(g, c, np.array([0, 1]))
    assert r.failure == base.UNSUPPORTED and "'b'" in r.message


def test_colocation_split_is_an_error():
    g = graph(["v", "u", "a"], [("v", "a", 1), ("u", "a", 1)], [1, 1, 1], colocation=["v", "v", ""])
    assert simulate(g, two_gpus(), np.array([0, 0, 1])).ok
    r = simulate(g, two_gpus(), np.array([0, 1, 0]))
    assert r.failure == base.ERROR and r.message.startswith("colocation")


def test_groups_run_back_to_back():
    g = graph(
        ["a", "b", "c", "d"],
        [("a", "b", 100), ("a", "c", 100), ("b", "d", 0), ("c", "d", 0)],
        [1, 1, 2, 1],
        output_bytes=[100, 0, 0, 0],
    )
    sim = Simulator(g, two_gpus(), op_group=[0, 0, 1, 2])
    # Groups {a,b} GPU0 0-2; {c} GPU1 needs a's tensor, sent when the group ends: 2-3.5, c 3.5-5.5;
    # d on GPU0 needs c (0 bytes, one latency): 5.5-6.0, d 6-7.
    m = sim.measure_devices(np.array([[0, 1, 0]]))[0]
    assert m.step_time == pytest.approx(7.0)
    # At op level a's tensor leaves at t=1, one second earlier.
    assert sim.measure_devices(np.array([[0, 0, 1, 0]]), op_group=np.arange(4))[0].step_time == pytest.approx(6.0)
    # A placement splitting a group is simulated op by op.
    assert sim.measure_devices(np.array([[0, 1, 1, 0]]))[0].ok


def _brute_force_step(names, edges, cost, dev, speed, bandwidth, latency):
    """The scheduling rule of placer.measure.schedule, step by step in O(n^2) per step:
    start the op with the earliest possible start (lowest index on ties); its output
    then goes once to each other device that reads it, biggest edge's bytes, over a
    link that carries one transfer at a time."""
    n, nd = len(names), len(speed)
    idx = {x: i for i, x in enumerate(names)}
    preds = [[] for _ in range(n)]
    out = [dict() for _ in range(n)]
    for a, b, nbytes in edges:
        preds[idx[b]].append(idx[a])
        d = dev[idx[b]]
        if d != dev[idx[a]]:
            out[idx[a]][d] = max(out[idx[a]].get(d, 0), nbytes)
    free, link = [0.0] * nd, [[0.0] * nd for _ in range(nd)]
    finish, arrive = [None] * n, [dict() for _ in range(n)]
    for _ in range(n):
        best = None
        for u in range(n):
            if finish[u] is None and all(finish[p] is not None for p in preds[u]):
                t = max([free[dev[u]]] + [arrive[p].get(dev[u], finish[p]) for p in preds[u]])
                best = min(best, (t, u)) if best else (t, u)
        t, u = best
        finish[u] = free[dev[u]] = t + cost[u] / speed[dev[u]]
        for b in sorted(out[u]):
            ls = max(link[dev[u]][b], finish[u])
            arrive[u][b] = link[dev[u]][b] = ls + (latency + out[u][b] / bandwidth)
    return max(finish)


@pytest.mark.parametrize("seed", range(4))
def test_schedule_matches_brute_force_rule_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = 40
    names = [f"o{i}" for i in range(n)]
    edges = [
        (names[j], names[i], int(rng.integers(0, 500)))
        for i in range(1, n)
        for j in set(rng.integers(0, i, size=3).tolist())
    ]
    cost = rng.choice([0.5, 1.0, 1.5], n) if seed % 2 else rng.uniform(0.1, 2, n)  # ties, then none
    g = graph(names, edges, cost, output_bytes=rng.integers(0, 500, n))
    speed = [1.0, 2.0, 1.0]
    c = cl.make("c", [cl.Device(f"/device:GPU:{i}", "GPU", 10**6, s) for i, s in enumerate(speed)], 300.0, 0.1)
    batch = rng.integers(0, 3, size=(10, n))
    for dev, m in zip(batch, Simulator(g, c).measure_devices(batch), strict=True):
        expect = _brute_force_step(names, edges, cost, dev.tolist(), speed, 300.0, 0.1)
        assert m.step_time == pytest.approx(expect, rel=1e-12)


def test_measure_placements_maps_device_names():
    c = two_gpus()
    p = Placement.from_ops(CHAIN, [0, 0, 0], ["/device:GPU:1", "/device:GPU:0"])
    m = Simulator(CHAIN, c).measure([p])[0]
    np.testing.assert_array_equal(m.busy_time, [0.0, 6.0])


def test_chrome_trace_rows_per_device_and_link(tmp_path):
    r = simulate(CHAIN, two_gpus(), np.array([0, 1, 0]), trace=True)
    t = trace.to_chrome_trace(r, CHAIN, two_gpus())
    rows = {e["tid"]: e["args"]["name"] for e in t["traceEvents"] if e["ph"] == "M"}
    assert sorted(rows.values()) == [
        "/device:GPU:0",
        "/device:GPU:0 -> /device:GPU:1",
        "/device:GPU:1",
        "/device:GPU:1 -> /device:GPU:0",
    ]
    ops = [e for e in t["traceEvents"] if e["ph"] == "X" and "op" in e["args"]]
    assert {e["args"]["op"]: (e["tid"], e["ts"], e["dur"]) for e in ops}["b"] == (1, 2.5e6, 2e6)
    path = tmp_path / "t.json"
    trace.write_chrome_trace(str(path), r, CHAIN, two_gpus())
    assert len(json.loads(path.read_text())["traceEvents"]) == len(t["traceEvents"])


def test_group_cycle_through_colocation_is_split():
    # Groups {v, u} (a variable's read and update) and {a, g} (forward and gradient) form a cycle.
    g = graph(["v", "a", "g", "u"], [("v", "a", 100), ("a", "g", 0), ("g", "u", 100), ("v", "u", 0)], [1, 1, 1, 1])
    sim = Simulator(g, two_gpus(), op_group=[0, 1, 1, 0])
    assert sim._units_for(sim.op_group).num_units == 3  # {v}, {a, g}, {u}
    # v 0-1 on GPU0; to GPU1 1-2.5; a, g 2.5-4.5; back to GPU0 4.5-6; u 6-7.
    assert sim.measure_devices(np.array([[0, 1]]))[0].step_time == pytest.approx(7.0)
