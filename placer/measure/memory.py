"""Peak memory per device of scheduled placements (no TensorFlow).

The model is in `placer.measure.simulator`'s docstring: persistent bytes of
the ops on a device, plus activations alive between their allocation and
their last reader; frees at a time come before allocations at that time.
"""

from __future__ import annotations

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
    dn = num_devices
    persist = per_device_sum(dev, np.broadcast_to(units.persistent, (k, u_n)), dn)
    # Last finish of a data reader of each unit on each device.
    deg = np.diff(units.succ_ptr)
    eu = np.repeat(np.arange(u_n), deg)[units.succ_data]
    eh = units.succ_unit[units.succ_data]
    cf = np.full((k, u_n, dn), -np.inf)
    if len(eu):
        starts = np.flatnonzero(np.r_[True, eu[1:] != eu[:-1]])
        fh, dh = s.finish[:, eh], dev[:, eh]
        for b in range(dn):
            cf[:, eu[starts], b] = np.maximum.reduceat(np.where(dh == b, fh, -np.inf), starts, axis=1)
    own = np.take_along_axis(cf, dev[:, :, None], 2)[:, :, 0]
    release = np.fmax(np.maximum(s.finish, own), np.nanmax(np.where(need, s.tx_end, -np.inf), axis=2))
    cols = np.flatnonzero(need.reshape(k, -1).any(0))
    ub = np.arange(dn)
    times = np.concatenate(
        [
            s.start,
            s.finish,
            release,
            np.where(need, s.tx_start, np.inf).reshape(k, -1)[:, cols],
            np.where(need, cf, np.inf).reshape(k, -1)[:, cols],
        ],
        1,
    )
    rb = np.broadcast_to(nbytes, (k, u_n, dn)).reshape(k, -1)[:, cols]
    deltas = np.concatenate(
        [
            np.broadcast_to(units.external + units.transient, (k, u_n)),
            np.broadcast_to(-units.transient, (k, u_n)),
            np.broadcast_to(-units.external, (k, u_n)),
            rb,
            -rb,
        ],
        1,
    )
    rdev = np.broadcast_to(ub, (k, u_n, dn)).reshape(k, -1)[:, cols]
    devs = np.concatenate([dev, dev, dev, rdev, rdev], 1).astype(np.int8 if dn < 128 else np.int64)
    n_ev = times.shape[1]
    base = (np.arange(k) * n_ev)[:, None]
    # Sort by time, then (stable, radix on small ints) by device: each row becomes
    # one segment per device, in time order.
    o = np.argsort(times, axis=1) + base
    o = np.take_along_axis(o, np.argsort(devs.ravel()[o], axis=1, kind="stable"), 1).ravel()
    t, dl, dv = times.ravel()[o], deltas.ravel()[o], devs.ravel()[o].astype(np.int64)
    seg = dv + np.repeat(np.arange(k) * dn, n_ev)  # (row, device) segment id, non-decreasing
    end = np.ones(len(t), dtype=bool)  # last event of a time on its device: memory is read there
    end[:-1] = (t[1:] != t[:-1]) | (seg[1:] != seg[:-1])
    cs = np.cumsum(dl)
    counts = np.bincount(seg, minlength=k * dn)
    first = np.cumsum(counts) - counts
    before = np.where(first > 0, cs[np.maximum(first - 1, 0)], 0.0)
    live = np.where(end, cs - np.repeat(before, counts), 0.0)
    nz = counts > 0
    peak = np.zeros(k * dn)
    peak[nz] = np.maximum.reduceat(live, first[nz])
    peak = np.maximum(peak, 0.0).reshape(k, dn)
    return persist + peak


def per_device_sum(dev: np.ndarray, values: np.ndarray, num_devices: int) -> np.ndarray:
    """Sums [K, U] values per device of [K, U] `dev`; returns [K, D]."""
    k = len(dev)
    flat = (np.arange(k)[:, None] * num_devices + dev).ravel()
    return np.bincount(flat, weights=np.ravel(values), minlength=k * num_devices).reshape(k, num_devices)
