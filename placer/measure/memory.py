"""Peak memory per device of scheduled placements (no TensorFlow).

The model is in `placer.measure.simulator`'s docstring: persistent bytes of
the ops on a device, plus activations alive between their allocation and
their last reader; frees at a time come before allocations at that time.
`peaks_in_order` places the frees among the allocations without sorting
every event (about linear time); tests/measure/reference_sim.py sorts every
allocation and free event instead, and the tests compare the two.
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
    """Peak activation bytes per device of one scheduled placement, compiled, in about linear time.

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
