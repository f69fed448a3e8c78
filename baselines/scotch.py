"""The Scotch baseline of Mirhoseini et al. (ICML 2017), via the real Scotch library.

The paper's Scotch baseline maps the op graph onto the cluster with the
Scotch static mapper (Pellegrini and Roman, 1996), taking "the compute cost
of ops and the data sizes of the edges" as weights and the devices' speeds
and links as the target. Here (through the `pyscotch` bindings):

- Source graph: one vertex per op, its load the op's compute (seconds on a
  reference GPU, else mean over the cluster's device types; see
  baselines.common.compute_weight), scaled to integers; one undirected edge
  per pair of ops joined by data, its load the bytes sent (both directions
  and parallel edges summed), scaled to integers of at least 1.
- Target architecture: the devices as processors weighted by their
  throughput on this graph (baselines.common.device_power). With a uniform
  interconnect this is Scotch's weighted complete graph ("cmpltw"); with
  per-pair bandwidths it is a decomposition-defined architecture built by
  Scotch (SCOTCH_archBuild2) from the complete graph of devices whose edge
  loads are the inverse bandwidths scaled to integers (distances).
- Determinism: libscotch is built with threads, and by default its threaded
  algorithms (the coarsening's matching) race: about 1 fresh process in 6
  mapped the tiny NMT differently with the same seed. The mapping runs in a
  Scotch context with its deterministic option on, its random generator
  seeded with `seed` (0 if None) and reset, as is the global generator that
  building the target architecture draws from.

Colocation and kernel constraints are applied afterwards (baselines.common).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from ctypes import byref

import numpy as np

from baselines import common
from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

VERTEX_TOTAL = 10**8  # sum of integer vertex loads after scaling
EDGE_MAX = 10**6  # largest integer edge load after scaling
WEIGHT_MAX = 1000  # largest integer processor weight
OPTION_DETERMINISTIC = 0  # SCOTCH_OPTIONNUMDETERMINISTIC in Scotch 7's scotch.h
DISTANCE_MAX = 1000  # largest integer link distance


def _scotch():
    """Imports pyscotch, hiding the library's load banner on stderr."""
    with contextlib.redirect_stderr(io.StringIO()):
        import pyscotch  # noqa: PLC0415
        from pyscotch import libscotch  # noqa: PLC0415

        libscotch.get_scotch_dtype()
    return pyscotch, libscotch


def source_graph(graph: OpGraph, cluster: Cluster, targets: Sequence[int]):
    """Returns the integer CSR arrays of the undirected Scotch source graph.

    Args:
      graph: the op graph.
      cluster: the cluster (for the compute weights).
      targets: devices mapped onto; ops that run on none of them get load 0.

    Returns:
      (verttab [n+1], edgetab [2m], velotab [n], edlotab [2m]) int64.
    """
    n = graph.num_ops
    w = common.compute_weight(graph, cluster)
    ok = common.supported(graph, cluster)[:, list(targets)].any(axis=1)
    w = np.where(ok, w, 0.0)
    total = w.sum()
    velo = np.zeros(n, dtype=np.int64)
    if total > 0:
        velo = np.rint(w * (VERTEX_TOTAL / total)).astype(np.int64)
        velo[(w > 0) & (velo == 0)] = 1
    src, dst, b = common.merged_edges(graph, symmetric=True)
    bmax = b.max() if b.size else 0
    edlo = np.ones(src.size, dtype=np.int64)
    if bmax > 0:
        edlo = np.maximum(1, np.rint(b * (EDGE_MAX / bmax))).astype(np.int64)
    vert = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=vert[1:])
    return vert, dst.astype(np.int64), velo, edlo


def link_distances(cluster: Cluster, targets: Sequence[int]) -> np.ndarray:
    """Returns [k, k] int64 distances between targets: inverse bandwidth, min 1."""
    t = list(targets)
    bw = cluster.bandwidth[np.ix_(t, t)]
    inv = 1.0 / np.minimum(bw, bw.T)
    off = ~np.eye(len(t), dtype=bool)
    if not off.any():
        return np.zeros((len(t), len(t)), dtype=np.int64)
    dist = np.clip(np.rint(inv / inv[off].min()), 1, DISTANCE_MAX).astype(np.int64)
    np.fill_diagonal(dist, 0)
    return dist


def _architecture(pyscotch, lib, weights: np.ndarray, dist: np.ndarray):
    arch = pyscotch.Architecture()
    k = len(weights)
    off = ~np.eye(k, dtype=bool)
    if k == 1 or np.all(dist[off] == dist[off][0]):
        arch.complete_weighted(k, weights)
        return arch, None
    iu, ju = np.nonzero(off)
    tgt = pyscotch.Graph()
    tgt.build(np.arange(0, k * (k - 1) + 1, k - 1), ju, weights, dist[iu, ju])
    ret = lib.SCOTCH_archBuild2(byref(arch._arch), byref(tgt._graph), lib.SCOTCH_Num(0), None)
    if ret != 0:
        raise RuntimeError(f"SCOTCH_archBuild2 failed ({ret})")
    return arch, tgt


def scotch_map(
    graph: OpGraph,
    cluster: Cluster,
    targets: Sequence[int],
    *,
    seed: int | None = None,
    strategy: str | None = None,
) -> np.ndarray:
    """Maps the op graph onto `targets` with Scotch's static mapper.

    Args:
      graph: the op graph (not modified).
      cluster: the cluster.
      targets: device indices to map onto, in the architecture's order.
      seed: Scotch random seed (0 if None).
      strategy: a Scotch mapping strategy string; None = Scotch's default.

    Returns:
      [n] int64 device indices (before the legality rules).
    """
    targets = list(targets)
    n = graph.num_ops
    if len(targets) == 1 or n < 2:
        return np.full(n, targets[0], dtype=np.int64)
    pyscotch, lib = _scotch()
    # Building a decomposition-defined architecture draws random numbers too.
    pyscotch.random_seed(int(seed or 0))
    pyscotch.random_reset()
    power = common.device_power(graph, cluster)[targets]
    weights = np.maximum(1, np.rint(power / power.max() * WEIGHT_MAX)).astype(np.int64)
    arch, tgt = _architecture(pyscotch, lib, weights, link_distances(cluster, targets))
    g = pyscotch.Graph()
    context = pyscotch.Context()
    bound = None
    try:
        g.build(*source_graph(graph, cluster, targets))
        strat = pyscotch.Strategy(strategy) if strategy else None
        context.option_set(OPTION_DETERMINISTIC, 1)
        context.random_seed(int(seed or 0))
        context.random_reset()
        bound = context.bind_graph(g)
        parts = np.asarray(bound.map(arch, strat), dtype=np.int64)
    finally:
        if bound is not None:
            bound.close()
        context.close()
        g.close()
        arch.close()
        if tgt is not None:
            tgt.close()
    return np.asarray(targets, dtype=np.int64)[parts]


def place(graph: OpGraph, cluster: Cluster, *, seed=None, strategy: str | None = None, **options) -> Placement:
    """The paper's Scotch baseline: static mapping over all devices, CPU included.

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: Scotch random seed (0 if None).
      strategy: optional Scotch mapping strategy string.
      **options: none others; any other raises InputError.
    """
    common.refuse_options("scotch", options, ("strategy",))
    targets = list(range(cluster.num_devices))
    dev = scotch_map(graph, cluster, targets, seed=seed, strategy=strategy)
    return common.finish(graph, cluster, dev, "scotch", seed=seed)
