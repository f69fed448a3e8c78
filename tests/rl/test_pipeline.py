"""The costed-graph cache and the placement problem built from a model config."""

import numpy as np

from baselines import common
from graphs import pipeline
from placer.core import cluster as cluster_lib
from placer.core import configs_util
from placer.rl import problem as problem_lib


def test_second_load_comes_from_the_cache_and_equals_the_first(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "CACHE_DIR", str(tmp_path))
    config = configs_util.load_config("configs/nmt.py:tiny")
    cluster = cluster_lib.load("k80x2")
    first = pipeline.load_graph(cluster, config=config)
    second = pipeline.load_graph(cluster, config=config)
    assert not first.cached and first.model is not None
    assert second.cached and second.model is None
    assert second.graph == first.graph
    # Another cluster's device properties give other costs: not the same entry.
    assert not pipeline.load_graph(cluster_lib.load("h100x8"), config=config).cached
    assert len(list(tmp_path.iterdir())) == 2


def test_problem_respects_kernels_ties_and_colours():
    config = configs_util.load_config("configs/nmt.py:tiny")
    cluster = cluster_lib.load("k80x2")
    graph = pipeline.load_graph(cluster, config=config, use_cache=False).graph
    colors = np.arange(graph.num_ops) % 3  # an arbitrary op-level placement on 3 devices
    problem, groups = problem_lib.make_problem(graph, cluster, config.placer, op_colors=colors)
    # Every group is one colour, so that placement is expressible group by group.
    for g in range(groups.num_groups):
        assert len(set(colors[groups.op_group == g])) == 1
    # Tied groups share their leader's allowed devices, and leaders come first.
    assert np.all(problem.leader <= np.arange(problem.num_groups))
    np.testing.assert_array_equal(problem.allowed, problem.allowed[problem.leader])
    # A tie class may go only where every one of its ops has a kernel.
    ok = common.supported(graph, cluster)
    op_class = problem.leader[groups.op_group]
    for g in np.unique(problem.leader):
        runs_everywhere = ok[op_class == g].all(axis=0)
        np.testing.assert_array_equal(problem.allowed[g], runs_everywhere if runs_everywhere.any() else True)


def test_colours_that_keep_far_too_many_groups_are_dropped():
    from ml_collections import ConfigDict

    from placer.core import grouping
    from placer.core.op_graph import OpGraph

    # A 12-op chain coloured 0, 1, 0, 1, ...: no two neighbours may share a group, so the colours
    # keep 12 groups, over 4x the target of 2; the chain is then grouped as placer-extract groups it.
    n = 12
    names = [f"op{i}" for i in range(n)]
    graph = OpGraph.create(
        "chain",
        names,
        ["T"] * n,
        [(names[i], names[i + 1], 10) for i in range(n - 1)],
        device_types=("GPU",),
        compute_cost=np.full((n, 1), 1e-3),
    )
    cluster = cluster_lib.load("k80x2")
    placer = ConfigDict(
        {
            "grouping": {"merge_single_consumer": False, "max_group_ops": 0, "target_groups": 2},
            "train": {"measure_op_level": True},
        }
    )
    _, groups = problem_lib.make_problem(graph, cluster, placer, op_colors=np.arange(n) % 2)
    extract_like = grouping.group(graph, merge_single_consumer=False, max_group_ops=0, target_groups=2)
    np.testing.assert_array_equal(groups.op_group, extract_like.op_group)
    assert groups.num_groups <= 2
    # Within the slack (target 3: 12 > 4 * 3 is false) the colours are kept.
    placer.grouping.target_groups = 3
    _, kept = problem_lib.make_problem(graph, cluster, placer, op_colors=np.arange(n) % 2)
    assert kept.num_groups == n
