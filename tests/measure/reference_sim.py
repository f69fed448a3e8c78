"""A plain-Python reference of the simulator's compiled kernel (placer.measure.fast), for the tests only.

It simulates one placement of a unit graph the slow, obvious way, from the
rules of `placer.measure.simulator`'s docstring: each step starts, over all
devices, the unit with the earliest possible start (lowest index on ties);
a unit's outputs then go, one tensor per producer op and device (its
largest edge), over a link that carries one transfer at a time; with a
serial executor every unit runs on one timeline, taking its transfers too.
Memory peaks come from sorting every allocation and free event. No numba,
no heaps, no merges: the kernel must give the same numbers to the bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from placer.core.cluster import Cluster
from placer.core.colocation import colocation_sets
from placer.core.op_graph import OpGraph
from placer.measure.units import Units, contract


@dataclasses.dataclass
class Reference:
    """What the reference computes for one placement (times in seconds, sizes in bytes).

    Attributes:
      finish: the last unit's finish time (the step time of a placement that runs).
      busy, peak: [D] seconds computed and peak bytes per device.
      moved: bytes sent between devices.
      failure: None, "unsupported", "colocation" or "oom", checked in that order.
      start, end: [U] unit start and finish times.
      transfers: {(unit, device): (start, end, bytes)}.
    """

    finish: float
    busy: np.ndarray
    peak: np.ndarray
    moved: float
    failure: str | None
    start: np.ndarray
    end: np.ndarray
    transfers: dict


def sent(units: Units, dv: np.ndarray, num_devices: int) -> tuple[np.ndarray, np.ndarray]:
    """([U, D] bytes, [U, D] tensors) each unit sends to each other device under [U] devices `dv`."""
    nbytes, ntens = np.zeros((units.num_units, num_devices)), np.zeros((units.num_units, num_devices), np.int64)
    for u, c, b, n in zip(units.pair_unit, units.pair_cons, units.pair_bytes, units.pair_count, strict=True):
        nbytes[u, dv[c]] += b
        ntens[u, dv[c]] += n
    bounds = [*units.ent_pstart.tolist(), len(units.ent_cons)]
    for s, u in enumerate(units.ent_unit):  # one producer op: one tensor per device, its largest edge there
        largest = {}
        for e in range(bounds[s], bounds[s + 1]):
            d = dv[units.ent_cons[e]]
            largest[d] = max(largest.get(d, -1), units.ent_bytes[e])
        for d, b in sorted(largest.items()):
            nbytes[u, d] += b
            ntens[u, d] += 1
    own = (np.arange(units.num_units), dv)
    nbytes[own], ntens[own] = 0.0, 0
    return nbytes, ntens


def _edges(units: Units):
    """[(producer unit, consumer unit, data edge)] of the unit graph."""
    return [
        (u, int(units.succ_unit[e]), bool(units.succ_data[e]))
        for u in range(units.num_units)
        for e in range(units.succ_ptr[u], units.succ_ptr[u + 1])
    ]


def list_schedule(units: Units, dv, dur, need, xt) -> tuple[np.ndarray, np.ndarray, dict]:
    """Start and end per unit, and {(unit, device): (transfer start, end)}, by the rule of the module doc."""
    n, nd = units.num_units, need.shape[1]
    preds = [[] for _ in range(n)]
    for u, v, data in _edges(units):
        preds[v].append((u, data))
    free, link = [0.0] * nd, np.zeros((nd, nd))
    start, end, arrive, tx = [None] * n, [None] * n, [{} for _ in range(n)], {}
    for _ in range(n):
        best = None
        for v in range(n):
            if end[v] is None and all(end[u] is not None for u, _ in preds[v]):
                ready = max([arrive[u].get(dv[v], end[u]) if data else end[u] for u, data in preds[v]], default=0.0)
                t = max(free[dv[v]], ready)
                best = min(best, (t, v)) if best else (t, v)
        t, v = best
        start[v], end[v] = t, t + dur[v]
        free[dv[v]] = end[v]
        for b in np.flatnonzero(need[v]):
            ls = max(link[dv[v], b], end[v])
            link[dv[v], b] = arrive[v][b] = ls + xt[v, b]
            tx[(v, int(b))] = (ls, ls + xt[v, b])
    return np.array(start), np.array(end), tx


def serial_schedule(units: Units, dur, need, xt) -> tuple[np.ndarray, np.ndarray, dict]:
    """The same with one executor thread: one device, each unit taking its duration plus its transfers,
    which start and end when it ends."""
    one = np.zeros(units.num_units, np.int64)
    none = np.zeros((units.num_units, 1), bool)
    start, end, _ = list_schedule(units, one, dur + xt.sum(axis=1), none, none.astype(float))
    return start, end, {(int(u), int(b)): (end[u], end[u]) for u, b in zip(*np.nonzero(need), strict=True)}


def activation_peaks(units: Units, dv, start, end, tx, nbytes, num_devices) -> np.ndarray:
    """[D] peak activation bytes: every allocation and free event sorted, frees at a time before the peak is read."""
    last_read = {}  # (unit, device) -> the last finish of a data reader there
    for u, v, data in _edges(units):
        if data:
            last_read[(u, dv[v])] = max(last_read.get((u, dv[v]), -np.inf), end[v])
    events = []  # (time, device, bytes)
    for u in range(units.num_units):
        d = dv[u]
        release = max(end[u], last_read.get((u, d), -np.inf))
        for b in range(num_devices):
            if (u, b) in tx:
                t0, t1 = tx[(u, b)]
                release = max(release, t1)
                events += [(t0, b, nbytes[u, b]), (last_read[(u, b)], b, -nbytes[u, b])]
        ext, tra = units.external[u], units.transient[u]
        events += [(start[u], d, ext + tra), (end[u], d, -tra), (release, d, -ext)]
    events.sort(key=lambda e: e[0])
    live, peak = np.zeros(num_devices), np.zeros(num_devices)
    i = 0
    while i < len(events):
        j = i
        while j < len(events) and events[j][0] == events[i][0]:
            live[events[j][1]] += events[j][2]
            j += 1
        peak = np.maximum(peak, live)
        i = j
    return peak


def simulate(graph: OpGraph, cluster: Cluster, devices, op_group=None) -> Reference:
    """Simulates one placement: [n_ops] devices per op, or [G] per group with `op_group` (groups placed whole)."""
    units = contract(graph, None if op_group is None else np.asarray(op_group))
    dv = np.asarray(devices, np.int64)[units.unit_group if op_group is not None else units.op_unit]
    nd = cluster.num_devices
    seconds = cluster.op_seconds(graph, units.op_unit)[np.arange(units.num_units), dv]
    dur = np.nan_to_num(seconds, nan=0.0)
    nbytes, ntens = sent(units, dv, nd)
    need = ntens > 0
    per_tensor = np.asarray(cluster.latency) + cluster.transfer_cost()[:, None]
    xt = np.where(need, ntens * per_tensor[dv] + nbytes / np.asarray(cluster.bandwidth)[dv], 0.0)
    if cluster.serial_executor:
        start, end, tx = serial_schedule(units, dur, need, xt)
    else:
        start, end, tx = list_schedule(units, dv, dur, need, xt)
    busy = np.zeros(nd)
    persistent = np.zeros(nd)
    for u in range(units.num_units):
        busy[dv[u]] += dur[u]
        persistent[dv[u]] += units.persistent[u]
    peak = persistent + activation_peaks(units, dv, start, end, tx, nbytes, nd)
    op_dev = dv[units.op_unit]
    failure = None
    if np.isnan(seconds).any():
        failure = "unsupported"
    elif any(len(set(op_dev[m].tolist())) > 1 for m in colocation_sets(graph)):
        failure = "colocation"
    elif (peak > cluster.memory()).any():
        failure = "oom"
    moved = float(nbytes.sum(axis=1).sum())
    transfers = {k: (t0, t1, nbytes[k]) for k, (t0, t1) in tx.items()}
    return Reference(float(end.max(initial=0.0)), busy, peak, moved, failure, start, end, transfers)
