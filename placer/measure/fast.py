"""The simulator's compiled path: many placements of one unit graph, one compiled call (no TensorFlow).

`Simulator` measures batches of placements through `run` whenever it need
not record a trace. Everything that does not depend on the
placement is gathered once per unit graph (`prepare`): the successor lists,
the producer-to-consumer transfer tables, the seconds of every unit on every
device and the link latencies and bandwidths. `run` then computes, inside
one numba call per batch, what `Simulator`'s traced path computes with numpy
for each placement: durations, the bytes and tensors each unit sends to each
device, the schedule (`placer.measure.schedule.schedule_one`), the memory
peaks (`placer.measure.memory.peaks_in_order`), busy time, bytes moved and the
first colocation set split across devices. The model is the one in
`placer.measure.simulator`'s docstring; the results are the same numbers
(tests/measure/test_fast_path.py compares them bit for bit). The seconds per
unit and device and the link latencies are read from `prepare`'s arrays
only, so a cost added to every op or transfer (set up once by the
simulator) reaches this path unchanged.

numba's on-disk cache of `_run` is keyed on this file alone: after an edit of
`schedule.py` or `memory.py`, delete `placer/measure/__pycache__/*.nb[ic]`
(or touch this file) so that the compiled path picks the edit up.
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
    """

    units: Units
    seconds: np.ndarray
    latency: np.ndarray
    bandwidth: np.ndarray
    coloc_units: np.ndarray
    coloc_start: np.ndarray


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
    """

    finish: np.ndarray
    busy: np.ndarray
    peak: np.ndarray
    moved: np.ndarray
    unsupported: np.ndarray
    coloc: np.ndarray


def prepare(units: Units, seconds, latency, bandwidth, coloc_units, coloc_start) -> Prepared:
    """Gathers the arrays `run` reads (contiguous, in the dtypes the kernel takes).

    Args:
      units: the unit graph (acyclic).
      seconds: [U, D] seconds per unit and device, NaN where a kernel is missing.
      latency: [D, D] seconds per tensor and link.
      bandwidth: [D, D] bytes per second and link.
      coloc_units: [M] unit indices of the colocation sets spanning several units.
      coloc_start: [S] offset of each set in `coloc_units`.
    """
    f64, i64 = np.float64, np.int64
    return Prepared(
        units,
        np.ascontiguousarray(seconds, f64),
        np.ascontiguousarray(latency, f64),
        np.ascontiguousarray(bandwidth, f64),
        np.ascontiguousarray(coloc_units, i64),
        np.ascontiguousarray(coloc_start, i64),
    )


def run(p: Prepared, dev: np.ndarray) -> Outcome:
    """Simulates K placements of the unit graph in one compiled call.

    Args:
      p: the prepared unit graph.
      dev: [K, U] int device per unit.

    Returns:
      The step figures of each placement (failures are not judged here: see `Outcome`).
    """
    u = p.units
    dev = np.ascontiguousarray(dev, np.int64)
    k, dn = len(dev), p.seconds.shape[1]
    out = Outcome(
        np.zeros(k), np.zeros((k, dn)), np.zeros((k, dn)), np.zeros(k), np.zeros(k, bool), np.zeros(k, np.int64)
    )
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
        dev,
        out.finish,
        out.busy,
        out.peak,
        out.moved,
        out.unsupported,
        out.coloc,
    )
    return out


@numba.njit(cache=True)
def _transfers(pairs, ents, dv, nbytes, ntens):
    """Writes [U, D] bytes and tensors each unit sends to each device (`units.transfer_tables`, one placement)."""
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
def _run(graph, pairs, ents, seconds, lat, bw, cu, cs, dev, finish, busy, peak, moved, unsupported, coloc):
    ptr, succ, sdata, indeg, external, transient, persistent = graph
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
        schedule.schedule_one(ptr, succ, sdata, indeg, dv, dur, need, xt, start, fin, tx_start, tx_end, sched_work)
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
