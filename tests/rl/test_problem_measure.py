"""Problem.measure hands device arrays to the simulator and measures what Problem.placement places."""

import dataclasses

import numpy as np

from configs import common
from placer.core import cluster as cluster_lib
from placer.core.generated import generate
from placer.measure.simulator import Simulator
from placer.rl import problem as problem_lib


def test_measure_equals_measuring_placements_op_and_group_level():
    graph = generate("chain", 60, 2)
    cluster = cluster_lib.load("k80x2")
    config = common.placer_config()
    config.grouping.target_groups = 8
    problem, _ = problem_lib.make_problem(graph, cluster, config)
    sim = Simulator(graph, cluster)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, cluster.num_devices, (12, problem.num_groups))
    actions = actions[:, problem.leader]  # tied groups share their leader's device, as the policy samples them
    times = {}
    for op_level in (True, False):
        p = dataclasses.replace(problem, op_level=op_level)
        got = p.measure(sim, actions)
        want = sim.measure([p.placement(a) for a in actions])
        assert len(got) == 12
        for a, b in zip(got, want, strict=True):
            assert a.failure == b.failure and a.step_time == b.step_time
            np.testing.assert_array_equal(a.peak_memory, b.peak_memory)
        times[op_level] = [m.step_time for m in got]
    # Op by op and group by group are different models: the flag reaches the simulator.
    assert times[True] != times[False]
