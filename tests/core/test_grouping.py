"""Grouping on hand-built graphs whose groups are worked out by hand, plus invariants on random DAGs."""

import numpy as np
import pytest

from placer.core.grouping import Grouping, coarsen, group
from placer.core.op_graph import OpGraph
from placer.core.op_names import forward_op_for


def groups_by_name(graph, grouping):
    """Returns the groups as a list of name sets, in group order."""
    return [{str(graph.names[i]) for i in grouping.members(g)} for g in range(grouping.num_groups)]


def check_invariants(graph, grouping):
    assert grouping.op_group.shape == (graph.num_ops,)
    assert sorted(set(grouping.op_group.tolist())) == list(range(grouping.num_groups))
    assert grouping.sizes().sum() == graph.num_ops
    src, dst, _ = grouping.group_graph()
    assert np.all(src != dst)
    assert grouping.acyclic
    assert np.all(src < dst)  # numbered in topological order
    # Every colocation set lies within one tie class.
    assert grouping.tied_apart(graph) == []
    for key in set(graph.colocation.tolist()) - {""}:
        assert len(set(grouping.tie[grouping.op_group[graph.colocation == key]].tolist())) == 1
    # Each group's leader is the lowest group of its class, and its own leader.
    tie = grouping.tie
    assert np.all(tie <= np.arange(grouping.num_groups))
    assert np.all(tie[tie] == tie)
    assert grouping.leaders().tolist() == sorted(set(tie.tolist()))


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


def test_short_colocation_cycle_is_closed_long_one_is_tied():
    # a and c are colocated but a -> b -> c, and b also feeds d: merging a and
    # c needs b too (1 op, within cycle_closure_ops).
    g = OpGraph.create(
        "cc", ["a", "b", "c", "d"], ["T"] * 4, [("a", "b"), ("b", "c"), ("b", "d")], colocation=["k", "", "k", ""]
    )
    gr = group(g, merge_single_consumer=False)
    assert groups_by_name(g, gr) == [{"a", "b", "c"}, {"d"}]
    assert gr.tie.tolist() == [0, 1]
    # With no closure allowed, c gets its own group tied to a's.
    gr = group(g, merge_single_consumer=False, cycle_closure_ops=0)
    assert groups_by_name(g, gr) == [{"a"}, {"b"}, {"c"}, {"d"}]
    assert gr.tie.tolist() == [0, 1, 0, 3]
    assert gr.leaders().tolist() == [0, 1, 3]
    assert gr.leader_index().tolist() == [0, 1, 0, 2]
    assert gr.expand(np.array([7, 8, 9])).tolist() == [7, 8, 7, 9]
    assert gr.expand(np.array([[7, 8, 5, 9]])).tolist() == [[7, 8, 7, 9]]
    check_invariants(g, gr)


def train_step_graph():
    """var -> read -> mm -> loss -> grad -> update(var); mm also feeds a summary."""
    names = ["x", "var", "read", "mm", "loss", "summary", "gradients/mm_grad/MatMul_1", "SGD/update_var/Apply"]
    edges = [
        ("x", "mm", 16),
        ("var", "read", 16),
        ("read", "mm", 16),
        ("mm", "loss", 16),
        ("mm", "summary", 16),
        ("loss", "gradients/mm_grad/MatMul_1", 4),
        ("x", "gradients/mm_grad/MatMul_1", 16),
        ("gradients/mm_grad/MatMul_1", "SGD/update_var/Apply", 16),
        ("var", "SGD/update_var/Apply", 0),
    ]
    coloc = ["", "v", "v", "", "", "", "", "v"]
    return OpGraph.create("step", names, ["T"] * len(names), edges, colocation=coloc)


