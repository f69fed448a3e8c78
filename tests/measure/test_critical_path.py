"""The critical path of the lower bound on hand-built graphs, and against networkx's longest path."""

import networkx as nx
import numpy as np
import pytest

from placer.core.generated import generate, layered_graph
from placer.core.op_graph import OpGraph
from placer.measure import bounds


def graph(names, edges):
    n = len(names)
    return OpGraph.create("g", names, ["T"] * n, edges, device_types=("GPU",), compute_cost=np.ones((n, 1)))


def test_diamond_takes_the_longer_branch():
    # a -> b -> d and a -> c -> d; seconds a 1, b 2, c 5, d 1: a-c-d = 1 + 5 + 1 = 7 (a-b-d = 4).
    g = graph(["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    t = dict(a=1.0, b=2.0, c=5.0, d=1.0)
    assert bounds.critical_path(g, np.array([t[n] for n in g.names])) == pytest.approx(7.0)


def test_edges_listed_against_the_order_and_a_lone_heavy_op():
    # Edges given consumer first: d -> c -> b -> a, each 1 s (path 4 s); e alone takes 3 s, f 6 s
    # after e: 9 s, the longest.
    g = graph(["a", "b", "c", "d", "e", "f"], [("c", "b"), ("b", "a"), ("d", "c"), ("e", "f")])
    t = dict(a=1.0, b=1.0, c=1.0, d=1.0, e=3.0, f=6.0)
    assert bounds.critical_path(g, np.array([t[n] for n in g.names])) == pytest.approx(9.0)


def test_a_single_op_is_its_own_path():
    assert bounds.critical_path(graph(["a"], []), np.array([2.5])) == 2.5


@pytest.mark.parametrize(
    "g",
    [layered_graph(3000, local_colocation=True), generate("chain", 2000, 1), generate("fanin", 2000, 2)],
    ids=["layered", "chain", "fanin"],
)
def test_same_length_as_networkx(g):
    t = np.random.default_rng(0).random(g.num_ops)
    ref = nx.DiGraph()
    ref.add_weighted_edges_from((-1, v, t[v]) for v in range(g.num_ops))  # op times as weights of edges into them
    ref.add_weighted_edges_from((u, v, t[v]) for u, v in zip(g.edge_src.tolist(), g.edge_dst.tolist(), strict=True))
    assert bounds.critical_path(g, t) == pytest.approx(nx.dag_longest_path_length(ref, weight="weight"), rel=1e-12)
