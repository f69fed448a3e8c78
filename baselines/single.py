"""Single-device baselines of Mirhoseini et al. (ICML 2017), and TF's default placer.

- "single_cpu": every op on the first CPU.
- "single_gpu": every op with a GPU kernel on GPU 0, the rest on the CPU.
- "tf_default": what TensorFlow's placer does with no device annotations:
  every op that can on GPU 0; a colocation set goes to the CPU if any member
  lacks a GPU kernel; and its two placer heuristics (tensorflow/core/
  common_runtime/placer.cc): a generator op (no inputs, exactly one
  consumer) goes with its consumer, and a metadata op (Shape, ShapeN, Size,
  Rank) goes with its input.

All three then pass through baselines.common (kernel and colocation rules).
"""

from __future__ import annotations

import numpy as np

from baselines import common
from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

METADATA_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})


def place_single_cpu(graph: OpGraph, cluster: Cluster, *, seed=None, **options) -> Placement:
    """Places every op on the first CPU (ops without a CPU kernel: fallback).

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: unused (deterministic).
      **options: none; any raises InputError.
    """
    del seed
    common.refuse_options("single_cpu", options)
    dev = np.full(graph.num_ops, common.first_cpu(cluster), dtype=np.int64)
    return common.finish(graph, cluster, dev, "single_cpu")


def place_single_gpu(graph: OpGraph, cluster: Cluster, *, seed=None, **options) -> Placement:
    """Places every op with a GPU kernel on GPU 0, the rest on the CPU.

    Raises:
      InputError: the cluster has no GPU.
    """
    del seed
    common.refuse_options("single_gpu", options)
    gpu = common.gpu_indices(cluster, "single_gpu")[0]
    dev = np.full(graph.num_ops, gpu, dtype=np.int64)
    return common.finish(graph, cluster, dev, "single_gpu")


def place_start(graph: OpGraph, cluster: Cluster, *, seed=None) -> Placement:
    """Where a search starts by default: single_gpu, or single_cpu on a cluster without a GPU (everything on
    one device either way; placer-train gives its methods the fastest baseline instead there)."""
    if cluster.indices_of_type("GPU"):
        return place_single_gpu(graph, cluster, seed=seed)
    return place_single_cpu(graph, cluster, seed=seed)


def place_tf_default(graph: OpGraph, cluster: Cluster, *, seed=None, **options) -> Placement:
    """Imitates TensorFlow's default placer on a GPU machine (module docstring).

    Raises:
      InputError: the cluster has no GPU.
    """
    del seed
    common.refuse_options("tf_default", options)
    gpu = common.gpu_indices(cluster, "tf_default")[0]
    dev = common.legalize(graph, cluster, np.full(graph.num_ops, gpu, dtype=np.int64))
    n = graph.num_ops
    indeg = np.bincount(graph.edge_dst, minlength=n)
    outdeg = np.bincount(graph.edge_src, minlength=n)
    ok = common.supported(graph, cluster)
    # Generators: the consumer has a higher index, metadata ops read a lower
    # one; one backward pass settles generators, one forward pass metadata.
    for e in np.flatnonzero((indeg[graph.edge_src] == 0) & (outdeg[graph.edge_src] == 1))[::-1]:
        s, d = graph.edge_src[e], graph.edge_dst[e]
        if ok[s, dev[d]] and not graph.colocation[s]:
            dev[s] = dev[d]
    first_in = np.full(n, -1, dtype=np.int64)
    first_in[graph.edge_dst[::-1]] = graph.edge_src[::-1]
    for i in range(n):
        if graph.types[i] in METADATA_OPS and first_in[i] >= 0 and not graph.colocation[i]:
            if ok[i, dev[first_in[i]]]:
                dev[i] = dev[first_in[i]]
    return common.finish(graph, cluster, dev, "tf_default")
