"""make_problem reads the grouping options of `config.placer.grouping`."""

from configs.common import placer_config
from placer.core import cluster as cluster_lib
from placer.rl import problem as problem_lib
from tests.core.test_grouping import training_graph

GRADS = ("gradients/mm_grad/MatMul", "gradients/mm_grad/MatMul_1")


def group_of(graph, grouping) -> dict[str, int]:
    return dict(zip(graph.names.tolist(), grouping.op_group.tolist(), strict=True))


def test_colocate_gradients_off_keeps_the_gradients_apart_from_their_forward_op():
    graph = training_graph()
    cluster = cluster_lib.make("gpus", [cluster_lib.Device(f"/device:GPU:{i}", "GPU", 1 << 30) for i in range(2)])
    c = placer_config()
    c.grouping.merge_single_consumer = False
    c.grouping.target_groups = 0
    # Step 2 on: both mm_grad ops join mm (taking loss and Fill, the ops between, along).
    c.grouping.colocate_gradients = True
    _, on = problem_lib.make_problem(graph, cluster, c)
    on_group = group_of(graph, on)
    assert on_group["mm"] == on_group[GRADS[0]] == on_group[GRADS[1]]
    # Step 2 off (the default): every op keeps a group of its own (no colocation keys, no
    # single-consumer merges).
    del c.grouping.colocate_gradients
    assert placer_config().grouping.colocate_gradients is False
    problem, off = problem_lib.make_problem(graph, cluster, c)
    assert off.num_groups == graph.num_ops
    off_group = group_of(graph, off)
    assert len({off_group["mm"], off_group[GRADS[0]], off_group[GRADS[1]]}) == 3
    assert len(set(problem.leader)) == graph.num_ops  # and none tied: each may go to its own device
