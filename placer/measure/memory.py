"""Peak memory per device of scheduled placements (no TensorFlow).

The model is in `placer.measure.simulator`'s docstring: persistent bytes of
the ops on a device, plus activations alive between their allocation and
their last reader; frees at a time come before allocations at that time.
Two compiled sweeps give the same peaks: `peaks_one` sorts every allocation
and free event (the traced path), `peaks_in_order` places the frees among
the allocations without a full sort (the compiled path, about linear time).
Sources of the model: the liveness rule follows TF's runtime, where a
kernel allocates its outputs when it runs and a buffer is released when the
last reference to it, held by its consumers, goes; variables live for the
whole step on the device they are placed on. Mirhoseini et al. (2017) count
a placement whose devices run out of memory as failed (Table 1's OOM
entries), as this model's peak check does. bench/memory.py compares the
peak with TF's own allocator on this CPU (BENCHMARKS.md, "Memory fidelity").
"""

from __future__ import annotations

import numba
import numpy as np

from placer.measure import schedule as sched
from placer.measure.units import Units


def peak_memory(
    units: Units, dev: np.ndarray, s: sched.Schedule, nbytes: np.ndarray, need: np.ndarray, num_devices: int
) -> np.ndarray:
    """Peak bytes per device of K scheduled placements (model in the module docstring).

    Args:
      units: the unit graph.
      dev: [K, U] device per unit.
      s: their schedule.
      nbytes: [K, U, D] bytes each unit sends to each device.
      need: [K, U, D] whether that transfer exists.
      num_devices: D.

    Returns:
      [K, D] peak bytes.
    """
    k, u_n = dev.shape
    peak = np.zeros((k, num_devices))
    _activation_peaks(
        np.ascontiguousarray(units.succ_ptr, np.int64),
        np.ascontiguousarray(units.succ_unit, np.int64),
        np.ascontiguousarray(units.succ_data, np.bool_),
        np.ascontiguousarray(units.external, np.float64),
        np.ascontiguousarray(units.transient, np.float64),
        np.ascontiguousarray(dev, np.int64),
        s.start,
        s.finish,
        s.tx_start,
        s.tx_end,
        np.ascontiguousarray(np.broadcast_to(nbytes, need.shape), np.float64),
        np.ascontiguousarray(need, np.bool_),
        peak,
    )
    return per_device_sum(dev, np.broadcast_to(units.persistent, (k, u_n)), num_devices) + peak


@numba.njit(cache=True)
def _activation_peaks(ptr, succ, sdata, external, transient, dev, start, finish, tx_start, tx_end, nbytes, need, peak):
    """Writes [K, D] peak activation bytes into `peak` (zeros on entry)."""
    k_n, u_n = dev.shape
    work = scratch(u_n, need.shape[2])
    for k in range(k_n):
        peaks_one(
            ptr, succ, sdata, external, transient, dev[k], start[k], finish[k], tx_start[k], tx_end[k], nbytes[k],
            need[k], peak[k], work,
        )  # fmt: skip


@numba.njit(cache=True)
def scratch(num_units, num_devices):
    """Work arrays of `peaks_one` for graphs of up to `num_units` units on `num_devices` devices."""
    cap = 3 * num_units + 2 * num_units * num_devices
    return (
        np.empty((max(num_units, 1), num_devices)),
        np.empty(cap),
        np.empty(cap),
        np.empty(cap, np.int64),
        np.zeros(num_devices),
    )


