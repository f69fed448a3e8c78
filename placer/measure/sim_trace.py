"""What the simulator returns for one placement, and the op-level timeline of a traced run (no TensorFlow)."""

from __future__ import annotations

import dataclasses

import numpy as np

from placer.core.measurement import Measurement


@dataclasses.dataclass(frozen=True, eq=False)
class SimResult:
    """The simulated outcome of one placement.

    Attributes:
      step_time: seconds per step (inf when failed).
      busy_time: [D] seconds each device computed.
      peak_memory: [D] peak bytes per device.
      bytes_moved: bytes sent between devices.
      failure: None or a failure kind of placer.core.measurement.
      message: failure detail ("" when none).
      op_device: [n_ops] device of each op (only with trace=True, else None).
      op_start, op_finish: [n_ops] seconds (only with trace=True).
      transfers: (src device, dst device, start s, end s, bytes, producer op
        name) per transfer (only with trace=True).
    """

    step_time: float
    busy_time: np.ndarray
    peak_memory: np.ndarray
    bytes_moved: float
    failure: str | None = None
    message: str = ""
    op_device: np.ndarray | None = None
    op_start: np.ndarray | None = None
    op_finish: np.ndarray | None = None
    transfers: tuple = ()

    @property
    def ok(self) -> bool:
        return self.failure is None

    def measurement(self) -> Measurement:
        """Returns the Measurement form of this result."""
        return Measurement(
            self.step_time, self.failure, self.message, self.peak_memory, self.busy_time, self.bytes_moved
        )


def op_trace(sim, units, dev_u, o, i) -> dict:
    """Op-level start and finish times (s) and transfers of placement `i` of a traced kernel run.

    The ops of a unit run back to back in index order from the unit's
    start, each taking its seconds on its device (`Cluster.op_seconds`; an
    op without a kernel there, its dispatch).

    Args:
      sim: the placer.measure.simulator.Simulator that ran it.
      units: the units it scheduled; dev_u: [U] their devices.
      o: the traced placer.measure.fast.Outcome; i: the placement's row in it.

    Returns:
      SimResult's trace fields: op_device, op_start, op_finish, transfers.
    """
    g = sim.graph
    n = g.num_ops
    op_dev = dev_u[units.op_unit]
    seconds = sim.cluster.op_seconds(g)[np.arange(n), op_dev]
    seconds = np.where(np.isnan(seconds), g.step_weights() * sim.cluster.dispatch()[op_dev], seconds)  # no kernel
    order = np.lexsort((np.arange(n), units.op_unit))
    first = np.searchsorted(units.op_unit[order], units.op_unit[order])
    before = np.cumsum(seconds[order]) - seconds[order]  # seconds of the ops before each, in the sorted order
    op_start = np.empty(n)
    op_start[order] = o.start[i][units.op_unit[order]] + (before - before[first])
    last = np.zeros(units.num_units, dtype=np.int64)
    np.maximum.at(last, units.op_unit, np.arange(n))
    transfers = tuple(
        (int(dev_u[u]), int(b), float(o.tx_start[i, u, b]), float(o.tx_end[i, u, b]), float(o.nbytes[i, u, b]),
         str(g.names[last[u]]))
        for u, b in zip(*np.nonzero(~np.isnan(o.tx_start[i])), strict=True)
    )  # fmt: skip
    return {"op_device": op_dev, "op_start": op_start, "op_finish": op_start + seconds, "transfers": transfers}
