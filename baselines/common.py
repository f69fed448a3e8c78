"""Legality rules and graph views shared by every baseline (no TensorFlow).

Every baseline ends with `finish`, which applies the two rules a placement
must obey whatever algorithm produced it:

1. Kernels: an op whose cost for a device's type is NaN has no kernel there.
   Such an op moves to its fallback device: the first CPU when the op runs on
   CPUs, otherwise the fastest device (least cost / speed) that supports it.
   An op with no known cost for any device type of the cluster (costs not
   attached) is treated as runnable everywhere.
2. Colocation: ops sharing a non-empty colocation key share one device. The
   set goes to the device, among those supporting every member, that already
   holds the largest total compute of the set (ties: the device of the set's
   first op in topological order). If no member sits on such a device, the
   set goes to the first CPU supporting every member, else to the fastest
   device supporting every member; if no device supports every member, to
   the first member's device (the measurer then reports the failure).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from placer.core.cluster import Cluster
from placer.core.colocation import colocation_sets
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


def refuse_options(method: str, options: dict, valid: Sequence[str] = ()) -> None:
    """Refuses options a baseline does not take, rather than ignoring them.

    Args:
      method: the baseline's registry name, for the message.
      options: the `**options` the baseline was called with, beyond its own keywords.
      valid: the baseline's own keyword options, listed in the message.

    Raises:
      InputError: `options` is not empty.
    """
    if options:
        raise InputError(
            f"{method} placement: unknown option {sorted(options)[0]!r} (valid: {', '.join(valid) or 'none'})"
        )


def device_types(cluster: Cluster) -> np.ndarray:
    """Returns [D] device type strings."""
    return np.array([d.type for d in cluster.devices], dtype=object)


def op_times(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [n, D] seconds each op's kernel takes on each device (`Cluster.op_seconds`; NaN = no kernel).

    An op with no known cost on any device type of the cluster costs 0 s
    everywhere (costs not attached; nothing better to assume).
    """
    t = cluster.op_seconds(graph, dispatch=False)
    unknown = np.isnan(t).all(axis=1)
    t[unknown] = 0.0
    return t