def test_update_op_is_tied_to_its_variable_not_merged():
    g = train_step_graph()
    # Steps 1 and 2 only: read joins var; update would close the cycle
    # var -> read -> mm -> loss -> grad -> update, so it is tied to var's
    # group; grad cannot join mm (loss lies between).
    gr = group(g, colocate_gradients=True, merge_single_consumer=False, cycle_closure_ops=0)
    assert groups_by_name(g, gr) == [
        {"x"},
        {"var", "read"},
        {"mm"},
        {"loss"},
        {"summary"},
        {"gradients/mm_grad/MatMul_1"},
        {"SGD/update_var/Apply"},
    ]
    assert gr.tie.tolist() == [0, 1, 2, 3, 4, 5, 1]
    check_invariants(g, gr)
    # Single-consumer merges: read's only consumer mm joins {var, read}; loss
    # joins grad, grad joins update (the class of one group takes them in).
    # mm has two consumers and x two, so they stop there.
    gr = group(g, colocate_gradients=True, cycle_closure_ops=0)
    assert groups_by_name(g, gr) == [
        {"x"},
        {"var", "read", "mm"},
        {"loss", "gradients/mm_grad/MatMul_1", "SGD/update_var/Apply"},
        {"summary"},
    ]
    assert gr.tie.tolist() == [0, 1, 1, 3]
    assert gr.num_leaders == 3
    assert gr.expand(np.array([0, 1, 2])).tolist() == [0, 1, 1, 2]
    check_invariants(g, gr)
    # The default closure takes mm, loss and grad (3 ops) into var's group instead.
    gr = group(g, colocate_gradients=True, merge_single_consumer=False)
    assert {"var", "read", "mm", "loss", "gradients/mm_grad/MatMul_1", "SGD/update_var/Apply"} in groups_by_name(g, gr)
    check_invariants(g, gr)


def test_merges_never_join_two_ties():
    # u1 and u2 are each tied to their own variable (v1, v2); both feed only
    # t. u1 joins t first; u2 then may not, or v1 and v2 would be tied.
    names = ["v1", "v2", "m1", "m2", "u1", "u2", "t"]
    edges = [
        ("v1", "m1"),
        ("m1", "u1"),
        ("v1", "u1"),
        ("v2", "m2"),
        ("m2", "u2"),
        ("v2", "u2"),
        ("u1", "t"),
        ("u2", "t"),
        ("m1", "m2"),
        ("m2", "t"),
    ]
    coloc = ["k1", "k2", "", "", "k1", "k2", ""]
    g = OpGraph.create("ties", names, ["T"] * 7, edges, colocation=coloc)
    gr = group(g, cycle_closure_ops=0)
    group_of = dict(zip(g.names.tolist(), gr.op_group.tolist(), strict=True))
    assert group_of["u1"] == group_of["t"] != group_of["u2"]
    assert gr.tie[group_of["v1"]] != gr.tie[group_of["v2"]]
    check_invariants(g, gr)


def test_coarsening_merges_heaviest_edges_first():
    g = OpGraph.create("c", list("abcd"), ["T"] * 4, [("a", "b", 100), ("b", "c", 1), ("c", "d", 50)])
    gr = group(g, merge_single_consumer=False, target_groups=3)
    assert groups_by_name(g, gr) == [{"a", "b"}, {"c"}, {"d"}]
    gr = group(g, merge_single_consumer=False, target_groups=2)
    assert groups_by_name(g, gr) == [{"a", "b"}, {"c", "d"}]
    check_invariants(g, gr)


def test_coarsening_skips_a_merge_that_closes_a_cycle():
    # a -> c is the heaviest edge, but b lies on a -> b -> c.
    g = OpGraph.create("c", list("abc"), ["T"] * 3, [("a", "b", 1), ("b", "c", 1), ("a", "c", 100)])
    base = group(g, merge_single_consumer=False)
    gr = coarsen(g, base, 2, balance=0)
    assert groups_by_name(g, gr) == [{"a", "b"}, {"c"}]
    check_invariants(g, gr)


def test_coarsening_unites_tie_classes_of_merged_groups():
    # Groups {a} and {c} are tied; coarsening to 2 groups merges c and d.
    g = OpGraph.create(
        "t", list("abcd"), ["T"] * 4, [("a", "b", 1), ("b", "c", 1), ("c", "d", 9)], colocation=["k", "", "k", ""]
    )
    gr = group(g, merge_single_consumer=False, cycle_closure_ops=0, target_groups=3)
    assert groups_by_name(g, gr) == [{"a"}, {"b"}, {"c", "d"}]
    assert gr.tie.tolist() == [0, 1, 0]
    check_invariants(g, gr)


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
    gr = group(g, colocate_gradients=True, merge_single_consumer=False, cycle_closure_ops=0)
    names = groups_by_name(g, gr)
    assert {"gradients/mm_grad/MatMul", "gradients/mm_grad/MatMul_1"} in names
    # mm -> loss -> Fill -> grads is a path through third groups: refused.
    assert {"mm"} in names
    check_invariants(g, gr)
    # With single-consumer merges mm joins loss and loss joins Fill, but the
    # gradient ops had their chance before: the group graph stays acyclic.
    full = group(g, colocate_gradients=True, cycle_closure_ops=0)
    group_of = dict(zip(g.names.tolist(), full.op_group.tolist(), strict=True))
    assert group_of["mm"] == group_of["loss"]
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


