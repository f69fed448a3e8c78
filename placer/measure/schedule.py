"""Schedule engines of the simulator: list scheduling of the unit graph (no TensorFlow).

The two engines turn per-placement arrays (unit device, duration, transfer
times) over the unit graph of `placer.measure.units` into start and finish
times.

Scheduling rule (both engines, identical results): list scheduling in which
every device runs one unit at a time and, whenever it is free, starts the
ready unit of highest priority; priority is the lowest unit index (the op
index in the graph's topological order, or the group number). Equivalently,
each step starts, over all devices, the unit with the earliest possible start
time, ties broken by the lowest index; start times never decrease from step to
step. A unit's outputs leave for another device when the unit finishes; each
directed link carries one transfer at a time, in the order the producers
finish. A transfer of n tensors and b bytes over link (a, b) takes
n * latency + b / bandwidth seconds.

`schedule_batch` runs K placements in lock step with numpy (fast for batches
of placements of a graph with up to a few thousand units); `schedule_one` is a
heap-based pure-Python engine for single placements and large op graphs.
"""

from __future__ import annotations

import dataclasses
import heapq

import numpy as np

from placer.measure.units import Units


@dataclasses.dataclass
class Schedule:
    """Start and finish times of K placements (seconds from the step start).

    Attributes:
      start, finish: [K, U] per unit.
      tx_start, tx_end: [K, U, D] transfer of a unit's outputs to a device
        (NaN where there is none).
    """

    start: np.ndarray
    finish: np.ndarray
    tx_start: np.ndarray
    tx_end: np.ndarray


def schedule_batch(units: Units, dev, dur, need, xt, num_devices: int) -> Schedule:
    """Lock-step numpy list scheduling of K placements (see module docstring).

    Args:
      units: the (acyclic) unit graph.
      dev: [K, U] int device per unit.
      dur: [K, U] seconds per unit on its device.
      need: [K, U, D] bool, a transfer from the unit to the device exists.
      xt: [K, U, D] seconds of that transfer.
      num_devices: D.
    """
    k, u_n = dev.shape
    dn = num_devices
    r = np.arange(k)
    inf = np.inf
    big = np.iinfo(np.int64).max
    # Per placement, the ready units live in a short list (ids, ready times,
    # devices), so a step costs O(K * ready) instead of O(K * U).
    roots = np.flatnonzero(units.indeg == 0)
    width = max(16, 2 * len(roots))
    ids = np.full((k, width), u_n, dtype=np.int64)
    rt = np.full((k, width), inf)
    dv = np.zeros((k, width), dtype=np.int64)
    ids[:, : len(roots)] = roots
    rt[:, : len(roots)] = 0.0
    dv[:, : len(roots)] = dev[:, roots]
    cnt = np.full(k, len(roots))
    indeg = np.tile(units.indeg, k)  # flat [K * U]
    ready = np.zeros(k * u_n)
    dev_f = dev.ravel()
    free = np.zeros(k * dn)  # flat [K, D]
    link = np.zeros((k, dn, dn))
    start = np.zeros((k, u_n))
    finish = np.zeros((k, u_n))
    tx_start = np.full((k, u_n, dn), np.nan)
    tx_end = np.full((k, u_n, dn), np.nan)
    ptr, succ, sdata = units.succ_ptr, units.succ_unit, units.succ_data
    deg = np.diff(ptr)
    rd = (r * dn)[:, None]
    for _ in range(u_n):
        w = int(cnt.max())  # lists are kept packed, so only the first w slots matter
        st = np.maximum(rt[:, :w], free[rd + dv[:, :w]])
        s = st.min(1)
        slot = np.where(st == s[:, None], ids[:, :w], big).argmin(1)
        c = ids[r, slot]
        last = cnt - 1
        ids[r, slot], rt[r, slot], dv[r, slot] = ids[r, last], rt[r, last], dv[r, last]
        ids[r, last], rt[r, last] = u_n, inf
        cnt = last
        d = dev[r, c]
        f = s + dur[r, c]
        start[r, c] = s
        finish[r, c] = f
        free[r * dn + d] = f
        nd = need[r, c]
        lk = link[r, d]
        ls = np.maximum(f[:, None], lk)
        arr = np.where(nd, ls + xt[r, c], f[:, None])
        link[r, d] = np.where(nd, arr, lk)
        tx_start[r, c] = np.where(nd, ls, np.nan)
        tx_end[r, c] = np.where(nd, arr, np.nan)
        nsucc = deg[c]
        tot = int(nsucc.sum())
        if tot == 0:
            continue
        rr = np.repeat(r, nsucc)
        e = np.repeat(ptr[c] - (np.cumsum(nsucc) - nsucc), nsucc) + np.arange(tot)
        h = succ[e]
        fl = rr * u_n + h
        hd = dev_f[fl]
        a = np.where(sdata[e], arr[rr, hd], f[rr])
        ready[fl] = np.maximum(ready[fl], a)
        indeg[fl] -= 1
        now = indeg[fl] == 0
        if not now.any():
            continue
        rn, hn, fn = rr[now], h[now], fl[now]
        nb = np.bincount(rn, minlength=k)
        pos = cnt[rn] + np.arange(len(rn)) - (np.cumsum(nb) - nb)[rn]
        if pos.max() >= width:
            grow = width
            ids = np.concatenate([ids, np.full((k, grow), u_n, dtype=np.int64)], 1)
            rt = np.concatenate([rt, np.full((k, grow), inf)], 1)
            dv = np.concatenate([dv, np.zeros((k, grow), dtype=np.int64)], 1)
            width += grow
        ids[rn, pos] = hn
        rt[rn, pos] = ready[fn]
        dv[rn, pos] = hd[now]
        cnt = cnt + nb
    return Schedule(start, finish, tx_start, tx_end)


