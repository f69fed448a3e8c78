"""layered_graph's CPU-only share: the rest of the graph stays the same whatever the share."""

import numpy as np

from placer.core.generated import layered_graph


def test_no_cpu_only_ops_and_nothing_else_changes():
    base, full = layered_graph(2000), layered_graph(2000, cpu_only=0.0)
    gpu = list(base.device_types).index("GPU")
    cpu_only = np.isnan(base.compute_cost[:, gpu])
    assert 0 < cpu_only.sum() < 0.05 * 2000  # the default: about 2% of ops
    assert not np.isnan(full.compute_cost).any()
    # Same draws: the costs that both have, the edges and the memory are the same.
    assert np.array_equal(base.compute_cost[~cpu_only], full.compute_cost[~cpu_only])
    assert np.array_equal(base.edge_src, full.edge_src) and np.array_equal(base.edge_bytes, full.edge_bytes)
    assert np.array_equal(base.persistent_bytes, full.persistent_bytes)


def test_every_op_cpu_only():
    g = layered_graph(500, cpu_only=1.0)
    assert np.isnan(g.compute_cost[:, list(g.device_types).index("GPU")]).all()