def test_from_labels_with_tie_labels():
    g = OpGraph.create("t", list("abcd"), ["T"] * 4, [("a", "b"), ("b", "c"), ("c", "d")])
    gr = Grouping.from_labels(g, np.array([0, 1, 2, 3]), np.array([5, 6, 7, 5]))
    assert gr.tie.tolist() == [0, 1, 2, 0]
    # Ties are transitive through shared groups: {a} ~ {b, c} ~ {d}.
    gr = Grouping.from_labels(g, np.array([0, 1, 1, 2]), np.array([5, 5, 6, 6]))
    assert gr.tie.tolist() == [0, 0, 0]
    assert gr.num_leaders == 1


def test_edge_bytes_count_a_tensor_once_per_group():
    g = OpGraph.create("t", ["a", "b", "c"], ["T"] * 3, [("a", "b", 5), ("a", "c", 5)])
    gr = Grouping.from_labels(g, np.array([0, 1, 1]))
    assert gr.edge_bytes.tolist() == [5]


def random_dag(seed, n=60, keys=4):
    rng = np.random.default_rng(seed)
    names = [f"op{i}" for i in range(n)]
    edges = [
        (names[j], names[i], int(rng.integers(0, 100)))
        for i in range(1, n)
        for j in set(rng.integers(max(0, i - 8), i, size=int(rng.integers(1, 3))).tolist())
    ]
    coloc = [f"k{rng.integers(0, keys)}" if keys and rng.random() < 0.15 else "" for _ in range(n)]
    return OpGraph.create(f"r{seed}", names, ["T"] * n, edges, colocation=coloc)


@pytest.mark.parametrize("seed", range(20))
def test_invariants_on_random_dags(seed):
    g = random_dag(seed)
    cap = 12 if seed % 2 else 0
    for kwargs in ({}, {"merge_single_consumer": False}, {"cycle_closure_ops": 0}, {"target_groups": 5}):
        gr = group(g, max_group_ops=cap, **kwargs)
        check_invariants(g, gr)
        if cap:
            assert gr.sizes().max() <= cap
    assert group(g, target_groups=5).op_group.tolist() == group(g, target_groups=5).op_group.tolist()


@pytest.mark.parametrize("seed", range(10))
def test_coarsening_reaches_the_target_without_caps(seed):
    # Every op but the first has a producer, so the graph is connected and an
    # edge whose merge closes no cycle always exists; without caps, merges
    # that join ties are allowed in the second pass.
    g = random_dag(seed, keys=4 if seed % 2 else 0)
    base = group(g, merge_single_consumer=False, cycle_closure_ops=0)
    for target in (1, 7, 20):
        gr = coarsen(g, base, target, balance=0)
        assert gr.num_groups == target
        check_invariants(g, gr)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["configs/nmt.py:tiny", "configs/inception_v3.py:tiny"])
def test_invariants_on_tiny_models(spec, extracted_graph):
    from placer.core.configs_util import load_config

    config = load_config(spec)
    g = extracted_graph(spec)
    for target in (0, config.placer.grouping.target_groups):
        gr = group(g, target_groups=target)
        check_invariants(g, gr)
        assert 1 < gr.num_groups < g.num_ops
        assert gr.sizes().max() < 0.1 * g.num_ops
        if target:
            assert gr.num_groups < 4 * target


def test_colors_keep_a_given_placement_expressible():
    # A chain a -> b -> c -> d collapses into one group by single-consumer
    # merges; colouring a, b with 0 and c, d with 1 keeps two groups.
    g = OpGraph.create("chain", list("abcd"), ["T"] * 4, [("a", "b", 8), ("b", "c", 8), ("c", "d", 8)])
    assert group(g).num_groups == 1
    colored = group(g, op_colors=np.array([0, 0, 1, 1]))
    assert colored.num_groups == 2
    assert colored.op_group[0] == colored.op_group[1] != colored.op_group[2] == colored.op_group[3]
    # Coarsening respects colours too.
    assert group(g, target_groups=1, op_colors=np.array([0, 0, 1, 1])).num_groups == 2
