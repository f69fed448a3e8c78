"""Lower bound on hand-built graphs."""

import numpy as np
import pytest
from scipy.optimize import linprog

from placer.core import cluster as cl
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.measure import bounds
from placer.measure.simulator import simulate


def cpu_gpus(gpu_speeds):
    devs = [cl.Device("/device:CPU:0", "CPU", 10**9)]
    devs += [cl.Device(f"/device:GPU:{i}", "GPU", 10**9, s) for i, s in enumerate(gpu_speeds)]
    return cl.make("c", devs)


def test_critical_path_dominates():
    # a -> b, a -> c; fastest device times 2, 3, 3 (GPU). Path a-b = 5; work 8 / 3 devices.
    g = OpGraph.create(
        "g",
        ["a", "b", "c"],
        ["T"] * 3,
        [("a", "b"), ("a", "c")],
        device_types=("CPU", "GPU"),
        compute_cost=np.array([[4.0, 2.0], [6.0, 3.0], [6.0, 3.0]]),
    )
    c = cpu_gpus([1.0, 1.0])
    assert bounds.lower_bound(g, c) == pytest.approx(5.0)
    assert simulate(g, c, np.array([1, 1, 2])).step_time >= 5.0


def test_work_over_aggregate_speed_dominates():
    # Three independent ops of GPU cost 3 on GPUs of speed 2 and 1 (no CPU kernel):
    # path 1.5, per-device work 4.5 / 2, reference work 9 / (2 + 1) = 3.
    g = OpGraph.create(
        "g", ["a", "b", "c"], ["T"] * 3, [], device_types=("GPU",), compute_cost=np.array([[3.0], [3.0], [3.0]])
    )
    c = cl.make("c", [cl.Device("/device:GPU:0", "GPU", 10**9, 2.0), cl.Device("/device:GPU:1", "GPU", 10**9, 1.0)])
    assert bounds.critical_path(g, bounds.op_min_times(g, c)) == pytest.approx(1.5)
    assert bounds.lower_bound(g, c) == pytest.approx(3.0)
    # Best split: two ops on the fast GPU (3 s), one on the slow one (3 s).
    assert simulate(g, c, np.array([0, 0, 1])).step_time == pytest.approx(3.0)


def test_op_without_kernel_on_cluster_is_input_error():
    g = OpGraph.create("g", ["a"], ["T"], [], device_types=("TPU",), compute_cost=np.array([[1.0]]))
    with pytest.raises(InputError, match="'a'"):
        bounds.lower_bound(g, cpu_gpus([1.0]))


def test_each_op_pays_its_fastest_devices_dispatch():
    # a -> b; kernels CPU 0.8, 1.2 s and GPU 0.4, 0.6 s; dispatch 0.1 s per op on the CPU, 0.4 s on the GPU.
    # Fastest with dispatch: a min(0.9, 0.8) = 0.8, b min(1.3, 1.0) = 1.0: path 1.8 s (kernels alone gave
    # 1.0 s); work (0.8 + 1.0) / 2 devices = 0.9 s. single_gpu simulates 0.8 + 1.0 = 1.8 s: the bound is tight.
    g = OpGraph.create(
        "g", ["a", "b"], ["T"] * 2, [("a", "b")], device_types=("CPU", "GPU"),
        compute_cost=np.array([[0.8, 0.4], [1.2, 0.6]]),
    )  # fmt: skip
    c = cl.make(
        "c",
        [
            cl.Device("/device:CPU:0", "CPU", 10**9, dispatch=0.1),
            cl.Device("/device:GPU:0", "GPU", 10**9, dispatch=0.4),
        ],
    )
    assert bounds.lower_bound(g, c) == pytest.approx(1.8)
    assert simulate(g, c, np.array([1, 1])).step_time == pytest.approx(1.8)


def test_bound_names_the_critical_path_when_it_binds():
    # A chain a -> b -> c of GPU time 1, 2, 3 s (CPU 10x slower) on CPU + 2 GPUs: the path is 6 s;
    # the LP spreads 6 GPU-seconds over two GPUs and the CPU (CPU speed 1/10): 6 / 2.1 = 2.86 s.
    g = OpGraph.create(
        "g", ["a", "b", "c"], ["T"] * 3, [("a", "b"), ("b", "c")], device_types=("CPU", "GPU"),
        compute_cost=np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]]),
    )  # fmt: skip
    b = bounds.bound(g, cpu_gpus([1.0, 1.0]))
    assert b.critical_path == pytest.approx(6.0)
    assert b.load == pytest.approx(6.0 / 2.1)
    assert b.binds == bounds.CRITICAL_PATH and b.value == pytest.approx(6.0)
    assert "critical path binds" in b.describe()