@numba.njit(cache=True)
def peaks_one(ptr, succ, sdata, external, transient, dv, start, finish, tx_start, tx_end, nbytes, need, peak, work):
    """Peak activation bytes per device of one scheduled placement, compiled.

    Args:
      ptr, succ, sdata, external, transient: the unit graph (`Units` fields).
      dv: [U] device per unit.
      start, finish: [U] seconds.
      tx_start, tx_end, nbytes, need: [U, D] transfers of each unit's outputs.
      peak: [D] written: the peak activation bytes (zeros on entry).
      work: `scratch(U, D)`.
    """
    u_n = dv.shape[0]
    dn = need.shape[1]
    last_read, t, delta, ev_dev, live = work  # last_read: last finish of a data reader of a unit on a device
    last_read[:u_n, :] = -np.inf
    for u in range(u_n):
        for e in range(ptr[u], ptr[u + 1]):
            if sdata[e]:
                h = succ[e]
                b = dv[h]
                if finish[h] > last_read[u, b]:
                    last_read[u, b] = finish[h]
    n = 0
    for u in range(u_n):
        d = dv[u]
        # The unit's external outputs stay until its last reader on d finished
        # and its transfers left.
        release = max(finish[u], last_read[u, d])
        for b in range(dn):
            if need[u, b]:
                release = max(release, tx_end[u, b])
                t[n], delta[n], ev_dev[n] = tx_start[u, b], nbytes[u, b], b
                t[n + 1], delta[n + 1], ev_dev[n + 1] = last_read[u, b], -nbytes[u, b], b
                n += 2
        t[n], delta[n], ev_dev[n] = start[u], external[u] + transient[u], d
        t[n + 1], delta[n + 1], ev_dev[n + 1] = finish[u], -transient[u], d
        t[n + 2], delta[n + 2], ev_dev[n + 2] = release, -external[u], d
        n += 3
    order = np.argsort(t[:n])
    live[:] = 0.0
    i = 0
    while i < n:  # all events of one time first, then read memory
        j = i
        now = t[order[i]]
        while j < n and t[order[j]] == now:
            live[ev_dev[order[j]]] += delta[order[j]]
            j += 1
        for m in range(i, j):
            d = ev_dev[order[m]]
            if live[d] > peak[d]:
                peak[d] = live[d]
        i = j


def per_device_sum(dev: np.ndarray, values: np.ndarray, num_devices: int) -> np.ndarray:
    """Sums [K, U] values per device of [K, U] `dev`; returns [K, D]."""
    k = len(dev)
    flat = (np.arange(k)[:, None] * num_devices + dev).ravel()
    return np.bincount(flat, weights=np.ravel(values), minlength=k * num_devices).reshape(k, num_devices)


@numba.njit(cache=True)
def order_scratch(num_units, num_devices):
    """Work arrays of `peaks_in_order` for graphs of up to `num_units` units on `num_devices` devices."""
    u = max(num_units, 1)
    cap = u * num_devices + u
    return (
        np.empty((u, num_devices), np.int64),
        np.empty(u, np.int64),
        np.empty(cap),
        np.empty(cap),
        np.empty(cap),
        np.empty(cap),
        np.empty(cap),
        np.zeros(num_devices + 1, np.int64),
        np.zeros(num_devices + 1, np.int64),
    )


