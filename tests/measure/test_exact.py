"""The exact placer on hand-built graphs whose optimum is worked out by hand.

Each test asserts the optimum, that the solver proves it (bound = optimum),
and that the simulator's step time of the returned placement equals the
model's makespan.
"""

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core.op_graph import OpGraph
from placer.measure import exact
from placer.measure.simulator import simulate

GIB = 2**30
QUICK = {"time_limit": 20.0, "workers": 1, "seed": 0}


def gpus(n, memory=16 * GIB, bandwidth=1e9):
    return cl.make("g", [cl.Device(f"/device:GPU:{i}", "GPU", memory) for i in range(n)], bandwidth=bandwidth)


def cpu_gpu(bandwidth=1e9):
    devs = [cl.Device("/device:CPU:0", "CPU", 16 * GIB), cl.Device("/device:GPU:0", "GPU", 16 * GIB)]
    return cl.make("cg", devs, bandwidth=bandwidth)


def check_optimal(r, optimum):
    assert r.status == "optimal"
    assert r.step_time == pytest.approx(optimum, rel=1e-6)
    assert r.makespan == pytest.approx(optimum, rel=1e-6)
    assert r.proven_bound == pytest.approx(optimum, rel=1e-6)


def test_two_chains_on_two_devices_are_split():
    # a1 -> a2 and b1 -> b2, 1 s each on a GPU, 1 GB edges (1 s over a 1 GB/s link). One chain per
    # GPU: 2 s, the critical path; both on one GPU: 4 s; a chain split across the GPUs: 3 s.
    g = OpGraph.create(
        "chains", ["a1", "a2", "b1", "b2"], ["T"] * 4, [("a1", "a2", 10**9), ("b1", "b2", 10**9)],
        device_types=("GPU",), compute_cost=np.ones((4, 1)),
    )  # fmt: skip
    c = gpus(2)
    r = exact.solve(g, c, **QUICK)
    check_optimal(r, 2.0)
    d = r.devices.tolist()
    assert d[0] == d[1] and d[2] == d[3] and d[0] != d[2]
    assert simulate(g, c, r.devices).step_time == pytest.approx(2.0)


def test_link_contention_decides_the_fork_join():
    # s -> x, s -> y -> j (x -> j too); s, x, y are CPU-only (0.5, 1, 1 s), j takes 3.5 s on the CPU
    # and 1 s on the GPU; x -> j and y -> j carry 2 GB (2 s over the CPU -> GPU link).
    # j on the CPU: 0.5 + 1 + 1 + 3.5 = 6 s. j on the GPU: x's tensor crosses 1.5-3.5, y's waits for
    # the link, 3.5-5.5, then j 5.5-6.5: 6.5 s. A model whose links carry tensors side by side would
    # send y's 2.5-4.5 and finish at 5.5 s, choosing the GPU; with the link's queue the CPU wins.
    g = OpGraph.create(
        "forkjoin", ["s", "x", "y", "j"], ["T"] * 4,
        [("s", "x", 0), ("s", "y", 0), ("x", "j", 2 * 10**9), ("y", "j", 2 * 10**9)],
        device_types=("CPU", "GPU"),
        compute_cost=np.array([[0.5, np.nan], [1.0, np.nan], [1.0, np.nan], [3.5, 1.0]]),
    )  # fmt: skip
    c = cpu_gpu()
    r = exact.solve(g, c, **QUICK)
    check_optimal(r, 6.0)
    assert r.devices.tolist() == [0, 0, 0, 0]
    assert simulate(g, c, np.array([0, 0, 0, 1])).step_time == pytest.approx(6.5)


def test_the_optimum_runs_a_cpu_only_op_on_the_cpu():
    # a -> c -> b: a and b 1 s on the GPU (5 s on the CPU), c CPU-only (2 s), 100 MB edges (0.1 s at
    # 1 GB/s). Best: a on the GPU, c on the CPU, b on the GPU: 1 + 0.1 + 2 + 0.1 + 1 = 4.2 s (all on
    # the CPU: 12 s); the critical path is 4 s, so only the solve proves 4.2 s.
    g = OpGraph.create(
        "cpuonly", ["a", "c", "b"], ["T"] * 3, [("a", "c", 10**8), ("c", "b", 10**8)],
        device_types=("CPU", "GPU"), compute_cost=np.array([[5.0, 1.0], [2.0, np.nan], [5.0, 1.0]]),
    )  # fmt: skip
    c = cpu_gpu()
    r = exact.solve(g, c, **QUICK)
    check_optimal(r, 4.2)
    assert r.devices.tolist() == [1, 0, 1]
    assert r.analytic_bound == pytest.approx(4.0)


def test_memory_forces_a_split():
    # a -> b, 1 s each on a GPU, a 1 GB edge (1 s), 6 GiB of variables each, GPUs of 8 GiB. Together
    # on one GPU (2 s) they need 12 GiB; split, the tensor crosses: 1 + 1 + 1 = 3 s.
    g = OpGraph.create(
        "memory", ["a", "b"], ["T"] * 2, [("a", "b", 10**9)], device_types=("GPU",),
        compute_cost=np.ones((2, 1)), output_bytes=[10**9, 0], persistent_bytes=[6 * GIB, 6 * GIB],
    )  # fmt: skip
    c = gpus(2, memory=8 * GIB)
    r = exact.solve(g, c, **QUICK)
    check_optimal(r, 3.0)
    assert r.devices[0] != r.devices[1]
    assert not simulate(g, c, np.array([0, 0])).ok  # out of memory together
