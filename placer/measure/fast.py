"""The simulator's schedule kernel: many placements of one unit graph, one compiled call (no TensorFlow).

This is the only implementation of the simulated step (the model is in
`placer.measure.simulator`'s docstring). Everything that does not depend on
the placement is gathered once per unit graph (`prepare`): the successor
lists, the producer-to-consumer transfer tables, the seconds of every unit
on every device (`Cluster.op_seconds`) and the link latencies and
bandwidths. `run` then computes, inside one numba call per batch, for each
placement: durations, the bytes and tensors each unit sends to each device,
the schedule (`placer.measure.schedule.schedule_one`; with a serial
executor, one timeline for every device), the memory peaks
(`placer.measure.memory.peaks_in_order`), busy time, bytes moved and the
first colocation set split across devices, and on request the schedule
itself (unit and transfer times, for traces). tests/measure/reference_sim.py
computes the same numbers in plain numpy, step by step, and the tests compare
the two bit for bit.

numba's on-disk cache of `_run` is keyed on this file alone: after an edit of
`schedule.py` or `memory.py`, delete `placer/measure/__pycache__/*.nb[ic]`
(or touch this file) so that the kernel picks the edit up.
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np

from placer.measure import memory, schedule
from placer.measure.units import Units


@dataclasses.dataclass(frozen=True, eq=False)
class Prepared:
    """The placement-independent arrays of one unit graph on one cluster.

    Attributes:
      units: the unit graph.
      seconds: [U, D] seconds each unit takes on each device (NaN: a kernel is missing).
      latency: [D, D] seconds per tensor sent over each link.
      bandwidth: [D, D] bytes per second of each link.
      coloc_units, coloc_start: colocation sets spanning several units, as
        unit indices concatenated, and the offset of each set.
      serial: one executor thread runs every device's units (`Cluster.serial_executor`).
    """

    units: Units
    seconds: np.ndarray
    latency: np.ndarray
    bandwidth: np.ndarray
    coloc_units: np.ndarray
    coloc_start: np.ndarray
    serial: bool = False


@dataclasses.dataclass(frozen=True, eq=False)
class Outcome:
    """The simulated figures of K placements.

    Attributes:
      finish: [K] seconds the last unit finished (the step time of those that run).
      busy: [K, D] seconds each device computed.
      peak: [K, D] peak bytes per device (persistent plus activations).
      moved: [K] bytes sent between devices.
      unsupported: [K] bool, some unit is on a device without a kernel for it.
      coloc: [K] index of the first colocation set split across devices, -1 if none.
      start, end: [K, U] seconds each unit started and finished (traced runs only, else None).
      tx_start, tx_end: [K, U, D] seconds the transfer of a unit's outputs to
        a device started and ended, NaN where there is none (traced runs only).
      nbytes: [K, U, D] bytes each unit sent to each device (traced runs only).
    """

    finish: np.ndarray
    busy: np.ndarray
    peak: np.ndarray
    moved: np.ndarray
    unsupported: np.ndarray
    coloc: np.ndarray
    start: np.ndarray | None = None
    end: np.ndarray | None = None
    tx_start: np.ndarray | None = None
    tx_end: np.ndarray | None = None
    nbytes: np.ndarray | None = None


def prepare(units: Units, seconds, latency, bandwidth, coloc_units, coloc_start, serial: bool = False) -> Prepared:
    """Gathers the arrays `run` reads (contiguous, in the dtypes the kernel takes).

    Args:
      units: the unit graph (acyclic).
      seconds: [U, D] seconds per unit and device, NaN where a kernel is missing.
      latency: [D, D] seconds per tensor and link.
      bandwidth: [D, D] bytes per second and link.
      coloc_units: [M] unit indices of the colocation sets spanning several units.
      coloc_start: [S] offset of each set in `coloc_units`.
      serial: whether one executor thread runs every device's units.
    """
    f64, i64 = np.float64, np.int64
    return Prepared(
        units,
        np.ascontiguousarray(seconds, f64),
        np.ascontiguousarray(latency, f64),
        np.ascontiguousarray(bandwidth, f64),
        np.ascontiguousarray(coloc_units, i64),
        np.ascontiguousarray(coloc_start, i64),
        bool(serial),
    )


def run(p: Prepared, dev: np.ndarray, *, trace: bool = False) -> Outcome:
    """Simulates K placements of the unit graph in one compiled call.

    Args:
      p: the prepared unit graph.
      dev: [K, U] int device per unit.
      trace: also return each placement's schedule (unit and transfer times, bytes sent).

    Returns:
      The step figures of each placement (failures are not judged here: see `Outcome`).
    """
    u = p.units
    dev = np.ascontiguousarray(dev, np.int64)
    k, dn = len(dev), p.seconds.shape[1]
    kt, ut = (k, u.num_units) if trace else (0, 0)
    out = Outcome(
        np.zeros(k), np.zeros((k, dn)), np.zeros((k, dn)), np.zeros(k), np.zeros(k, bool), np.zeros(k, np.int64),
        np.zeros((kt, ut)), np.zeros((kt, ut)), np.full((kt, ut, dn), np.nan), np.full((kt, ut, dn), np.nan),
        np.zeros((kt, ut, dn)),
    )  # fmt: skip
    graph = (u.succ_ptr, u.succ_unit, u.succ_data, u.indeg, u.external, u.transient, u.persistent)
    pairs = (u.pair_unit, u.pair_cons, u.pair_bytes, u.pair_count)
    ents = (u.ent_unit, u.ent_cons, u.ent_bytes, u.ent_pstart)
    _run(
        tuple(np.ascontiguousarray(a) for a in graph),
        tuple(np.ascontiguousarray(a) for a in pairs),
        tuple(np.ascontiguousarray(a) for a in ents),
        p.seconds,
        p.latency,
        p.bandwidth,
        p.coloc_units,
        p.coloc_start,
        p.serial,
        dev,
        (out.finish, out.busy, out.peak, out.moved, out.unsupported, out.coloc),
        (out.start, out.end, out.tx_start, out.tx_end, out.nbytes),
    )
    if not trace:
        return dataclasses.replace(out, start=None, end=None, tx_start=None, tx_end=None, nbytes=None)
    return out


@numba.njit(cache=True)
def _transfers(pairs, ents, dv, nbytes, ntens):
    """Writes [U, D] bytes and tensors each unit sends to each device under one placement (0 to its own)."""
    pair_unit, pair_cons, pair_bytes, pair_count = pairs
    ent_unit, ent_cons, ent_bytes, ent_pstart = ents
    nbytes[:, :] = 0.0
    ntens[:, :] = 0
    for i in range(len(pair_unit)):
        u, b = pair_unit[i], dv[pair_cons[i]]
        nbytes[u, b] += pair_bytes[i]
        ntens[u, b] += pair_count[i]
    dn = nbytes.shape[1]
    most = np.empty(dn, np.int64)
    n_ent = len(ent_cons)
    for s in range(len(ent_pstart)):
        hi = ent_pstart[s + 1] if s + 1 < len(ent_pstart) else n_ent
        most[:] = -1  # one tensor per device: the largest edge to it
        for e in range(ent_pstart[s], hi):
            b = dv[ent_cons[e]]
            if ent_bytes[e] > most[b]:
                most[b] = ent_bytes[e]
        u = ent_unit[s]
        for b in range(dn):
            if most[b] >= 0:
                nbytes[u, b] += most[b]
                ntens[u, b] += 1
    for u in range(len(dv)):
        nbytes[u, dv[u]] = 0.0
        ntens[u, dv[u]] = 0


@numba.njit(cache=True)
def _numpy_sum(x):
    """The sum of a short 1-D array in the order numpy's `sum` adds it (pairwise in blocks of 8)."""
    n = len(x)
    if n < 8:
        s = 0.0
        for v in x:
            s += v
        return s
    r = x[:8].copy()
    i = 8
    while i < n - n % 8:
        for j in range(8):
            r[j] += x[i + j]
        i += 8
    s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        s += x[i]
        i += 1
    return s


