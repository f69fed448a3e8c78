"""The simulator's compiled path against its numpy path, and on a hand-worked case.

`Simulator.run` simulates batches in one compiled call (placer.measure.fast);
`run(..., compiled=False)` is the numpy path traces use. Both must report the
same step time, busy time, peak memory, bytes moved and failure, to the bit.
"""

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core import measurement as base
from placer.core.generated import generate
from placer.core.op_graph import OpGraph
from placer.measure.simulator import Simulator


def cpu_and_two_gpus(memory=10_000):
    return cl.make(
        "t",
        [
            cl.Device("/device:CPU:0", "CPU", 10 * memory),
            cl.Device("/device:GPU:0", "GPU", memory),
            cl.Device("/device:GPU:1", "GPU", memory, 2.0),
        ],
        bandwidth=100.0,
        latency=0.5,
    )


def test_hand_worked_transfer_fan_out():
    # a feeds b and c on GPU1 (one tensor sent, the larger edge: 200 bytes) and d on GPU0.
    # GPU0 runs a 0-1 then d 1-3; the transfer a->GPU1 takes 0.5 + 200/100 = 2.5 s: 1-3.5;
    # GPU1 (speed 2) runs b 3.5-4.5 and c 4.5-5.5. Step 5.5 s.
    # Memory: GPU0 holds a's 300 bytes 0-3.5 (until the transfer left) plus d's 40 from 1:
    # 340, plus a's 7 bytes of variables: 347. GPU1 receives 200 at 1 (freed when c, the last
    # reader, finished); b's 10, read by nobody, live 3.5-4.5, and c's 20 from 4.5, when b's
    # were freed first: peak 200 + 20 = 220.
    g = OpGraph.create(
        "g",
        ["a", "b", "c", "d"],
        ["T"] * 4,
        [("a", "b", 200), ("a", "c", 150), ("a", "d", 300)],
        device_types=("GPU", "CPU"),
        compute_cost=np.array([[1.0, 5.0], [2.0, 5.0], [2.0, 5.0], [2.0, 5.0]]),
        output_bytes=[300, 10, 20, 40],
        persistent_bytes=[7, 0, 0, 0],
    )
    sim = Simulator(g, cpu_and_two_gpus())
    devices = np.array([[1, 2, 2, 1]])
    for r in (sim.run(devices)[0], sim.run(devices, compiled=False)[0]):
        assert r.ok
        assert r.step_time == pytest.approx(5.5)
        np.testing.assert_allclose(r.busy_time, [0.0, 3.0, 2.0])
        np.testing.assert_array_equal(r.peak_memory, [0, 347, 220])
        assert r.bytes_moved == 200


def _random_graph(rng, n):
    """A DAG of n ops with control edges, CPU-only ops, variables and colocation keys."""
    names = [f"op{i}" for i in range(n)]
    edges, control = [], []
    for v in range(1, n):
        for u in rng.choice(v, size=min(v, int(rng.integers(1, 4))), replace=False):
            edges.append((names[u], names[v], int(rng.integers(0, 400))))
            control.append(bool(rng.random() < 0.15))
    cost = rng.uniform(0.1, 2.0, (n, 2))
    cost[rng.random(n) < 0.1, 0] = np.nan  # no GPU kernel
    colocation = [f"k{int(rng.integers(0, 3))}" if rng.random() < 0.2 else "" for _ in range(n)]
    return OpGraph.create(
        "rand",
        names,
        ["T"] * n,
        edges,
        edge_control=control,
        device_types=("GPU", "CPU"),
        compute_cost=cost,
        output_bytes=rng.integers(0, 500, n),
        persistent_bytes=rng.integers(0, 300, n) * (rng.random(n) < 0.3),
        colocation=colocation,
    )


def _assert_same(a, b):
    assert a.failure == b.failure and a.message == b.message
    assert a.step_time == b.step_time  # bit for bit, inf for failures
    np.testing.assert_array_equal(a.busy_time, b.busy_time)
    np.testing.assert_array_equal(a.peak_memory, b.peak_memory)
    assert a.bytes_moved == b.bytes_moved


@pytest.mark.parametrize("seed", range(6))
def test_random_op_level_placements_match_numpy_path(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, int(rng.integers(6, 60)))
    sim = Simulator(g, cpu_and_two_gpus(memory=int(rng.integers(800, 4000))))
    batch = rng.integers(0, 3, (40, g.num_ops))
    batch[:10] = 0  # whole graph on the CPU: runs
    ops_gpu = ~np.isnan(g.cost_for("GPU"))
    batch[10:20] = np.where(ops_gpu, rng.integers(1, 3, (10, 1)), 0)  # one GPU, the rest on the CPU
    fast, ref = sim.run(batch), sim.run(batch, compiled=False)
    for a, b in zip(fast, ref, strict=True):
        _assert_same(a, b)
    kinds = {r.failure for r in ref}
    assert None in kinds and len(kinds) > 1  # both runs and failures were compared


@pytest.mark.parametrize("family", ["layered", "chain", "fanin"])
def test_generated_graphs_op_and_group_level_match_numpy_path(family):
    g = generate(family, 120, seed=3)
    rng = np.random.default_rng(1)
    cluster = cpu_and_two_gpus(memory=2**40)
    sim = Simulator(g, cluster)
    batch = rng.integers(0, 3, (24, g.num_ops))
    for a, b in zip(sim.run(batch), sim.run(batch, compiled=False), strict=True):
        _assert_same(a, b)
    groups = rng.integers(0, 9, g.num_ops)  # random groups: cycles between them are split
    per_group = rng.integers(0, 3, (24, 9))
    fast = sim.run(per_group, op_group=groups)
    ref = sim.run(per_group, op_group=groups, compiled=False)
    for a, b in zip(fast, ref, strict=True):
        _assert_same(a, b)
    assert all(r.ok for r in ref)


def test_measure_devices_gives_the_measurements_of_placements():
    rng = np.random.default_rng(7)
    g = _random_graph(rng, 30)
    cluster = cpu_and_two_gpus()
    sim = Simulator(g, cluster)
    batch = rng.integers(0, 3, (8, g.num_ops))
    from placer.core.placement import Placement  # noqa: PLC0415

    by_placement = sim.measure([Placement.from_ops(g, row, cluster.device_names) for row in batch])
    by_array = sim.measure_devices(batch)
    for a, b in zip(by_array, by_placement, strict=True):
        assert isinstance(a, base.Measurement)
        assert a.failure == b.failure and a.step_time == b.step_time
        np.testing.assert_array_equal(a.peak_memory, b.peak_memory)
