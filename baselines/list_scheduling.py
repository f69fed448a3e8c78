"""Memory-constrained list-scheduling placers of Baechi (Jeon et al., SoCC 2020).

- "m_topo": ops in topological order fill one device after another.
- "m_etf": earliest task first (Hwang et al., 1989) with device memory limits.
- "m_sct": ETF guided by favourite children from the LP relaxation of the
  small-communication-time problem (Hanen and Munier, 1995); in baselines.sct.

Common model (as Baechi's): an op takes cost[type] / speed seconds on a
device; a data edge between two devices takes latency + bytes / bandwidth
(control edges and 0-byte edges cost nothing); a device runs one op at a
time; the memory an op needs (persistent bytes + output bytes) stays charged
to its device for the whole step, and an op goes only where it fits. An op
that fits nowhere goes to the allowed device with the most free memory (the
measurer then reports the out-of-memory failure). Targets are the GPUs by
default (Baechi places on GPUs); ops with no GPU kernel go to their fallback
device (baselines.common). A colocation set is pinned to the device of its
first scheduled member. Everything then passes through baselines.common.
"""

from __future__ import annotations

import dataclasses
import heapq

import numpy as np

from baselines import common
from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The schedule a list scheduler built.

    Attributes:
      devices: [n] device index per op.
      start: [n] seconds, when each op starts.
      finish: [n] seconds, when each op ends.
      makespan: seconds, the last finish.
    """

    devices: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    makespan: float


def targets_of(cluster: Cluster, method: str, use_cpu: bool) -> list[int]:
    """Returns the target devices: all of them, or the GPUs (InputError if none)."""
    return list(range(cluster.num_devices)) if use_cpu else common.gpu_indices(cluster, method)


def op_memory(graph: OpGraph) -> np.ndarray:
    """Returns [n] bytes each op keeps on its device: persistent + output."""
    return (graph.persistent_bytes + graph.output_bytes).astype(np.float64)


def _in_edges(graph: OpGraph):
    """Merged in-edges as CSR: (starts [n+1], producers, bytes), by consumer."""
    src, dst, b = common.merged_edges(graph)
    order = np.argsort(dst, kind="stable")
    starts = np.zeros(graph.num_ops + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=graph.num_ops), out=starts[1:])
    return starts, src[order], b[order].astype(np.float64), (src, dst, b)


def _colocation_map(graph: OpGraph) -> tuple[np.ndarray, list[np.ndarray]]:
    """Returns ([n] set id or -1, list of member arrays)."""
    sets = common.colocation_sets(graph)
    sid = np.full(graph.num_ops, -1, dtype=np.int64)
    for k, members in enumerate(sets):
        sid[members] = k
    return sid, sets


def etf_schedule(
    graph: OpGraph,
    cluster: Cluster,
    targets: list[int],
    *,
    favourite: np.ndarray | None = None,
) -> Schedule:
    """Memory-constrained earliest-task-first list scheduling.

    Repeatedly schedules the (ready op, device) pair with the earliest start
    time, max(device free, data arrival on that device); among ops ready at
    the same time on a device, the one whose data arrived first, then the one
    with the longest path to the sink. With `favourite` (m-SCT), a favourite
    child whose favourite parent's device has room goes to that device.

    Args:
      graph: the op graph (not modified).
      cluster: the cluster.
      targets: device indices ops may go to (plus fallback devices).
      favourite: [n] favourite child of each op, or -1; None for plain ETF.

    Returns:
      The Schedule (device indices before the legality rules).
    """
    n, nd = graph.num_ops, cluster.num_devices
    times = np.nan_to_num(common.op_times(graph, cluster), nan=0.0)
    mask = common.allowed(graph, cluster, targets)
    need = op_memory(graph)
    cap = cluster.memory()
    used = np.zeros(nd)
    lat, bw = cluster.latency, cluster.bandwidth
    starts, preds, pbytes, (src, dst, _) = _in_edges(graph)
    indeg = np.diff(starts).astype(np.int64)
    sorder = np.argsort(src, kind="stable")
    sstarts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=sstarts[1:])
    succs = dst[sorder]
    prio = -_bottom_level(graph, times[:, targets].mean(axis=1), src, dst)
    sid, sets = _colocation_map(graph)
    pinned = np.full(n, -1, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    if favourite is not None:
        has = np.flatnonzero(favourite >= 0)
        parent[favourite[has]] = has

    dev = np.full(n, -1, dtype=np.int64)
    start = np.zeros(n)
    finish = np.zeros(n)
    free = np.zeros(nd)
    forced = np.zeros(n, dtype=bool)
    remaining = np.zeros(n, dtype=np.int64)
    ready_at = np.zeros((n, nd))
    heaps: list[list] = [[] for _ in range(nd)]

    def push(v: int, where: np.ndarray, force: bool) -> None:
        forced[v] = force
        remaining[v] = len(where)
        for d in where:
            heapq.heappush(heaps[d], (ready_at[v, d], prio[v], v))

    def force_on_roomiest(v: int) -> None:
        cand = np.flatnonzero(mask[v]) if pinned[v] < 0 else np.array([pinned[v]])
        d = cand[np.argmax((cap - used)[cand])]
        push(v, np.array([d]), True)

    def make_ready(v: int) -> None:
        a, b = starts[v], starts[v + 1]
        if b > a:
            p = preds[a:b]
            pd = dev[p]
            comm = np.where(pbytes[a:b, None] > 0, lat[pd] + pbytes[a:b, None] / bw[pd], 0.0)
            ready_at[v] = (finish[p][:, None] + comm).max(axis=0)
        if pinned[v] >= 0:
            where = np.array([pinned[v]])
        else:
            where = np.flatnonzero(mask[v])
            fp = parent[v]
            if fp >= 0 and dev[fp] >= 0 and mask[v, dev[fp]]:
                where = np.array([dev[fp]])
        fits = where[used[where] + need[v] <= cap[where]]
        if fits.size:
            push(v, fits, False)
        else:
            force_on_roomiest(v)

    for v in np.flatnonzero(indeg == 0):
        make_ready(int(v))
    for _ in range(n):
        best = None
        for d in range(nd):
            h = heaps[d]
            while h:
                v = h[0][2]
                if dev[v] >= 0 or (pinned[v] >= 0 and pinned[v] != d):
                    heapq.heappop(h)
                    continue
                if not forced[v] and used[d] + need[v] > cap[d]:
                    heapq.heappop(h)
                    remaining[v] -= 1
                    if remaining[v] == 0:
                        force_on_roomiest(v)
                    continue
                break
            if h:
                key = (max(free[d], h[0][0]), h[0][0], h[0][1], d)
                if best is None or key < best:
                    best = key
        d = best[3]
        v = heapq.heappop(heaps[d])[2]
        dev[v] = d
        start[v] = best[0]
        finish[v] = start[v] + times[v, d]
        free[d] = finish[v]
        used[d] += need[v]
        if sid[v] >= 0 and pinned[v] < 0:
            members = sets[sid[v]]
            pinned[members] = d
            for u in members:
                if dev[u] < 0 and remaining[u] > 0:
                    push(int(u), np.array([d]), True)
        for w in succs[sstarts[v] : sstarts[v + 1]]:
            indeg[w] -= 1
            if indeg[w] == 0:
                make_ready(int(w))
    return Schedule(dev, start, finish, float(finish.max()) if n else 0.0)


def _bottom_level(graph: OpGraph, w: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Returns [n] seconds of the longest path from each op to a sink (op times only)."""
    bl = w.astype(np.float64).copy()
    order = np.argsort(-src, kind="stable")
    for s, d in zip(src[order].tolist(), dst[order].tolist(), strict=True):
        if w[s] + bl[d] > bl[s]:
            bl[s] = w[s] + bl[d]
    return bl


