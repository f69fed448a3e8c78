"""Contracting runs of a depth-first topological order: the linear first pass of coarsening on large graphs."""

import numpy as np

from placer.core import grouping as grouping_lib
from placer.core.grouping import Grouping, contract_runs, depth_first_order
from placer.core.op_graph import OpGraph
from tests import hand_graphs
from tests.core.test_grouping import check_invariants, groups_by_name


def two_chains(colocation=None) -> OpGraph:
    """Chains a0 -> a1 -> a2 -> a3 and b0 -> ... -> b3, ops numbered layer by layer (a0, b0, a1, b1, ...)."""
    return hand_graphs.two_chains(4, edge_bytes=8, layered=True, colocation=colocation, name="chains")


def test_depth_first_order_follows_the_chains_not_the_layers():
    g = two_chains()
    order = depth_first_order(g.num_ops, g.edge_src, g.edge_dst)
    assert [str(g.names[i]) for i in order] == ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"]


def test_runs_are_the_chains():
    g = two_chains()
    singles = Grouping.from_labels(g, np.arange(8))
    # 8 ops in 2 runs: at most ceil(8 / 2) = 4 ops each, along the depth-first order.
    runs = contract_runs(g, singles, 2)
    check_invariants(g, runs)
    assert sorted(map(sorted, groups_by_name(g, runs))) == [["a0", "a1", "a2", "a3"], ["b0", "b1", "b2", "b3"]]


def test_a_run_never_holds_two_tie_classes_of_several_groups():
    # a0 and b0 are colocated (class T), so are a3 and b3 (class U), and the chains make each pair a tie.
    g = two_chains(colocation=["t", "t", "", "", "", "", "u", "u"])
    singles = Grouping.from_labels(g, np.arange(8), tie_labels=np.array([0, 0, 2, 3, 4, 5, 6, 6]))
    runs = contract_runs(g, singles, 2)
    check_invariants(g, runs)
    # Order a0(T) a1 a2 a3(U) b0(T) b1 b2 b3(U), 4 ops a run: a3 of U ends the run of T, b0 of T the run of U,
    # b3 the second run of T: {a0, a1, a2}, {a3}, {b0, b1, b2}, {b3}.
    groups = groups_by_name(g, runs)
    assert sorted(map(sorted, groups)) == [["a0", "a1", "a2"], ["a3"], ["b0", "b1", "b2"], ["b3"]]
    leader = {frozenset(x): runs.tie[k] for k, x in enumerate(groups)}
    assert leader[frozenset({"a0", "a1", "a2"})] == leader[frozenset({"b0", "b1", "b2"})]
    assert leader[frozenset({"a3"})] == leader[frozenset({"b3"})]


def test_colours_end_a_run():
    g = two_chains()
    colors = np.array([0, 1, 0, 1, 1, 1, 1, 1])  # a0, a1 colour 0; the rest 1 (a2 is op 4)
    runs = contract_runs(g, Grouping.from_labels(g, np.arange(8)), 2, op_colors=colors)
    # a0 a1 (colour 0) | a2 a3 b0 b1 (colour 1, 4 ops) | b2 b3.
    assert sorted(map(sorted, groups_by_name(g, runs))) == [["a0", "a1"], ["a2", "a3", "b0", "b1"], ["b2", "b3"]]


def test_coarsen_contracts_first_only_far_above_the_target(monkeypatch):
    calls = []
    real = grouping_lib.contract_runs
    monkeypatch.setattr(grouping_lib, "contract_runs", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    g = two_chains()
    singles = Grouping.from_labels(g, np.arange(8))
    grouping_lib.coarsen(g, singles, 4)  # 8 groups, not above 64 x 4
    assert calls == []
    monkeypatch.setattr(grouping_lib, "CONTRACT_ABOVE", 1)
    monkeypatch.setattr(grouping_lib, "CONTRACT_TO", 1)
    out = grouping_lib.coarsen(g, singles, 2)  # 8 groups > 1 x 2: contracted to 2 runs, the chains
    assert calls == [2]
    check_invariants(g, out)
    assert out.num_groups == 2
