"""Grouping on hand-built graphs whose groups are worked out by hand, plus invariants on random DAGs."""

import numpy as np
import pytest

from graphs.grouping import Grouping, forward_op_for, group
from graphs.op_graph import OpGraph


def groups_by_name(graph, grouping):
    """Returns the groups as a list of name sets, in group order."""
    return [{str(graph.names[i]) for i in grouping.members(g)} for g in range(grouping.num_groups)]


def check_invariants(graph, grouping):
    assert grouping.op_group.shape == (graph.num_ops,)
    assert sorted(set(grouping.op_group.tolist())) == list(range(grouping.num_groups))
    assert grouping.sizes().sum() == graph.num_ops
    # Colocated ops share a group.
    for key in set(graph.colocation.tolist()) - {""}:
        assert len(set(grouping.op_group[graph.colocation == key].tolist())) == 1
    src, dst, _ = grouping.group_graph()
    assert np.all(src != dst)
    if grouping.acyclic:
        assert np.all(src < dst)  # numbered in topological order


def test_single_consumer_chain_collapses():
    g = OpGraph.create(
        "chain", ["a", "b", "c", "d"], ["Const", "MatMul", "Add", "Tanh"], [("a", "b", 8), ("b", "c", 8), ("c", "d", 8)]
    )
    gr = group(g)
    assert gr.num_groups == 1
    assert gr.acyclic


def test_no_merging_keeps_one_group_per_op():
    g = OpGraph.create("chain", ["a", "b", "c"], ["T"] * 3, [("a", "b"), ("b", "c")])
    gr = group(g, merge_single_consumer=False)
    assert gr.op_group.tolist() == [0, 1, 2]
    assert gr.edge_src.tolist() == [0, 1] and gr.edge_dst.tolist() == [1, 2]


def test_merge_that_would_close_a_cycle_is_refused():
    # p and s share a colocation key. s's only consumer is r, but p -> q -> r,
    # so joining {p, s} with r would make q both after and before the group.
    # p and q have two consumers each, so they join nobody.
    g = OpGraph.create(
        "cyc",
        ["p", "s", "q", "r", "t"],
        ["T"] * 5,
        [("p", "q", 4), ("p", "t", 4), ("s", "r", 4), ("q", "r", 4), ("q", "t", 4)],
        colocation=["k", "k", "", "", ""],
    )
    gr = group(g)
    assert groups_by_name(g, gr) == [{"p", "s"}, {"q"}, {"r"}, {"t"}]
    assert gr.acyclic
    check_invariants(g, gr)


def test_diamond_merges_when_no_third_group_is_between():
    # c's only consumer is b: {c, b}; then a's edges all go to {b, c}: one group.
    g = OpGraph.create("dia", ["a", "b", "c"], ["T"] * 3, [("a", "b"), ("a", "c"), ("c", "b")])
    assert group(g).num_groups == 1


def test_colocation_cycle_kept_or_merged():
    # a and c are colocated but a -> b -> c, and b also feeds d.
    g = OpGraph.create(
        "cc", ["a", "b", "c", "d"], ["T"] * 4, [("a", "b"), ("b", "c"), ("b", "d")], colocation=["k", "", "k", ""]
    )
    kept = group(g, merge_single_consumer=False)
    assert groups_by_name(g, kept) == [{"a", "c"}, {"b"}, {"d"}]
    assert not kept.acyclic
    merged = group(g, merge_single_consumer=False, constraint_cycles="merge")
    assert groups_by_name(g, merged) == [{"a", "b", "c"}, {"d"}]
    assert merged.acyclic


def training_graph():
    names = [
        "x",
        "w",
        "mm",
        "loss",
        "gradients/Fill",
        "gradients/mm_grad/MatMul",
        "gradients/mm_grad/MatMul_1",
        "SGD/update_w/Apply",
        "train",
    ]
    edges = [
        ("x", "mm", 16),
        ("w", "mm", 16),
        ("mm", "loss", 16),
        ("loss", "gradients/Fill", 4),
        ("gradients/Fill", "gradients/mm_grad/MatMul", 16),
        ("gradients/Fill", "gradients/mm_grad/MatMul_1", 16),
        ("x", "gradients/mm_grad/MatMul_1", 16),
        ("w", "gradients/mm_grad/MatMul", 16),
        ("gradients/mm_grad/MatMul_1", "SGD/update_w/Apply", 16),
        ("w", "SGD/update_w/Apply", 0),
        ("SGD/update_w/Apply", "train", 0),
    ]
    return OpGraph.create("train", names, ["T"] * len(names), edges)