@numba.njit(cache=True)
def _schedule(graph, dv, dur, need, xt, serial, start, fin, tx_start, tx_end, work):
    """Schedules one placement: each device on its own, or with `serial` all on one executor thread.

    The serial thread runs every unit in turn and spends its transfers right
    after it (TF's _Send and _Recv run on that thread too): the units are
    scheduled as on one device, each taking its duration plus its transfers,
    and each transfer starts and ends when its extended unit finishes.
    """
    ptr, succ, sdata, indeg = graph[0], graph[1], graph[2], graph[3]
    if not serial:
        schedule.schedule_one(ptr, succ, sdata, indeg, dv, dur, need, xt, start, fin, tx_start, tx_end, work)
        return
    u_n = len(dv)
    one = np.zeros(u_n, np.int64)
    longer = np.empty(u_n)
    for u in range(u_n):
        longer[u] = dur[u] + _numpy_sum(xt[u])
    none = np.zeros((u_n, 1), np.bool_)
    unused = np.zeros((u_n, 1))
    schedule.schedule_one(ptr, succ, sdata, indeg, one, longer, none, unused, start, fin, unused, unused, work)
    for u in range(u_n):
        for b in range(need.shape[1]):
            if need[u, b]:
                tx_start[u, b] = tx_end[u, b] = fin[u]


