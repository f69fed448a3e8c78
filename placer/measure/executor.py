"""What the runtime adds to kernel times in the simulator (no TensorFlow).

* Dispatch: every op pays its device's `dispatch` seconds (TF's executor
  work per op, plus the kernel launch on a GPU), so a unit of n ops pays n;
  ops the graph marks outside the training step (`OpGraph.in_step`) pay none.
* A shared executor thread (`Cluster.serial_executor`): TF with one inter-op
  thread runs the ops of all the devices of a process on that one thread, so
  logical CPU devices never compute at once.
* The two simulation levels a step time can come from (op or group), named
  in every report that quotes one.
"""

from __future__ import annotations

import numpy as np

from placer.measure import schedule as sched
from placer.measure.units import Units

LEVEL_OP = "op"  # every op scheduled on its own, its outputs sent when it ends
LEVEL_GROUP = "group"  # a group's ops back to back, its outputs sent when the whole group ends


def op_counts(units: Units, weights: np.ndarray | None = None) -> np.ndarray:
    """[U] ops per unit (float, to scale a per-op dispatch); with [n_ops] `weights`, their sum per unit.

    The simulator passes `OpGraph.step_weights()`: ops a step never runs pay no dispatch.
    """
    return np.bincount(units.op_unit, weights=weights, minlength=units.num_units).astype(np.float64)


def serial_schedule(units: Units, dur: np.ndarray, need: np.ndarray, xt: np.ndarray) -> sched.Schedule:
    """Schedules K placements on devices that share one executor thread.

    The thread runs every unit in turn and spends each unit's transfers right
    after it (TF's _Send and _Recv run on that thread too), so the placement
    is scheduled as on one device whose units take `dur` plus their
    transfers; each transfer starts and ends when its extended unit finishes.

    Args:
      units: the unit graph.
      dur: [K, U] seconds per unit, dispatch included.
      need: [K, U, D] whether a unit sends to a device.
      xt: [K, U, D] seconds of that transfer.

    Returns:
      The schedule, with [K, U, D] transfer times for the memory model.
    """
    k, u_n = dur.shape
    one = np.zeros((k, u_n), np.int64)
    s = sched.schedule(units, one, dur + xt.sum(2), np.zeros((k, u_n, 1), bool), np.zeros((k, u_n, 1)), 1)
    at = np.where(need, s.finish[:, :, None], np.nan)
    return sched.Schedule(s.start, s.finish, at, at.copy())