def topo_assign(graph: OpGraph, cluster: Cluster, targets: list[int]) -> np.ndarray:
    """Baechi's m-TOPO: fill the targets one after another in topological order.

    Each target takes ops, in the graph's topological order, until its
    compute reaches its share of the total (proportional to its throughput,
    baselines.common.device_power) or the next op would overflow its memory;
    then the next target takes over. The last target takes the rest. An op
    with no kernel on the current target goes to the first target that
    supports it and has room, else its fallback device; an op that fits
    nowhere goes to the allowed device with the most free memory.

    Returns:
      [n] device indices (before the legality rules).
    """
    n = graph.num_ops
    mask = common.allowed(graph, cluster, targets)
    w = common.compute_weight(graph, cluster)
    need = op_memory(graph)
    cap = cluster.memory()
    used = np.zeros(cluster.num_devices)
    load = np.zeros(cluster.num_devices)
    power = common.device_power(graph, cluster)
    tw = power[targets] / power[targets].sum()
    share = dict(zip(targets, tw * w[mask[:, targets].any(axis=1)].sum(), strict=True))
    sid, sets = _colocation_map(graph)
    dev = np.full(n, -1, dtype=np.int64)
    k = 0
    for v in range(n):
        if dev[v] >= 0:
            continue
        d = -1
        while mask[v, targets[k]]:
            t = targets[k]
            last = k == len(targets) - 1
            if used[t] + need[v] <= cap[t] and (last or load[t] < share[t]):
                d = t
                break
            if last:
                break
            k += 1
        if d < 0:
            cand = np.flatnonzero(mask[v])
            room = cand[used[cand] + need[v] <= cap[cand]]
            d = int(room[0]) if room.size else int(cand[np.argmax((cap - used)[cand])])
        group = sets[sid[v]] if sid[v] >= 0 else np.array([v])
        dev[group] = d
        used[d] += need[group].sum()
        load[d] += w[group].sum()
    return dev


def place_m_topo(graph: OpGraph, cluster: Cluster, *, seed=None, use_cpu: bool = False, **options) -> Placement:
    """Baechi's m-TOPO placement (see `topo_assign`).

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: unused (deterministic).
      use_cpu: also fill the CPU(s) (default: GPUs only, as Baechi).
      **options: none others; any other raises InputError.

    Raises:
      InputError: `use_cpu` is False and the cluster has no GPU.
    """
    del seed
    common.refuse_options("m_topo", options, ("use_cpu",))
    dev = topo_assign(graph, cluster, targets_of(cluster, "m_topo", use_cpu))
    return common.finish(graph, cluster, dev, "m_topo", use_cpu=use_cpu)


def place_m_etf(graph: OpGraph, cluster: Cluster, *, seed=None, use_cpu: bool = False, **options) -> Placement:
    """Baechi's m-ETF placement (see `etf_schedule`).

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: unused (deterministic).
      use_cpu: also schedule on the CPU(s) (default: GPUs only, as Baechi).
      **options: none others; any other raises InputError.

    Raises:
      InputError: `use_cpu` is False and the cluster has no GPU.
    """
    del seed
    common.refuse_options("m_etf", options, ("use_cpu",))
    sched = etf_schedule(graph, cluster, targets_of(cluster, "m_etf", use_cpu))
    return common.finish(graph, cluster, sched.devices, "m_etf", use_cpu=use_cpu, estimated_step_time=sched.makespan)
