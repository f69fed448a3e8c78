"""The check that a backend costed each op of a placement as in the unplaced graph (no TensorFlow).

A placement changes where ops run, which transfers happen and in what order;
it must not change what one op costs on a given device. A backend whose op
costs drop once the graph is split reports placements faster than they are,
and a search that rewards such a backend learns to exploit the cost model
(docs/measure.md tells how Grappler's shape inference once did this). Each
backend that computes its own per-op costs passes them here with the costs
of the same ops with the whole graph on the same device.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from placer.core import fmt
from placer.core.op_graph import OpGraph

TOLERANCE = 0.10  # an op may cost at most 10% less than unplaced before the measurement is flagged


def cost_drops(placed_s: np.ndarray, unplaced_s: np.ndarray, tolerance: float = TOLERANCE) -> np.ndarray:
    """Returns [n_ops] bool: ops costing more than `tolerance` less than unplaced.

    Args:
      placed_s: [n_ops] seconds per op under the placement; NaN where the
        backend reported none (the op is not compared).
      unplaced_s: [n_ops] seconds of each op on the same device with every op
        there; ops costing 0 or NaN are not compared.
      tolerance: the relative drop allowed, e.g. 0.1 for 10%.
    """
    placed = np.asarray(placed_s, dtype=np.float64)
    ref = np.asarray(unplaced_s, dtype=np.float64)
    valid = np.isfinite(placed) & np.isfinite(ref) & (ref > 0)
    return valid & (placed < (1.0 - tolerance) * np.where(valid, ref, 0.0))


def cost_flag(
    graph: OpGraph,
    devices: np.ndarray,
    device_names: Sequence[str],
    placed_s: np.ndarray,
    unplaced_s: np.ndarray,
    tolerance: float = TOLERANCE,
) -> str:
    """The `Measurement.flag` of a placement: "" or a line naming the op that lost the most seconds.

    Args:
      graph: the op graph.
      devices: [n_ops] device index per op.
      device_names: device names by index.
      placed_s, unplaced_s, tolerance: see `cost_drops`.
    """
    drops = cost_drops(placed_s, unplaced_s, tolerance)
    if not drops.any():
        return ""
    placed = np.asarray(placed_s, dtype=np.float64)
    ref = np.asarray(unplaced_s, dtype=np.float64)
    i = int(np.argmax(np.where(drops, ref - placed, -np.inf)))  # the most seconds lost
    return (
        f"op {graph.names[i]!r} ({graph.types[i]}) costs {fmt.seconds(placed[i])} on "
        f"{device_names[int(devices[i])]} under this placement, {fmt.seconds(ref[i])} unplaced "
        f"({fmt.change(placed[i], ref[i], worse='more', better='less')}); "
        f"{int(drops.sum())} ops cost over {tolerance:.0%} less than unplaced"
    )