def supported(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [n, D] bool: the op has a kernel for the device's type."""
    return ~np.isnan(op_times(graph, cluster))


def gpu_indices(cluster: Cluster, method: str) -> list[int]:
    """Returns the indices of the cluster's GPUs.

    Raises:
      InputError: the cluster has no GPU.
    """
    gpus = cluster.indices_of_type("GPU")
    if not gpus:
        raise InputError(f"{method}: cluster {cluster.name!r} has no GPU, but this baseline places ops on GPUs")
    return gpus


def spread_targets(cluster: Cluster) -> list[int]:
    """The devices a partitioner spreads a graph over: the GPUs, or every device of a cluster without one
    (its CPUs are all there is to spread over)."""
    return cluster.indices_of_type("GPU") or list(range(cluster.num_devices))


def first_cpu(cluster: Cluster) -> int:
    """Returns the index of the first CPU, or of device 0 when there is none."""
    cpus = cluster.indices_of_type("CPU")
    return cpus[0] if cpus else 0


def fallback_devices(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [n] the device each op goes to when its chosen one lacks a kernel.

    The first CPU if the op runs on CPUs, else the fastest supporting device,
    else the first CPU (no device supports it; the measurer reports it).
    """
    t = op_times(graph, cluster)
    ok = ~np.isnan(t)
    cpu = first_cpu(cluster)
    fastest = np.argmin(np.where(ok, t, np.inf), axis=1)
    out = np.where(ok[:, cpu], cpu, fastest)
    out[~ok.any(axis=1)] = cpu
    return out.astype(np.int64)


def allowed(graph: OpGraph, cluster: Cluster, targets: Sequence[int]) -> np.ndarray:
    """Returns [n, D] bool: devices among `targets` an op may go to.

    An op supported by none of `targets` may go only to its fallback device
    (so CPU-only ops reach the CPU even when the CPU is not a target).
    """
    mask = supported(graph, cluster)
    tmask = np.zeros(cluster.num_devices, dtype=bool)
    tmask[list(targets)] = True
    mask &= tmask[None, :]
    none = ~mask.any(axis=1)
    if none.any():
        fb = fallback_devices(graph, cluster)
        mask[np.flatnonzero(none), fb[none]] = True
    return mask


def compute_weight(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [n] seconds of compute per op, to balance and to weigh by.

    The cost on a reference GPU when the cluster has GPUs and the op has a GPU
    cost, else the mean of the op's known costs over the cluster's device
    types; 0 when no cost is known.
    """
    types = sorted({d.type for d in cluster.devices})
    cols = np.stack([graph.cost_for(t) for t in types], axis=1)
    known = ~np.isnan(cols)
    mean = np.where(known, cols, 0.0).sum(axis=1) / np.maximum(known.sum(axis=1), 1)
    if "GPU" in types:
        gpu = graph.cost_for("GPU")
        mean = np.where(np.isnan(gpu), mean, gpu)
    return np.nan_to_num(mean, nan=0.0)


def device_power(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [D] relative throughput of each device on this graph (max 1).

    Speed divided by the total cost, on the device's type, of the ops that
    run on every type of the cluster: a GPU 10x faster than the CPU on this
    graph's ops gets 10x the power.
    """
    types = [d.type for d in cluster.devices]
    cols = np.stack([graph.cost_for(t) for t in types], axis=1)
    common = ~np.isnan(cols).any(axis=1)
    total = cols[common].sum(axis=0) if common.any() else np.zeros(len(types))
    total = np.where(total > 0, total, 1.0)
    power = cluster.speeds() / total
    return power / power.max()


def merged_edges(graph: OpGraph, *, symmetric: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns (src, dst, bytes) with parallel edges merged (bytes add up).

    Args:
      graph: the op graph.
      symmetric: if True, each edge also appears reversed and (u, v) and
        (v, u) merge, giving both arcs of an undirected graph, sorted by src.

    Returns:
      int64 arrays [m'] src, dst and bytes, sorted by (src, dst).
    """
    src = graph.edge_src.astype(np.int64)
    dst = graph.edge_dst.astype(np.int64)
    b = graph.edge_bytes.astype(np.int64)
    if symmetric:
        src, dst, b = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([b, b])
    n = max(graph.num_ops, 1)
    key = src * n + dst
    uniq, inv = np.unique(key, return_inverse=True)
    total = np.bincount(inv, weights=b, minlength=len(uniq)).astype(np.int64)
    return uniq // n, uniq % n, total


def legalize(graph: OpGraph, cluster: Cluster, devices: np.ndarray) -> np.ndarray:
    """Applies the kernel and colocation rules (module docstring) to a placement.

    Args:
      graph: the op graph.
      cluster: the target cluster.
      devices: [n] device index per op; not modified.

    Returns:
      [n] int64 legal device indices.
    """
    dev = np.array(devices, dtype=np.int64)
    ok = supported(graph, cluster)
    bad = ~ok[np.arange(graph.num_ops), dev]
    if bad.any():
        dev[bad] = fallback_devices(graph, cluster)[bad]
    sets = colocation_sets(graph)
    if not sets:
        return dev
    weight = compute_weight(graph, cluster)
    t = op_times(graph, cluster)
    cpus = cluster.indices_of_type("CPU")
    for members in sets:
        common = ok[members].all(axis=0)
        cand = np.flatnonzero(common)
        if cand.size == 0:
            dev[members] = dev[members[0]]
            continue
        held = np.bincount(dev[members], weights=weight[members] + 1e-30, minlength=cluster.num_devices)
        held = np.where(common, held, 0.0)
        if held.max() > 0:
            best = np.flatnonzero(held == held.max())
            target = dev[members[0]] if dev[members[0]] in best else best[0]
        else:
            cpu_ok = [c for c in cpus if common[c]]
            target = cpu_ok[0] if cpu_ok else cand[np.argmin(t[members][:, cand].sum(axis=0))]
        dev[members] = target
    return dev


def finish(graph: OpGraph, cluster: Cluster, devices: np.ndarray, method: str, **metadata) -> Placement:
    """Legalises `devices` and wraps them in a Placement tagged with `method`."""
    dev = legalize(graph, cluster, devices)
    return Placement.from_ops(graph, dev, cluster.device_names, method=method, cluster=cluster.name, **metadata)
