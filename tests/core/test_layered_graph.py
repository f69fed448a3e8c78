"""placer.core.generated.layered_graph: the large layered DAGs bench/baselines.py and bench/large_graph.py time."""

import numpy as np

from placer.core.generated import layered_graph


def test_each_op_past_the_first_layer_reads_fan_in_ops_of_the_layer_before():
    g = layered_graph(50, width=10, fan_in=3, seed=4)
    # 4 layers past the first, 10 ops each, 3 inputs per op: 120 edges.
    assert g.num_ops == 50 and g.num_edges == 120
    index = g.index()
    for i in range(10, 50):
        producers = [int(index[s]) for s, d in zip(g.names[g.edge_src], g.names[g.edge_dst], strict=True)
                     if d == f"op{i}"]  # fmt: skip
        assert len(set(producers)) == 3
        assert all((i // 10 - 1) * 10 <= p < (i // 10) * 10 for p in producers)
    cost = g.compute_cost  # [n, (CPU, GPU)]
    ok = ~np.isnan(cost[:, 1])
    assert (cost[ok, 0] >= 5 * cost[ok, 1]).all() and (cost[ok, 0] <= 20 * cost[ok, 1]).all()
    again = layered_graph(50, width=10, fan_in=3, seed=4)
    assert again == g and again.fingerprint() == g.fingerprint()


def test_local_colocation_pairs_neighbours():
    g = layered_graph(400, seed=1, local_colocation=True)
    keys = [k for k in g.colocation if k]
    assert len(keys) == 2 * (400 // 40)  # n // 40 pairs
    for key in set(keys):
        i, j = np.flatnonzero(g.colocation == key)
        assert j == i + 1 and i % 2 == 0
