"""The compute prior: a start that knows which devices run a group fastest (docs/rl.md)."""

import numpy as np
import pytest

from placer.core import cluster as cluster_lib
from placer.core.op_graph import OpGraph
from placer.measure.simulator import Simulator
from placer.rl import problem as problem_lib
from placer.rl import rl_math
from placer.rl.reinforce import Trainer
from tests.rl.test_reinforce import config

MB = 1 << 20


def test_prior_by_hand():
    # Devices: CPU, GPU, GPU. Group 0 costs 4 s on the CPU and 1 s on a GPU; group 1 is free.
    # Shares of the graph per group: (4 + 0) / 2 = 2 s on the CPU, 0.5 s on a GPU. Charges:
    # group 0: 6 / 1.5 / 1.5, group 1: 2 / 0.5 / 0.5: the CPU is 4x dearer for both.
    seconds = np.array([[4.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    bias = rl_math.compute_prior(seconds, 1.0)
    np.testing.assert_allclose(bias, [[-np.log(4), 0, 0], [-np.log(4), 0, 0]], rtol=1e-6)
    p = np.exp(bias) / np.exp(bias).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(p[:, 0], 1 / 9, rtol=1e-6)  # 0.25 / (0.25 + 1 + 1)
    np.testing.assert_allclose(rl_math.compute_prior(seconds, 2.0), 2 * bias, rtol=1e-6)
    np.testing.assert_array_equal(rl_math.compute_prior(seconds, 0.0), np.zeros((2, 3)))
    # No kernel on the CPU for group 0: its entry is left to the mask (0 here), the GPUs tie.
    nan = rl_math.compute_prior(np.array([[np.nan, 1.0, 1.0], [2.0, 1.0, 1.0]]), 1.0)
    assert nan[0].tolist() == [0.0, 0.0, 0.0]
    assert nan[1, 0] == pytest.approx(-np.log(3 / 2))  # (2 + 1) / (1 + 1)


def cpu_and_gpus(n_ops=6):
    """A chain of n ops, each 4 s on the CPU and 1 s on a GPU; a CPU and two GPUs."""
    names = [f"op{i}" for i in range(n_ops)]
    edges = [(names[i], names[i + 1], MB) for i in range(n_ops - 1)]
    cost = np.tile([4.0, 1.0], (n_ops, 1))
    graph = OpGraph.create(
        "chain",
        names,
        ["MatMul"] * n_ops,
        edges,
        output_bytes=[MB] * n_ops,
        device_types=["CPU", "GPU"],
        compute_cost=cost,
    )
    devices = [cluster_lib.Device("/device:CPU:0", "CPU", 64 << 30)]
    devices += [cluster_lib.Device(f"/device:GPU:{i}", "GPU", 16 << 30, speed=2.0 if i else 1.0) for i in range(2)]
    return graph, cluster_lib.make("cpu_gpus", devices, bandwidth=100 * MB, latency=0.0)


def test_tie_class_seconds_sum_a_class_and_divide_by_speed():
    graph, cluster = cpu_and_gpus(4)
    # Ops 0 and 1 lead to group 0, ops 2 and 3 to group 1; GPU 1 runs twice as fast.
    t = problem_lib.tie_class_seconds(graph, cluster, np.array([0, 0, 1, 1]), 3)
    np.testing.assert_allclose(t, [[8.0, 2.0, 1.0], [8.0, 2.0, 1.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("strength", [0.0, 2.0])
def test_prior_keeps_the_first_samples_off_the_slow_cpu(tmp_path, strength):
    graph, cluster = cpu_and_gpus()
    c = config()
    c.policy.compute_prior = strength
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    trainer = Trainer(problem, Simulator(graph, cluster), c, str(tmp_path), seed=0)
    drawn = trainer.policy.sample(
        problem.type_ids, problem.features, 64, seed=(0, 0), mask_bias=trainer.mask_bias, leader=problem.leader
    )
    on_cpu = float(np.mean(drawn == 0))
    # Uniform: about a third on the CPU. With the prior: CPU 4 s, GPU 0 1 s, GPU 1 0.5 s per op, so
    # p(CPU) = (1/8)^2 / ((1/8)^2 + (1/2)^2 + 1) = 1.2%.
    if strength:
        assert on_cpu < 0.06
        assert np.mean(drawn == 2) > np.mean(drawn == 1)  # the faster GPU is favoured too
    else:
        assert on_cpu > 0.2