def schedule_one(units: Units, dev, dur, need, xt, num_devices: int) -> Schedule:
    """Heap-based list scheduling of one placement; same results as `schedule_batch`.

    Args: as `schedule_batch` with K = 1 (arrays [U] and [U, D]).
    """
    u_n, dn = len(dev), num_devices
    dev_l, dur_l = dev.tolist(), dur.tolist()
    # Transfers per unit as (device, seconds) lists, only for units that send.
    sends: list[list] = [[] for _ in range(u_n)]
    tu, tb = np.nonzero(need)
    for u, b, x in zip(tu.tolist(), tb.tolist(), xt[tu, tb].tolist(), strict=True):
        sends[u].append((b, x))
    ptr, succ, sdata = units.succ_ptr.tolist(), units.succ_unit.tolist(), units.succ_data.tolist()
    indeg = units.indeg.tolist()
    ready = [0.0] * u_n
    free = [0.0] * dn
    link = [[0.0] * dn for _ in range(dn)]
    pending: list[list] = [[] for _ in range(dn)]  # (ready time, unit), inputs not yet there
    avail: list[list] = [[] for _ in range(dn)]  # unit, inputs there by the time the device is free
    for u in range(u_n):
        if indeg[u] == 0:
            avail[dev_l[u]].append(u)  # ascending, so already a heap
    used = sorted(set(dev_l))  # devices without units never have a candidate
    start, finish = [0.0] * u_n, [0.0] * u_n
    tx_start = np.full((u_n, dn), np.nan)
    tx_end = np.full((u_n, dn), np.nan)
    push, pop = heapq.heappush, heapq.heappop
    for _ in range(u_n):
        best = None
        bd = -1
        for di in used:
            pd, fd, av = pending[di], free[di], avail[di]
            while pd and pd[0][0] <= fd:
                push(av, pop(pd)[1])
            if av:
                cnd = (fd, av[0])
            elif pd:
                cnd = pd[0]
            else:
                continue
            if best is None or cnd < best:
                best, bd = cnd, di
        s, u = best
        pop(avail[bd] if avail[bd] else pending[bd])
        f = s + dur_l[u]
        start[u] = s
        finish[u] = f
        free[bd] = f
        su = sends[u]
        if su:
            arr = [f] * dn
            lk = link[bd]
            for b, x in su:
                ls = lk[b] if lk[b] > f else f
                arr[b] = lk[b] = ls + x
                tx_start[u, b], tx_end[u, b] = ls, arr[b]
            for e in range(ptr[u], ptr[u + 1]):
                h = succ[e]
                a = arr[dev_l[h]] if sdata[e] else f
                if a > ready[h]:
                    ready[h] = a
                indeg[h] -= 1
                if indeg[h] == 0:
                    dh = dev_l[h]
                    if ready[h] <= free[dh]:  # free times only grow: it is available already
                        push(avail[dh], h)
                    else:
                        push(pending[dh], (ready[h], h))
        else:
            for h in succ[ptr[u] : ptr[u + 1]]:
                if f > ready[h]:
                    ready[h] = f
                indeg[h] -= 1
                if indeg[h] == 0:
                    dh = dev_l[h]
                    if ready[h] <= free[dh]:  # free times only grow: it is available already
                        push(avail[dh], h)
                    else:
                        push(pending[dh], (ready[h], h))
    return Schedule(np.array([start]), np.array([finish]), tx_start[None], tx_end[None])
