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


def op_trace(sim, units, dev_u, s, i, nbytes) -> dict:
    """Op-level start and finish times (s) and transfers of placement `i` of a simulated chunk.

    Args:
      sim: the placer.measure.simulator.Simulator that ran it.
      units: the units it scheduled; dev_u: [U] their devices.
      s: the chunk's schedule; i: the placement's row in it.
      nbytes: [U, D] bytes each unit sent to each device.

    Returns:
      SimResult's trace fields: op_device, op_start, op_finish, transfers.
    """
    g = sim.graph
    op_dev = dev_u[units.op_unit]
    col = np.maximum(sim.type_col[op_dev], 0)
    speed = sim.speed[op_dev]
    # Ops of the step before this one in its unit (index order), each with its dispatch.
    w = g.step_weights()
    order = np.lexsort((np.arange(g.num_ops), units.op_unit))
    first = np.searchsorted(units.op_unit[order], units.op_unit[order])
    before = np.cumsum(w[order]) - w[order]  # step ops before each, in the sorted order
    rank = np.empty(g.num_ops)
    rank[order] = before - before[first]
    disp = sim.dispatch[op_dev] * w
    op_start = s.start[i][units.op_unit] + units.offset[np.arange(g.num_ops), col] / speed + rank * disp
    cost = np.nan_to_num(g.compute_cost[np.arange(g.num_ops), col]) if g.device_types else np.zeros(g.num_ops)
    op_finish = op_start + cost / speed + disp
    last = np.zeros(units.num_units, dtype=np.int64)
    np.maximum.at(last, units.op_unit, np.arange(g.num_ops))
    transfers = tuple(
        (
            int(dev_u[u]),
            int(b),
            float(s.tx_start[i, u, b]),
            float(s.tx_end[i, u, b]),
            float(nbytes[u, b]),
            str(g.names[last[u]]),
        )
        for u, b in zip(*np.nonzero(~np.isnan(s.tx_start[i])), strict=True)
    )
    return {"op_device": op_dev, "op_start": op_start, "op_finish": op_finish, "transfers": transfers}
