"""The one colocation check every part uses, on a hand-built graph."""

import numpy as np

from placer.core.colocation import colocation_breaks, colocation_sets
from placer.core.op_graph import OpGraph


def _graph():
    # v, its read and its update share key "v"; w and its read share "w"; x has none.
    names = ["v", "read_v", "w", "read_w", "x", "update_v"]
    edges = [("v", "read_v"), ("w", "read_w"), ("read_v", "x"), ("read_w", "x"), ("x", "update_v"), ("v", "update_v")]
    return OpGraph.create(
        "coloc",
        names,
        ["VarHandleOp", "ReadVariableOp"] * 2 + ["MatMul", "AssignSub"],
        edges,
        colocation=["v", "v", "w", "w", "", "v"],
    )


def test_sets_and_breaks_by_hand():
    g = _graph()
    idx = g.index()
    sets = {g.colocation[int(s[0])]: sorted(g.names[s].tolist()) for s in colocation_sets(g)}
    assert sets == {"v": ["read_v", "update_v", "v"], "w": ["read_w", "w"]}
    dev = np.zeros(g.num_ops, int)
    assert colocation_breaks(g, dev) == []
    dev[idx["x"]] = 1  # no key: free to move
    assert colocation_breaks(g, dev) == []
    dev[idx["update_v"]] = 1
    dev[idx["read_w"]] = 2
    breaks = {(g.names[i], g.names[f]) for i, f in colocation_breaks(g, dev)}
    assert breaks == {("update_v", "v"), ("read_w", "w")}
    names = np.array(["/device:GPU:0"] * g.num_ops, dtype=object)  # device names work too
    names[idx["read_v"]] = "/device:GPU:1"
    assert [(g.names[i], g.names[f]) for i, f in colocation_breaks(g, names)] == [("read_v", "v")]