def test_load_binds_on_a_cpu_and_gpu_cluster():
    # Four independent ops of CPU 4 s and GPU 1 s on CPU + one GPU: path 1 s; the old work bound
    # gives 4 x 1 / 2 = 2 s. The LP: GPU takes x ops (x s), the CPU 4 - x (4 (4 - x) s), equal at
    # x = 3.2: 3.2 s. The best 0/1 placement (3 on the GPU, 1 on the CPU) simulates 4 s >= 3.2 s.
    g = OpGraph.create(
        "g", list("abcd"), ["T"] * 4, [], device_types=("CPU", "GPU"), compute_cost=np.array([[4.0, 1.0]] * 4)
    )
    c = cpu_gpus([1.0])
    b = bounds.bound(g, c)
    assert b.critical_path == pytest.approx(1.0)
    assert b.load == pytest.approx(3.2)
    assert b.binds == bounds.LOAD and bounds.lower_bound(g, c) == pytest.approx(3.2)
    assert "load binds" in b.describe()
    assert simulate(g, c, np.array([1, 1, 1, 0])).step_time == pytest.approx(4.0)


def test_cpu_only_ops_load_the_cpu_whatever_the_gpus_do():
    # Two CPU-only ops of 3 s each and two ops of GPU time 1 s (CPU 2 s) on CPU + 2 GPUs, no edges.
    # The CPU carries 6 s whatever happens, so the LP is 6 s (the GPU ops go to the GPUs); the old
    # work bound gave (3 + 3 + 1 + 1) / 3 = 2.67 s and the path 3 s.
    g = OpGraph.create(
        "g", list("abcd"), ["T"] * 4, [], device_types=("CPU", "GPU"),
        compute_cost=np.array([[3.0, np.nan], [3.0, np.nan], [2.0, 1.0], [2.0, 1.0]]),
    )  # fmt: skip
    c = cpu_gpus([1.0, 1.0])
    b = bounds.bound(g, c)
    assert b.load == pytest.approx(6.0) and b.critical_path == pytest.approx(3.0)
    assert b.value == pytest.approx(6.0) and b.binds == bounds.LOAD
    assert simulate(g, c, np.array([0, 0, 1, 2])).step_time == pytest.approx(6.0)


def test_identical_gpus_share_their_load_evenly():
    # Four ops of CPU 4 s and GPU 2 s on CPU + 2 identical GPUs: the GPUs act as one device of 1 s per op.
    # The CPU takes q ops (4q s), the GPUs 4 - q (2 (4 - q) / 2 s each): equal at q = 0.8, 3.2 s.
    times = np.array([[4.0, 2.0, 2.0]] * 4)
    assert bounds.load_bound(times) == pytest.approx(3.2)
    # A third GPU twice as fast is a third class (HiGHS). Every device loaded alike at L: the CPU runs
    # L / 4 ops, each slow GPU L / 2, the fast one L; together the 4 ops: 2.25 L = 4, L = 16 / 9 s.
    assert bounds.load_bound(np.array([[4.0, 2.0, 2.0, 1.0]] * 4)) == pytest.approx(16 / 9)


def test_two_device_classes_agree_with_the_lp_over_every_device():
    # The sort-based optimum for CPU + identical GPUs against HiGHS on one variable per op and device.
    rng = np.random.default_rng(0)
    for _ in range(50):
        n, gpus = int(rng.integers(1, 30)), int(rng.integers(1, 5))
        cpu, gpu = rng.uniform(0, 10, n), rng.uniform(0, 5, n)
        gpu[rng.random(n) < 0.2] = np.nan  # CPU-only ops
        cpu[(rng.random(n) < 0.1) & ~np.isnan(gpu)] = np.nan  # GPU-only ops
        times = np.c_[cpu, np.repeat(gpu[:, None], gpus, 1)]
        ok = ~np.isnan(times)
        var_op, var_dev = np.nonzero(ok)
        nv, dn = len(var_op), times.shape[1]
        a_eq = np.zeros((n, nv + 1))
        a_eq[var_op, np.arange(nv)] = 1.0
        a_ub = np.zeros((dn, nv + 1))
        a_ub[var_dev, np.arange(nv)] = times[ok]
        a_ub[:, -1] = -1.0
        lp = linprog(np.r_[np.zeros(nv), 1.0], A_ub=a_ub, b_ub=np.zeros(dn), A_eq=a_eq, b_eq=np.ones(n))
        assert bounds.load_bound(times) == pytest.approx(lp.fun, rel=1e-7)
