"""Lower bound on hand-built graphs."""

import numpy as np
import pytest

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
