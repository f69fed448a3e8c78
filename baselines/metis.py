"""METIS k-way partitioning baseline (Karypis and Kumar, 1998), via `pymetis`.

The op graph becomes an undirected METIS graph: vertex weights are the ops'
compute (baselines.common.compute_weight, scaled to integers), edge weights
the bytes between two ops (both directions and parallel edges summed, scaled
to integers of at least 1). It is cut into one part per GPU by default (the
CPU is left out as in the MinCut baseline; `use_cpu=True` makes one part per
device), with target part weights proportional to each device's throughput
(baselines.common.device_power). Part k goes to the k-th target device;
then the legality rules (baselines.common) apply.
"""

from __future__ import annotations

import numpy as np

from baselines import common
from baselines.scotch import source_graph
from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


def place(graph: OpGraph, cluster: Cluster, *, seed=None, use_cpu: bool = False, **options) -> Placement:
    """METIS k-way partition of the op graph onto the GPUs (or all devices).

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: METIS random seed (0 if None).
      use_cpu: partition over every device instead of the GPUs only.
      **options: none others; any other raises InputError.

    On a cluster without GPUs the partition spreads over every device.
    """
    common.refuse_options("metis", options, ("use_cpu",))
    targets = list(range(cluster.num_devices)) if use_cpu else common.spread_targets(cluster)
    n = graph.num_ops
    if len(targets) == 1 or n < 2:
        dev = np.full(n, targets[0], dtype=np.int64)
    else:
        import pymetis  # noqa: PLC0415 (a compiled extension, loaded when used)

        xadj, adjncy, vw, ew = source_graph(graph, cluster, targets)
        # METIS refuses an all-zero weight vector; a zero-cost graph balances counts.
        vw = vw if vw.sum() > 0 else np.ones(n, dtype=np.int64)
        power = common.device_power(graph, cluster)[targets]
        tp = power / power.sum()
        tp = tp * (1.0 - 1e-9)  # METIS asks the target fractions to sum to at most 1
        part = pymetis.part_graph(
            len(targets),
            xadj=xadj,
            adjncy=adjncy,
            vweights=vw,
            eweights=ew if len(ew) else None,
            tpwgts=list(tp),
            options=pymetis.Options(seed=int(seed or 0)),
        )
        dev = np.asarray(targets, dtype=np.int64)[np.asarray(part.vertex_part, dtype=np.int64)]
    return common.finish(graph, cluster, dev, "metis", seed=seed, use_cpu=use_cpu)