@numba.njit(cache=True)
def _lower_bound(a, lo, hi, x):
    """The first index i in [lo, hi) with a[i] >= x (hi if none); a[lo:hi] sorted."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def peaks_in_order(
    ptr, succ, sdata, external, transient, dv, start, finish, tx_start, tx_end, nbytes, need, seq, peak, work
):
    """`peaks_one` without sorting every event: the same peaks, in about linear time.

    Memory only grows at allocations, so a device's peak is reached just after
    the allocations of some instant, once every event of that instant is
    applied. The allocations of a device come in sorted streams: its own
    units' starts in scheduling order, and the transfers it receives (sorted
    here, there are few). Every free is placed by the index of the first
    allocation at or after it: a unit's finish (the finishes on one device
    are sorted too, so one merge places them all), the last read of a
    received tensor (a reader's finish), and a unit's release (a finish, or
    else a transfer's end, found by bisection). Bytes are whole numbers, so
    the order of the sums does not change them.

    Args:
      ptr, succ, sdata, external, transient: the unit graph (`Units` fields).
      dv: [U] device per unit.
      start, finish: [U] seconds.
      tx_start, tx_end, nbytes, need: [U, D] transfers of each unit's outputs.
      seq: [U] units in the order they were scheduled (starts never decrease).
      peak: [D] written: the peak activation bytes (zeros on entry).
      work: `order_scratch(U, D)`.
    """
    u_n, dn = dv.shape[0], need.shape[1]
    reader, pos_fin, at, amount, freed, in_t, in_a, lo, fill = work
    reader[:u_n, :] = -1  # the data reader of a unit on a device that finishes last
    for u in range(u_n):
        for e in range(ptr[u], ptr[u + 1]):
            if sdata[e]:
                h = succ[e]
                r = reader[u, dv[h]]
                if r < 0 or finish[h] > finish[r]:
                    reader[u, dv[h]] = h
    # Allocation streams per device: own starts (sorted in `seq`), then received transfers.
    lo[:] = 0
    fill[:] = 0
    for u in range(u_n):
        lo[dv[u] + 1] += 1
        for b in range(dn):
            if need[u, b]:
                lo[b + 1] += 1
                fill[b + 1] += 1
    for d in range(dn):
        lo[d + 1] += lo[d]
        fill[d + 1] += fill[d]
    got = fill[:dn].copy()
    for u in range(u_n):
        for b in range(dn):
            if need[u, b]:
                in_t[got[b]], in_a[got[b]] = tx_start[u, b], nbytes[u, b]
                got[b] += 1
    own = lo[:dn].copy()
    for i in range(u_n):
        u = seq[i]
        at[own[dv[u]]] = start[u]  # own starts first, merged below
        amount[own[dv[u]]] = external[u] + transient[u]
        own[dv[u]] += 1
    for d in range(dn):
        _merge_received(at, amount, lo[d], own[d], lo[d + 1], in_t, in_a, fill[d], fill[d + 1])
    freed[: lo[dn]] = 0.0
    # Finishes per device are sorted in `seq`: one merge places them.
    ptr_d = lo[:dn].copy()
    for i in range(u_n):
        u = seq[i]
        d = dv[u]
        p = ptr_d[d]
        while p < lo[d + 1] and at[p] < finish[u]:
            p += 1
        ptr_d[d] = p
        pos_fin[u] = p
    for u in range(u_n):
        d = dv[u]
        _free(freed, lo[d + 1], pos_fin[u], transient[u])
        release, pos = finish[u], pos_fin[u]
        r = reader[u, d]
        if r >= 0 and finish[r] > release:
            release, pos = finish[r], pos_fin[r]
        for b in range(dn):
            if need[u, b]:
                _free(freed, lo[b + 1], pos_fin[reader[u, b]], nbytes[u, b])
                if tx_end[u, b] > release:
                    release, pos = tx_end[u, b], -1
        if pos < 0:
            pos = _lower_bound(at, lo[d], lo[d + 1], release)
        _free(freed, lo[d + 1], pos, external[u])
    for d in range(dn):
        alloc, gone = 0.0, 0.0
        for p in range(lo[d], lo[d + 1]):
            alloc += amount[p]
            gone += freed[p]
            if (p + 1 == lo[d + 1] or at[p + 1] != at[p]) and alloc - gone > peak[d]:
                peak[d] = alloc - gone


@numba.njit(cache=True, inline="always")
def _free(freed, end, pos, nbytes):
    if pos < end:
        freed[pos] += nbytes


@numba.njit(cache=True)
def _merge_received(at, amount, lo, mid, hi, in_t, in_a, in_lo, in_hi):
    """Merges a device's received transfers (in_t[in_lo:in_hi], unsorted) into at[lo:hi], whose
    [lo, mid) holds its sorted own allocations; amount follows at."""
    if in_hi == in_lo:
        return
    order = np.argsort(in_t[in_lo:in_hi]) + in_lo
    own_t = at[lo:mid].copy()
    own_a = amount[lo:mid].copy()
    i, j = 0, 0
    for p in range(lo, hi):
        if j >= len(order) or (i < len(own_t) and own_t[i] <= in_t[order[j]]):
            at[p], amount[p] = own_t[i], own_a[i]
            i += 1
        else:
            at[p], amount[p] = in_t[order[j]], in_a[order[j]]
            j += 1