def test_forward_op_for_names():
    index = {n: i for i, n in enumerate(["enc/w", "enc/MatMul", "enc/MatMul_1", "AddN", "enc"])}
    assert forward_op_for("gradients/enc/MatMul_grad/MatMul_1", index) == 1
    assert forward_op_for("gradients_1/enc/MatMul_1_grad/Shape", index) == 2
    assert forward_op_for("Adam/update_enc/w/ResourceApplyAdam", index) == 0
    assert forward_op_for("gradients/AddN", index) is None  # the op's own name never matches
    assert forward_op_for("enc/MatMul", index) is None


def test_gradient_ops_join_their_forward_group():
    g = training_graph()
    # Gradients on their own: the two mm_grad ops join each other only.
    gr = group(g, merge_single_consumer=False)
    names = groups_by_name(g, gr)
    assert {"gradients/mm_grad/MatMul", "gradients/mm_grad/MatMul_1"} in names
    # mm -> loss -> Fill -> grads is a path through third groups: refused.
    assert {"mm"} in names
    # With single-consumer merges, mm joins loss, loss joins Fill, and then the
    # gradient ops can join mm's group without closing a cycle.
    full = group(g)
    group_of = dict(zip(g.names.tolist(), full.op_group.tolist(), strict=True))
    assert group_of["gradients/mm_grad/MatMul"] == group_of["mm"] == group_of["loss"]
    assert full.acyclic
    check_invariants(g, full)


def test_max_group_ops_caps_refusable_merges():
    g = OpGraph.create("chain", list("abcdef"), ["T"] * 6, [(x, y) for x, y in zip("abcde", "bcdef", strict=True)])
    gr = group(g, max_group_ops=2)
    assert gr.sizes().max() <= 2
    assert gr.num_groups == 3


def test_from_labels_numbers_groups_topologically():
    g = OpGraph.create("t", ["a", "b", "c"], ["T"] * 3, [("a", "b", 5), ("b", "c", 7), ("a", "c", 3)])
    gr = Grouping.from_labels(g, np.array([9, 1, 9]))
    # {a, c} and {b} form a cycle: both directions are edges; a's group comes first.
    assert gr.op_group.tolist() == [0, 1, 0]
    assert not gr.acyclic
    gr = Grouping.from_labels(g, np.array([4, 4, 2]))
    assert gr.op_group.tolist() == [0, 0, 1]
    # a->c (3 bytes) and b->c (7 bytes) both go from group 0 to group 1.
    assert gr.edge_src.tolist() == [0] and gr.edge_dst.tolist() == [1] and gr.edge_bytes.tolist() == [10]


def test_edge_bytes_count_a_tensor_once_per_group():
    g = OpGraph.create("t", ["a", "b", "c"], ["T"] * 3, [("a", "b", 5), ("a", "c", 5)])
    gr = Grouping.from_labels(g, np.array([0, 1, 1]))
    assert gr.edge_bytes.tolist() == [5]


def random_dag(seed, n=60):
    rng = np.random.default_rng(seed)
    names = [f"op{i}" for i in range(n)]
    edges = [
        (names[j], names[i], int(rng.integers(0, 100)))
        for i in range(1, n)
        for j in set(rng.integers(max(0, i - 8), i, size=int(rng.integers(1, 3))).tolist())
    ]
    coloc = [f"k{rng.integers(0, 4)}" if rng.random() < 0.15 else "" for _ in range(n)]
    return OpGraph.create(f"r{seed}", names, ["T"] * n, edges, colocation=coloc)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("cycles", ["keep", "merge"])
def test_invariants_on_random_dags(seed, cycles):
    g = random_dag(seed)
    gr = group(g, constraint_cycles=cycles, max_group_ops=12 if seed % 2 else 0)
    check_invariants(g, gr)
    if cycles == "merge":
        assert gr.acyclic
    # Refusable merges never close a cycle that the constraints alone did not:
    # the strongly connected sets of groups only hold groups with colocated ops.
    base = Grouping.from_labels(
        g, group(g, constraint_cycles=cycles, merge_single_consumer=False, colocate_gradients=False).op_group
    )
    assert gr.acyclic or not base.acyclic
    assert (
        gr.op_group.tolist()
        == group(g, constraint_cycles=cycles, max_group_ops=12 if seed % 2 else 0).op_group.tolist()
    )


@pytest.mark.parametrize("cycles", ["keep", "merge"])
def test_invariants_on_tiny_nmt(cycles):
    pytest.importorskip("tensorflow")
    import importlib

    import models
    from graphs import extract

    config = importlib.import_module("configs.nmt").get_config("tiny")
    g = extract.extract(models.build(config).graph, name="nmt")
    gr = group(g, constraint_cycles=cycles)
    check_invariants(g, gr)
    assert gr.acyclic == (cycles == "merge")
    assert 1 < gr.num_groups < g.num_ops
