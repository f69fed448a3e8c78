"""Name scopes in the grouping: ops of different scopes never share a group (grouping.scope_depth)."""

import itertools

import numpy as np

from placer.core import op_names
from placer.core.grouping import group
from placer.core.op_graph import OpGraph


def test_scope_of_reads_the_forward_side():
    assert op_names.scope_of("rnn/layer_0/t_3/MatMul", 2) == "rnn/layer_0"
    assert op_names.scope_of("rnn/layer_0/t_3/MatMul", 1) == "rnn"
    # A gradient op belongs to its forward op's scope, an update op to its variable's.
    assert op_names.scope_of("gradients/rnn/layer_1/t_3/MatMul_grad/MatMul_1", 2) == "rnn/layer_1"
    assert op_names.scope_of("gradients_1/softmax/concat_grad/Slice", 2) == "softmax"
    assert op_names.scope_of("SGD/update_rnn/layer_0/kernel/ResourceApplyGradientDescent", 2) == "rnn/layer_0"
    # Outside any scope.
    assert op_names.scope_of("loss", 2) == ""
    assert op_names.scope_of("gradients/AddN_3", 2) == ""


def two_layer_rnn(steps=6):
    """An unrolled 2-layer RNN: each cell feeds the next step of its layer and the layer above.

    Every edge carries 100 bytes, so coarsening by edge weight alone sees no
    difference between merging along time and merging across layers.
    """
    names, edges = [], []
    for t in range(steps):
        for layer in (0, 1):
            names.append(f"rnn/layer_{layer}/t_{t}/cell")
            if t:
                edges.append((f"rnn/layer_{layer}/t_{t - 1}/cell", names[-1], 100))
        edges.append((f"rnn/layer_0/t_{t}/cell", f"rnn/layer_1/t_{t}/cell", 100))
    names.append("loss")
    edges.append((f"rnn/layer_1/t_{steps - 1}/cell", "loss", 100))
    for t in range(steps):  # gradients, in reverse, each into the one before it
        for layer in (1, 0):
            names.append(f"gradients/rnn/layer_{layer}/t_{t}/cell_grad/MatMul")
    grads = [n for n in names if n.startswith("gradients/")]
    edges.append(("loss", grads[-2], 100))  # layer 1's last step
    for a, b in itertools.pairwise(grads[::-1]):
        edges.append((a, b, 100))
    return OpGraph.create("rnn2", names, ["T"] * len(names), edges)


def layers_of(graph, grouping):
    """For each group, the layers ("0", "1") its ops belong to."""
    out = []
    for g in range(grouping.num_groups):
        scopes = {op_names.scope_of(str(graph.names[i]), 2) for i in grouping.members(g)} - {""}
        out.append({s[-1] for s in scopes})
    return out


def test_scopes_keep_layers_apart_under_coarsening():
    graph = two_layer_rnn()
    plain = group(graph, target_groups=4, merge_single_consumer=False)
    # Without names, coarsening mixes the layers (equal edge weights everywhere).
    assert any(len(layers) == 2 for layers in layers_of(graph, plain))
    scoped = group(graph, target_groups=4, merge_single_consumer=False, scope_depth=2)
    assert all(len(layers) <= 1 for layers in layers_of(graph, scoped))
    # A placement by layer (layer 0 on device 0, layer 1 on device 1) is expressible group by group,
    # gradients included: every group holds the ops of one layer, or only ops outside any scope.
    want = np.array([{"": -1, "0": 0, "1": 1}[op_names.scope_of(n, 2)[-1:]] for n in graph.names.tolist()])
    for g in range(scoped.num_groups):
        devices = set(want[scoped.members(g)].tolist()) - {-1}
        assert len(devices) <= 1
    # Each layer's forward cells still coarsen together along time.
    for layer in (0, 1):
        cells = [i for i, n in enumerate(graph.names.tolist()) if n.startswith(f"rnn/layer_{layer}/")]
        assert len(set(scoped.op_group[cells].tolist())) == 1


def test_colocated_ops_share_the_colour_of_the_first():
    graph = OpGraph.create(
        "coloc",
        ["a/w", "a/w/read", "b/x", "c/y"],
        ["VarHandleOp", "ReadVariableOp", "T", "T"],
        [("a/w", "a/w/read", 4), ("a/w/read", "b/x", 4), ("b/x", "c/y", 4)],
        colocation=["a/w", "a/w", "", "a/w"],
    )
    colors = op_names.scope_colors(graph, 1)
    assert colors[0] == colors[1] == colors[3] != colors[2]
    assert op_names.scope_colors(OpGraph.create("flat", ["x", "y"], ["T", "T"], [("x", "y", 1)]), 2).tolist() == [
        -1,
        -1,
    ]


def test_combined_colours_separate_every_distinct_pair():
    a = np.array([0, 0, 1, 1, -1, -1])
    b = np.array([0, 1, 0, 0, -1, 2])
    c = op_names.combine_colors(a, b)
    assert c[2] == c[3] and c[4] == -1
    assert len({int(x) for x in c[[0, 1, 2, 5]]}) == 4
    assert op_names.combine_colors(a, None) is a


def test_scopes_and_a_warm_start_colouring_both_hold():
    graph = two_layer_rnn()
    early = np.array([0 if "/t_0/" in n or "/t_1/" in n or "/t_2/" in n else 1 for n in graph.names.tolist()])
    both = group(graph, target_groups=2, merge_single_consumer=False, scope_depth=2, op_colors=early)
    for g in range(both.num_groups):
        members = both.members(g)
        assert len(set(early[members].tolist())) == 1
        assert len(layers_of(graph, both)[g]) <= 1
    # Each layer's early and late cells form separate groups: four forward groups at least.
    forward = [i for i, n in enumerate(graph.names.tolist()) if n.startswith("rnn/")]
    assert len(set(both.op_group[forward].tolist())) == 4
