"""The simulator's compiled kernel against its plain-Python reference, and on a hand-worked case.

`Simulator.run` simulates batches in one compiled call (placer.measure.fast);
tests/measure/reference_sim.py follows the model's rules step by step. Both
must report the same step time, busy time, peak memory, bytes moved, failure
and schedule, to the bit, at op and group level, with and without a serial
executor.
"""

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core import measurement as base
from placer.core.generated import generate
from placer.core.op_graph import OpGraph
from placer.measure.simulator import Simulator
from tests.measure import reference_sim

FAILURES = {None: None, base.UNSUPPORTED: "unsupported", base.ERROR: "colocation", base.OOM: "oom"}


def cpu_and_two_gpus(memory=10_000, serial=False, dispatch=0.0):
    return cl.make(
        "t",
        [
            cl.Device("/device:CPU:0", "CPU", 10 * memory, dispatch=dispatch, transfer_cost=dispatch),
            cl.Device("/device:GPU:0", "GPU", memory, dispatch=dispatch),
            cl.Device("/device:GPU:1", "GPU", memory, 2.0, dispatch=2 * dispatch),
        ],
        bandwidth=100.0,
        latency=0.5,
        serial_executor=serial,
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
    devices = np.array([1, 2, 2, 1])
    r, ref = (
        Simulator(g, cpu_and_two_gpus()).run(devices[None])[0],
        reference_sim.simulate(g, cpu_and_two_gpus(), devices),
    )
    assert r.ok and ref.failure is None
    assert r.step_time == ref.finish == pytest.approx(5.5)
    for x in (r.busy_time, ref.busy):
        np.testing.assert_array_equal(x, [0.0, 3.0, 2.0])
    for x in (r.peak_memory, ref.peak):
        np.testing.assert_array_equal(x, [0, 347, 220])
    assert r.bytes_moved == ref.moved == 200


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


def _assert_same(r, ref):
    """A kernel SimResult equals the reference's figures, bit for bit (the step time is inf on failure)."""
    assert FAILURES[r.failure] == ref.failure
    assert r.step_time == (ref.finish if ref.failure is None else np.inf)
    np.testing.assert_array_equal(r.busy_time, ref.busy)
    np.testing.assert_array_equal(r.peak_memory, ref.peak)
    assert r.bytes_moved == ref.moved


@pytest.mark.parametrize("serial", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_random_op_level_placements_match_the_reference(seed, serial):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, int(rng.integers(6, 50)))
    cluster = cpu_and_two_gpus(memory=int(rng.integers(800, 4000)), serial=serial, dispatch=0.01 * seed)
    batch = rng.integers(0, 3, (16, g.num_ops))
    batch[:4] = 0  # whole graph on the CPU: runs
    ops_gpu = ~np.isnan(g.cost_for("GPU"))
    batch[4:8] = np.where(ops_gpu, rng.integers(1, 3, (4, 1)), 0)  # one GPU, the rest on the CPU
    runs = Simulator(g, cluster).run(batch)
    refs = [reference_sim.simulate(g, cluster, row) for row in batch]
    for r, ref in zip(runs, refs, strict=True):
        _assert_same(r, ref)
    kinds = {ref.failure for ref in refs}
    assert None in kinds and len(kinds) > 1  # both runs and failures were compared


@pytest.mark.parametrize("family", ["layered", "chain", "fanin"])
def test_generated_graphs_op_and_group_level_match_the_reference(family):
    g = generate(family, 80, seed=3)
    rng = np.random.default_rng(1)
    cluster = cpu_and_two_gpus(memory=2**40, serial=family == "chain", dispatch=1e-3)
    sim = Simulator(g, cluster)
    batch = rng.integers(0, 3, (6, g.num_ops))
    for r, row in zip(sim.run(batch), batch, strict=True):
        _assert_same(r, reference_sim.simulate(g, cluster, row))
    groups = rng.integers(0, 9, g.num_ops)  # random groups: cycles between them are split
    per_group = rng.integers(0, 3, (6, 9))
    refs = [reference_sim.simulate(g, cluster, row, op_group=groups) for row in per_group]
    for r, ref in zip(sim.run(per_group, op_group=groups), refs, strict=True):
        _assert_same(r, ref)
    assert all(ref.failure is None for ref in refs)


@pytest.mark.parametrize("serial", [False, True])
def test_traced_schedule_is_the_reference_schedule(serial):
    rng = np.random.default_rng(4)
    g = generate("layered", 60, seed=1)
    cluster = cpu_and_two_gpus(memory=2**40, serial=serial, dispatch=1e-3)
    groups = rng.integers(0, 7, g.num_ops)
    for devices, op_group in ((rng.integers(0, 3, g.num_ops), None), (rng.integers(0, 3, 7), groups)):
        r = Simulator(g, cluster).simulate(devices, op_group=op_group, trace=True)
        ref = reference_sim.simulate(g, cluster, devices, op_group=op_group)
        units = Simulator(g, cluster)._units_for(op_group)
        first = np.full(units.num_units, g.num_ops)
        np.minimum.at(first, units.op_unit, np.arange(g.num_ops))
        np.testing.assert_array_equal(r.op_start[first], ref.start)  # a unit starts with its first op
        assert r.step_time == ref.finish == pytest.approx(r.op_finish.max(), rel=1e-12)
        assert len(r.transfers) == len(ref.transfers) > 0
        index = g.index()
        for src, dst, t0, t1, nbytes, producer in r.transfers:
            assert src == r.op_device[index[producer]]
            assert (t0, t1, nbytes) == ref.transfers[(units.op_unit[index[producer]], dst)]


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
