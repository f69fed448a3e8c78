"""This machine's per-op overheads, as measured when a graph's costs were profiled (no TensorFlow).

`graphs.costs.profiled_costs` measures the CPU's dispatch (the executor's
time per op) and transfer cost (per tensor sent between two logical CPU
devices) in the process and at the moment it profiles the op costs, and keeps
them in the graph's `calibration` (graphs/costs_calibrate.py). Those op costs
have the tracer's floor taken off and describe kernels only, so the
simulator pairs them with the dispatch of the same moment: the CPU devices of
a cluster of this machine (named "local", graphs/local_cluster.py) take the
graph's figures instead of the constants `placer.core.cluster` documents
(LOCAL_CPU_DISPATCH, LOCAL_CPU_TRANSFER_COST, measured once by
bench/dispatch.py). Other clusters (presets, cluster files) keep their own
figures, and so does every cluster when the graph carries none (Grappler
costs, graph files without a calibration).
"""

from __future__ import annotations

import dataclasses

from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph

LOCAL_NAME = "local"  # the name graphs/local_cluster.py gives this machine's clusters


def calibrated(cluster: Cluster, graph: OpGraph) -> Cluster:
    """`cluster` with its CPU devices' dispatch and transfer cost from `graph.calibration`.

    Args:
      cluster: the cluster to simulate on.
      graph: the costed graph; its calibration holds seconds by
        placer.core.op_graph.CALIBRATION_KEYS.

    Returns:
      The same cluster unless it is named "local" and the graph was
      calibrated; then a copy whose CPU devices carry the calibrated
      `dispatch` and `transfer_cost` (seconds).
    """
    cal = graph.calibration
    if cluster.name != LOCAL_NAME or "cpu_dispatch" not in cal:
        return cluster
    devices = tuple(
        dataclasses.replace(
            d,
            dispatch=cal["cpu_dispatch"],
            transfer_cost=cal.get("cpu_transfer_cost", d.transfer_cost),
        )
        if d.type == "CPU"
        else d
        for d in cluster.devices
    )
    return dataclasses.replace(cluster, devices=devices)


def pool_bounds(step_time: float, ops_run: int, handoff: float, threads: int) -> tuple[float, float]:
    """Bounds of a step under TF's default inter-op pool, from the simulator's one-op-at-a-time step.

    The simulator runs one op at a time per device. A pool of `threads`
    threads runs at most that many ops at once, so a step takes at least
    `step_time / threads`; handing ops between pool threads costs time, and
    each op run is handed off at most once, so a step takes at most
    `step_time + ops_run * handoff` (graphs/costs_calibrate.py
    `pool_handoff`).

    Args:
      step_time: simulated seconds per step, one op at a time.
      ops_run: ops a step runs.
      handoff: seconds one hand-off adds.
      threads: threads of the pool (at least 1).

    Returns:
      (lower, upper) seconds per step.
    """
    return step_time / max(int(threads), 1), step_time + ops_run * handoff
