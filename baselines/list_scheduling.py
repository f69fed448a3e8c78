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
default (Baechi places on GPUs; every device of a cluster without one); ops with no GPU kernel go to their fallback
device (baselines.common). A colocation set is pinned to the device of its
first scheduled member. Everything then passes through baselines.common.
"""

from __future__ import annotations

import dataclasses
import heapq

import numpy as np

from baselines import common
from placer.core import dag
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
    """Returns the target devices: all of them, or the GPUs (all of them on a cluster without a GPU)."""
    del method
    return list(range(cluster.num_devices)) if use_cpu else common.spread_targets(cluster)


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
    etf = _Etf(graph, cluster, targets, favourite)
    for v in np.flatnonzero(etf.indeg == 0):
        etf.make_ready(int(v))
    for _ in range(graph.num_ops):
        etf.assign(*etf.pick())
    f = etf.finish
    return Schedule(etf.dev, etf.start, f, float(f.max()) if graph.num_ops else 0.0)


class _Etf:
    """The state of one ETF schedule: per-device heaps of ready ops, memory in use, finish times."""

    def __init__(self, graph: OpGraph, cluster: Cluster, targets: list[int], favourite: np.ndarray | None):
        n, nd = graph.num_ops, cluster.num_devices
        self.nd = nd
        self.times = np.nan_to_num(common.op_times(graph, cluster), nan=0.0)
        self.mask = common.allowed(graph, cluster, targets)
        self.need = op_memory(graph)
        self.cap = cluster.memory()
        self.used = np.zeros(nd)
        self.lat, self.bw = cluster.latency, cluster.bandwidth
        self.starts, self.preds, self.pbytes, (src, dst, _) = _in_edges(graph)
        self.indeg = np.diff(self.starts).astype(np.int64)
        sorder = np.argsort(src, kind="stable")
        self.sstarts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=self.sstarts[1:])
        self.succs = dst[sorder]
        self.prio = -dag.bottom_levels(self.times[:, targets].mean(axis=1), src, dst)
        self.sid, self.sets = _colocation_map(graph)
        self.pinned = np.full(n, -1, dtype=np.int64)
        self.parent = np.full(n, -1, dtype=np.int64)
        if favourite is not None:
            has = np.flatnonzero(favourite >= 0)
            self.parent[favourite[has]] = has
        self.dev = np.full(n, -1, dtype=np.int64)
        self.start = np.zeros(n)
        self.finish = np.zeros(n)
        self.free = np.zeros(nd)
        self.forced = np.zeros(n, dtype=bool)
        self.remaining = np.zeros(n, dtype=np.int64)
        self.ready_at = np.zeros((n, nd))
        self.heaps: list[list] = [[] for _ in range(nd)]

    def push(self, v: int, where: np.ndarray, force: bool) -> None:
        self.forced[v] = force
        self.remaining[v] = len(where)
        for d in where:
            heapq.heappush(self.heaps[d], (self.ready_at[v, d], self.prio[v], v))

    def force_on_roomiest(self, v: int) -> None:
        cand = np.flatnonzero(self.mask[v]) if self.pinned[v] < 0 else np.array([self.pinned[v]])
        d = cand[np.argmax((self.cap - self.used)[cand])]
        self.push(v, np.array([d]), True)

    def make_ready(self, v: int) -> None:
        """Queues op v, all of whose producers are scheduled, on the devices it may use."""
        a, b = self.starts[v], self.starts[v + 1]
        if b > a:
            p = self.preds[a:b]
            pd = self.dev[p]
            comm = np.where(self.pbytes[a:b, None] > 0, self.lat[pd] + self.pbytes[a:b, None] / self.bw[pd], 0.0)
            self.ready_at[v] = (self.finish[p][:, None] + comm).max(axis=0)
        if self.pinned[v] >= 0:
            where = np.array([self.pinned[v]])
        else:
            where = np.flatnonzero(self.mask[v])
            fp = self.parent[v]
            if fp >= 0 and self.dev[fp] >= 0 and self.mask[v, self.dev[fp]]:
                where = np.array([self.dev[fp]])
        fits = where[self.used[where] + self.need[v] <= self.cap[where]]
        if fits.size:
            self.push(v, fits, False)
        else:
            self.force_on_roomiest(v)

    def _head(self, d: int) -> bool:
        """Drops stale entries from device d's heap; whether an op is left on top."""
        h = self.heaps[d]
        while h:
            v = h[0][2]
            if self.dev[v] >= 0 or (self.pinned[v] >= 0 and self.pinned[v] != d):
                heapq.heappop(h)
                continue
            if not self.forced[v] and self.used[d] + self.need[v] > self.cap[d]:
                heapq.heappop(h)
                self.remaining[v] -= 1
                if self.remaining[v] == 0:
                    self.force_on_roomiest(v)
                continue
            return True
        return False

    def pick(self) -> tuple[int, float]:
        """(device, start time) of the earliest-starting ready op."""
        best = None
        for d in range(self.nd):
            if self._head(d):
                h = self.heaps[d]
                key = (max(self.free[d], h[0][0]), h[0][0], h[0][1], d)
                if best is None or key < best:
                    best = key
        return best[3], best[0]

    def assign(self, d: int, at: float) -> None:
        """Runs the top op of device d's heap there from time `at`; readies its successors."""
        v = heapq.heappop(self.heaps[d])[2]
        self.dev[v] = d
        self.start[v] = at
        self.finish[v] = at + self.times[v, d]
        self.free[d] = self.finish[v]
        self.used[d] += self.need[v]
        if self.sid[v] >= 0 and self.pinned[v] < 0:
            members = self.sets[self.sid[v]]
            self.pinned[members] = d
            for u in members:
                if self.dev[u] < 0 and self.remaining[u] > 0:
                    self.push(int(u), np.array([d]), True)
        for w in self.succs[self.sstarts[v] : self.sstarts[v + 1]]:
            self.indeg[w] -= 1
            if self.indeg[w] == 0:
                self.make_ready(int(w))


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

    On a cluster without GPUs every device is a target.
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

    On a cluster without GPUs every device is a target.
    """
    del seed
    common.refuse_options("m_etf", options, ("use_cpu",))
    sched = etf_schedule(graph, cluster, targets_of(cluster, "m_etf", use_cpu))
    return common.finish(graph, cluster, sched.devices, "m_etf", use_cpu=use_cpu, estimated_step_time=sched.makespan)