@numba.njit(cache=True)
def _run(graph, pairs, ents, seconds, lat, bw, cu, cs, serial, dev, out, traced):
    ptr, succ, sdata, indeg, external, transient, persistent = graph
    finish, busy, peak, moved, unsupported, coloc = out
    k_n, u_n = dev.shape
    dn = seconds.shape[1]
    sched_work = schedule.scratch(u_n, dn)
    mem_work = memory.order_scratch(u_n, dn)
    dur = np.empty(u_n)
    nbytes = np.empty((u_n, dn))
    ntens = np.empty((u_n, dn), np.int64)
    need = np.empty((u_n, dn), np.bool_)
    xt = np.empty((u_n, dn))
    start = np.empty(u_n)
    fin = np.empty(u_n)
    tx_start = np.empty((u_n, dn))
    tx_end = np.empty((u_n, dn))
    act = np.zeros(dn)
    for k in range(k_n):
        dv = dev[k]
        for u in range(u_n):
            x = seconds[u, dv[u]]
            if np.isnan(x):
                unsupported[k] = True
                x = 0.0
            dur[u] = x
            busy[k, dv[u]] += x
        _transfers(pairs, ents, dv, nbytes, ntens)
        total = 0.0
        for u in range(u_n):
            a = dv[u]
            for b in range(dn):
                need[u, b] = ntens[u, b] > 0
                xt[u, b] = ntens[u, b] * lat[a, b] + nbytes[u, b] / bw[a, b] if need[u, b] else 0.0
                total += nbytes[u, b]
        moved[k] = total
        _schedule(graph, dv, dur, need, xt, serial, start, fin, tx_start, tx_end, sched_work)
        finish[k] = fin.max() if u_n else 0.0
        act[:] = 0.0
        memory.peaks_in_order(
            ptr, succ, sdata, external, transient, dv, start, fin, tx_start, tx_end, nbytes, need, sched_work[-1], act,
            mem_work,
        )  # fmt: skip
        for u in range(u_n):
            peak[k, dv[u]] += persistent[u]
        for b in range(dn):
            peak[k, b] += act[b]
        coloc[k] = -1
        for j in range(len(cs)):
            hi = cs[j + 1] if j + 1 < len(cs) else len(cu)
            lo_d, hi_d = dv[cu[cs[j]]], dv[cu[cs[j]]]
            for m in range(cs[j], hi):
                lo_d, hi_d = min(lo_d, dv[cu[m]]), max(hi_d, dv[cu[m]])
            if lo_d != hi_d:
                coloc[k] = j
                break
        if len(traced[0]):
            _record(traced, k, start, fin, tx_start, tx_end, nbytes, need)


@numba.njit(cache=True)
def _record(traced, k, start, fin, tx_start, tx_end, nbytes, need):
    """Copies placement k's schedule into the traced outputs (transfer times only where one exists)."""
    t_start, t_end, t_txs, t_txe, t_bytes = traced
    t_start[k] = start
    t_end[k] = fin
    t_bytes[k] = nbytes
    for u in range(need.shape[0]):
        for b in range(need.shape[1]):
            if need[u, b]:
                t_txs[k, u, b] = tx_start[u, b]
                t_txe[k, u, b] = tx_end[u, b]
