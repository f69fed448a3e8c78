"""A lower bound on the step time of any placement (no TensorFlow).

Used to report how far a placement is from the best any placement could do:
`step_time / lower_bound(graph, cluster)` is at least 1 under the simulator's
model (op time = reference cost / device speed, devices run one op at a time).

Definition. For op v let t(v, d) = cost(v, type(d)) / speed(d) + dispatch(d)
be its time on device d (NaN costs excluded; the dispatch is the simulator's
per-op cost, the graph's calibration where it carries one, and ops a step
never runs pay none), and t*(v) = min_d t(v, d). Then

  lower_bound = max(critical path, work / devices, reference work / speed)

* critical path: the longest path through the graph (data and control edges)
  with every op taking t*(v) and transfers free;
* work / devices: sum_v t*(v) / D, since the D devices together are busy for
  at least the sum of the op times and each is busy at most the step time;
* reference work / speed: sum_v min_type cost(v, type) / sum_d speed(d),
  since device d finishes at most speed(d) reference-seconds of work per
  second (this is the tighter one when devices differ in speed).
"""

from __future__ import annotations

import numpy as np

from placer.core import dag
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.measure import calibration


def op_min_times(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [n_ops] seconds of each op on its fastest device of the cluster, its dispatch included.

    Raises:
      InputError: an op has no cost on any device type of the cluster.
    """
    if graph.num_ops == 0:
        return np.zeros(0)
    cluster = calibration.calibrated(cluster, graph)
    times = cluster.op_seconds(graph)
    bad = np.isnan(times).all(1)
    if bad.any():
        op = int(np.argmax(bad))
        raise InputError(f"op {graph.names[op]!r} has no cost on any device type of cluster {cluster.name!r}")
    return np.nanmin(times, 1)


def critical_path(graph: OpGraph, op_time: np.ndarray) -> float:
    """Returns the longest path in seconds, each op taking `op_time`, edges free.

    The largest bottom level (`placer.core.dag`): linear time, where
    networkx's longest path built a graph object of every edge first (9 s of
    a 200,000-op graph's 10).

    Args:
      graph: the op graph (topologically ordered: edges go to higher indices).
      op_time: [n_ops] seconds per op.
    """
    if graph.num_ops == 0:
        return 0.0
    return float(dag.bottom_levels(op_time, graph.edge_src, graph.edge_dst).max())


def lower_bound(graph: OpGraph, cluster: Cluster) -> float:
    """Returns a lower bound on the step time of any placement, in seconds.

    See the module docstring for the definition.

    Raises:
      InputError: an op has no cost on any device type of the cluster.
    """
    tmin = op_min_times(graph, cluster)
    if graph.num_ops == 0:
        return 0.0
    types = sorted({d.type for d in cluster.devices})
    ref = np.nanmin(np.stack([graph.cost_for(t) for t in types], 1), 1)
    work = max(tmin.sum() / cluster.num_devices, ref.sum() / cluster.speeds().sum())
    return float(max(critical_path(graph, tmin), work))
