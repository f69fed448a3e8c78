"""The MinCut baseline of Mirhoseini et al. (ICML 2017).

The paper describes MinCut as the Scotch mapper modified to consider only
the GPUs as devices (balancing compute across them while minimising
inter-device communication); ops that must run on the CPU still do. So:
baselines.scotch's mapping onto the GPUs only, then the legality rules
(CPU-only ops to the CPU, colocation sets together).
"""

from __future__ import annotations

from baselines import common
from baselines.scotch import scotch_map
from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


def place(graph: OpGraph, cluster: Cluster, *, seed=None, strategy: str | None = None, **options) -> Placement:
    """Scotch static mapping onto the GPUs only.

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: Scotch random seed (0 if None).
      strategy: optional Scotch mapping strategy string.
      **options: none others; any other raises InputError.

    On a cluster without GPUs the mapping spreads over every device (Scotch's own mapping then).
    """
    common.refuse_options("mincut", options, ("strategy",))
    targets = common.spread_targets(cluster)
    dev = scotch_map(graph, cluster, targets, seed=seed, strategy=strategy)
    return common.finish(graph, cluster, dev, "mincut", seed=seed)
