"""Peak memory per device of scheduled placements (no TensorFlow).

The model is in `placer.measure.simulator`'s docstring: persistent bytes of
the ops on a device, plus activations alive between their allocation and
their last reader; frees at a time come before allocations at that time.
The sweep over allocation and free events is compiled with numba.

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
    dn = need.shape[2]
    last_read = np.empty((u_n, dn))  # last finish of a data reader of each unit on each device
    cap = 3 * u_n + 2 * u_n * dn
    t = np.empty(cap)
    delta = np.empty(cap)
    ev_dev = np.empty(cap, np.int64)
    live = np.zeros(dn)
    for k in range(k_n):
        last_read[:, :] = -np.inf
        for u in range(u_n):
            for e in range(ptr[u], ptr[u + 1]):
                if sdata[e]:
                    h = succ[e]
                    b = dev[k, h]
                    if finish[k, h] > last_read[u, b]:
                        last_read[u, b] = finish[k, h]
        n = 0
        for u in range(u_n):
            d = dev[k, u]
            # The unit's external outputs stay until its last reader on d finished
            # and its transfers left.
            release = max(finish[k, u], last_read[u, d])
            for b in range(dn):
                if need[k, u, b]:
                    release = max(release, tx_end[k, u, b])
                    t[n], delta[n], ev_dev[n] = tx_start[k, u, b], nbytes[k, u, b], b
                    t[n + 1], delta[n + 1], ev_dev[n + 1] = last_read[u, b], -nbytes[k, u, b], b
                    n += 2
            t[n], delta[n], ev_dev[n] = start[k, u], external[u] + transient[u], d
            t[n + 1], delta[n + 1], ev_dev[n + 1] = finish[k, u], -transient[u], d
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
                if live[d] > peak[k, d]:
                    peak[k, d] = live[d]
            i = j


def per_device_sum(dev: np.ndarray, values: np.ndarray, num_devices: int) -> np.ndarray:
    """Sums [K, U] values per device of [K, U] `dev`; returns [K, D]."""
    k = len(dev)
    flat = (np.arange(k)[:, None] * num_devices + dev).ravel()
    return np.bincount(flat, weights=np.ravel(values), minlength=k * num_devices).reshape(k, num_devices)
