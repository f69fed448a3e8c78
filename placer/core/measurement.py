"""The measurement protocol every backend implements (no TensorFlow)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

# Failure kinds, as the paper distinguishes them.
OOM = "oom"  # a device ran out of memory
UNSUPPORTED = "unsupported"  # an op placed on a device type with no kernel for it
TIMEOUT = "timeout"  # the measurement took longer than allowed
ERROR = "error"  # any other runtime error
FAILURES = (OOM, UNSUPPORTED, TIMEOUT, ERROR)


@dataclasses.dataclass(frozen=True)
class Measurement:
    """The outcome of measuring one placement.

    Attributes:
      step_time: seconds per training step; inf when the placement failed.
      failure: None, or one of FAILURES.
      message: human-readable detail of the failure ("" when none).
      peak_memory: [D] peak bytes per device (what was reached before a failure).
      busy_time: [D] seconds each device spent computing in one step.
      bytes_moved: bytes sent across devices in one step.
      flag: "" when the backend costed every op as it does in the unplaced
        graph; otherwise a one-line account of the op whose cost dropped
        most under this placement (the step time is then not to be trusted,
        see docs/measure.md).
    """

    step_time: float
    failure: str | None = None
    message: str = ""
    peak_memory: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    busy_time: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    bytes_moved: float = 0.0
    flag: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def flagged(self) -> bool:
        """True when some op's cost dropped under this placement (see `flag`)."""
        return bool(self.flag)

    @staticmethod
    def failed(kind: str, message: str, num_devices: int = 0) -> Measurement:
        """A failed measurement of `kind` with zeroed per-device figures."""
        assert kind in FAILURES, kind
        return Measurement(float("inf"), kind, message, np.zeros(num_devices), np.zeros(num_devices))


class Measurer(Protocol):
    """Measures placements of one graph on one cluster.

    Implementations: the simulator, Grappler's virtual cluster, and a real
    `tf.compat.v1.Session`. Callers never know which one they got.
    """

    def measure(self, placements: Sequence[Placement]) -> list[Measurement]:
        """Returns one Measurement per placement, in order; never raises for a
        placement that merely cannot run (that is a failed Measurement)."""
        ...


def measure_devices(
    measurer: Measurer,
    graph: OpGraph,
    device_names: Sequence[str],
    batch: np.ndarray,
    *,
    op_group: np.ndarray | None = None,
) -> list[Measurement]:
    """Measures K placements given as device indices, building no Placement when it need not.

    A measurer whose class sets `takes_device_arrays = True` (the simulator)
    gets the arrays themselves, through its `measure_devices(batch, op_group)`;
    any other gets one Placement per row through `measure`. Both give the
    same measurements.

    Args:
      measurer: the backend.
      graph: the graph placed.
      device_names: the cluster's device names, in index order.
      batch: [K, n_ops] device index per op, or [K, G] device per group when
        `op_group` is given (each group then placed whole).
      op_group: [n_ops] group of each op, for per-group rows.

    Returns:
      One Measurement per row, in order.
    """
    batch = np.asarray(batch)
    if getattr(measurer, "takes_device_arrays", False):
        return measurer.measure_devices(batch, op_group)  # type: ignore[attr-defined]
    if op_group is None:
        return measurer.measure([Placement.from_ops(graph, row, device_names) for row in batch])
    return measurer.measure([Placement.from_groups(graph, op_group, row, device_names) for row in batch])
