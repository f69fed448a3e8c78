"""The simulator's schedule engine: list scheduling of the unit graph, compiled (no TensorFlow).

`schedule_one` turns one placement's arrays (unit device, duration, transfer
times) over the unit graph of `placer.measure.units` into start and finish
times; the kernel of `placer.measure.fast` calls it for every placement.

Scheduling rule: list scheduling in which every device runs one unit at a
time and, whenever it is free, starts the ready unit of highest priority;
priority is the lowest unit index (the op index in the graph's topological
order, or the group number). Equivalently, each step starts, over all
devices, the unit with the earliest possible start time, ties broken by the
lowest index; start times never decrease from step to step. A unit's outputs
leave for another device when the unit finishes; each directed link carries
one transfer at a time, in the order the producers finish. A transfer
of n tensors and b bytes over link (a, b) takes n * latency + b / bandwidth
seconds.

The engine keeps, per device, two binary heaps: units whose inputs arrive
after the device becomes free (keyed by arrival time, then index) and units
that can start as soon as it is free (keyed by index). It is compiled with
numba: about 0.1 us per unit and device, so a few thousand placements of a
grouped graph, or one placement of a 30,000-op graph, take milliseconds.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def _less(t1, u1, t2, u2):
    return t1 < t2 or (t1 == t2 and u1 < u2)


@numba.njit(cache=True)
def _push(keys, ids, n, t, u):
    """Pushes (t, u) on the heap held in keys[:n], ids[:n]; returns the new size."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if not _less(t, u, keys[p], ids[p]):
            break
        keys[i], ids[i] = keys[p], ids[p]
        i = p
    keys[i], ids[i] = t, u
    return n + 1


@numba.njit(cache=True)
def _pop(keys, ids, n):
    """Removes the smallest entry of the heap keys[:n], ids[:n]; returns the new size."""
    n -= 1
    t, u = keys[n], ids[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _less(keys[c + 1], ids[c + 1], keys[c], ids[c]):
            c += 1
        if not _less(keys[c], ids[c], t, u):
            break
        keys[i], ids[i] = keys[c], ids[c]
        i = c
    if n > 0:
        keys[i], ids[i] = t, u
    return n


@numba.njit(cache=True)
def _push_id(ids, n, u):
    """Pushes unit u on the heap of unit indices ids[:n]; returns the new size."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if ids[p] <= u:
            break
        ids[i] = ids[p]
        i = p
    ids[i] = u
    return n + 1


@numba.njit(cache=True)
def _pop_id(ids, n):
    """Removes the smallest unit index from the heap ids[:n]; returns the new size."""
    n -= 1
    u = ids[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and ids[c + 1] < ids[c]:
            c += 1
        if ids[c] >= u:
            break
        ids[i] = ids[c]
        i = c
    if n > 0:
        ids[i] = u
    return n


@numba.njit(cache=True)
def scratch(num_units, num_devices):
    """Work arrays of `schedule_one` for graphs of up to `num_units` units on `num_devices` devices."""
    u, dn = max(num_units, 1), num_devices
    return (
        np.empty((dn, u)),
        np.empty((dn, u), np.int64),
        np.empty((dn, u), np.int64),
        np.zeros(dn, np.int64),
        np.zeros(dn, np.int64),
        np.zeros(dn),
        np.zeros((dn, dn)),
        np.zeros(dn),
        np.zeros(u, np.int64),
        np.zeros(u),
        np.zeros(u, np.int64),
    )


@numba.njit(cache=True)
def schedule_one(ptr, succ, sdata, indeg0, dv, dur, need, xt, start, finish, tx_start, tx_end, work):
    """List-schedules one placement (the rule in the module docstring), compiled.

    Args:
      ptr, succ, sdata, indeg0: the unit graph (`Units` succ_ptr, succ_unit, succ_data, indeg).
      dv: [U] device per unit.
      dur: [U] seconds per unit on its device.
      need, xt: [U, D] whether a unit's outputs go to a device, and the transfer's seconds.
      start, finish: [U] written: seconds.
      tx_start, tx_end: [U, D] written where `need` (left as they were elsewhere).
      work: `scratch(U, D)`; on return its last array holds the units in the
        order they were scheduled (their start times never decrease).
    """
    u_n = dv.shape[0]
    dn = need.shape[1]
    # Per device: "pending" heap (input arrival, unit) and "available" heap (unit).
    pk, pu, au, pn, an, free, link, arr, indeg, ready, seq = work
    pn[:] = 0
    an[:] = 0
    free[:] = 0.0
    link[:, :] = 0.0
    indeg[:u_n] = indeg0
    ready[:u_n] = 0.0
    for u in range(u_n):
        if indeg[u] == 0:
            d = dv[u]
            an[d] = _push_id(au[d], an[d], u)
    for i in range(u_n):
        bd, bt, bu = -1, np.inf, u_n
        for d in range(dn):
            fd = free[d]
            while pn[d] > 0 and pk[d, 0] <= fd:
                u = pu[d, 0]
                pn[d] = _pop(pk[d], pu[d], pn[d])
                an[d] = _push_id(au[d], an[d], u)
            if an[d] > 0:
                t, u = fd, au[d, 0]
            elif pn[d] > 0:
                t, u = pk[d, 0], pu[d, 0]
            else:
                continue
            if _less(t, u, bt, bu):
                bd, bt, bu = d, t, u
        if an[bd] > 0:
            an[bd] = _pop_id(au[bd], an[bd])
        else:
            pn[bd] = _pop(pk[bd], pu[bd], pn[bd])
        u = bu
        seq[i] = u
        f = bt + dur[u]
        start[u] = bt
        finish[u] = f
        free[bd] = f
        arr[:] = f
        for b in range(dn):
            if need[u, b]:
                ls = max(link[bd, b], f)
                arr[b] = link[bd, b] = ls + xt[u, b]
                tx_start[u, b] = ls
                tx_end[u, b] = arr[b]
        for e in range(ptr[u], ptr[u + 1]):
            h = succ[e]
            dh = dv[h]
            a = arr[dh] if sdata[e] else f
            if a > ready[h]:
                ready[h] = a
            indeg[h] -= 1
            if indeg[h] == 0:
                if ready[h] <= free[dh]:  # free times only grow: it is available already
                    an[dh] = _push_id(au[dh], an[dh], h)
                else:
                    pn[dh] = _push(pk[dh], pu[dh], pn[dh], ready[h], h)
