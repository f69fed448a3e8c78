"""A lower bound on the step time of any placement (no TensorFlow).

Used to report how far a placement is from the best any placement could do:
`step_time / lower_bound(graph, cluster)` is at least 1 under the simulator's
model (op time = reference cost / device speed, devices run one op at a time).

Definition. For op v let t(v, d) = cost(v, type(d)) / speed(d) + dispatch(d)
be its time on device d (NaN costs excluded; the dispatch is the simulator's
per-op cost, the graph's calibration where it carries one, and ops a step
never runs pay none), and t*(v) = min_d t(v, d). Then

  lower_bound = max(critical path, load)

* critical path: the longest path through the graph (data and control edges)
  with every op taking t*(v) and transfers free;
* load: the optimum of the linear program "assign each op fractionally to
  the devices that can run it, x(v, d) >= 0 with sum_d x(v, d) = 1, and
  minimise L with sum_v x(v, d) t(v, d) <= L for every device d" (solved by
  scipy's HiGHS). Any placement is one such assignment (x = 0 or 1), and its
  step time is at least its busiest device's load, so L bounds it. The LP is
  at least the older work bounds, sum_v t*(v) / D and reference work over
  aggregate speed, and larger when devices differ in speed or kind (a
  CPU-only op loads the CPU whatever the GPUs do).

Both terms are taken at op level, whatever level a placement is measured at,
so a group placement and an op placement are judged against the same bound.
Identical devices (the same column of times) share their class's load
evenly in some optimum, so a class of m devices is one column of times / m;
ops with the same row of class times are one variable per class (their count
as its total). With one class the LP is its total load; with two (the usual
CPU and GPUs) it is solved exactly by sorting (`_two_class_load`), since
HiGHS took minutes on 200,000 distinct ops; with more, HiGHS solves the
(distinct rows) x classes LP.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

from placer.core import dag, fmt
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.measure import calibration

CRITICAL_PATH, LOAD = "critical path", "load"


@dataclasses.dataclass(frozen=True)
class Bound:
    """The lower bound and its two terms, in seconds.

    Attributes:
      value: max(critical_path, load).
      critical_path: the longest path, each op on its fastest device, transfers free.
      load: the fractional load bound (the LP of the module docstring).
    """

    value: float
    critical_path: float
    load: float

    @property
    def binds(self) -> str:
        """Which term is the bound: CRITICAL_PATH or LOAD (the critical path on a tie)."""
        return CRITICAL_PATH if self.critical_path >= self.load else LOAD

    def describe(self) -> str:
        """One line, e.g. "200.2 ms (load binds; critical path 161.0 ms)"."""
        other = LOAD if self.binds == CRITICAL_PATH else CRITICAL_PATH
        other_s = self.load if other == LOAD else self.critical_path
        return f"{fmt.step_time(self.value)} ({self.binds} binds; {other} {fmt.step_time(other_s)})"


def op_device_times(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [n_ops, D] seconds of each op on each device, its dispatch included (NaN: no kernel).

    Raises:
      InputError: an op has no cost on any device type of the cluster.
    """
    times = calibration.calibrated(cluster, graph).op_seconds(graph)
    bad = np.isnan(times).all(1)
    if bad.any():
        op = int(np.argmax(bad))
        raise InputError(f"op {graph.names[op]!r} has no cost on any device type of cluster {cluster.name!r}")
    return times.reshape(graph.num_ops, cluster.num_devices)


def op_min_times(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """Returns [n_ops] seconds of each op on its fastest device of the cluster, its dispatch included.

    Raises:
      InputError: an op has no cost on any device type of the cluster.
    """
    if graph.num_ops == 0:
        return np.zeros(0)
    return np.nanmin(op_device_times(graph, cluster), 1)


def load_bound(times: np.ndarray) -> float:
    """Returns the fractional load bound in seconds (the LP of the module docstring).

    Args:
      times: [n, D] seconds of each op (or unit) on each device, NaN where it cannot run.
    """
    if not len(times):
        return 0.0
    filled = np.where(np.isnan(times), -1.0, times)
    columns, size = np.unique(filled.T, axis=0, return_counts=True)  # device classes and their sizes
    per_class = np.where(columns.T >= 0, columns.T / size, -1.0)
    rows, count = np.unique(per_class, axis=0, return_counts=True)
    if rows.shape[1] == 1:
        return float(rows[:, 0] @ count)
    if rows.shape[1] == 2:
        return _two_class_load(rows, count)
    return _lp_load(rows, count)


def _two_class_load(rows: np.ndarray, count: np.ndarray) -> float:
    """The LP's optimum with two device classes: rows [r, 2] of seconds (-1: cannot run), each `count` times.

    Ops that only one class runs load it; the others go to the first class in
    order of their time ratio first / second, the cheapest first, up to where
    the two loads meet (one op split between them): exchanging any two ops out
    of that order moves load without lowering the larger one.
    """
    a, b = rows[:, 0] * count, rows[:, 1] * count
    only_a, only_b = rows[:, 1] < 0, rows[:, 0] < 0
    load_a, load_b = a[only_a].sum(), b[only_b].sum()
    both = ~(only_a | only_b)
    a, b = a[both], b[both]
    order = np.argsort(np.divide(a, b, out=np.full(len(a), np.inf), where=b > 0), kind="stable")
    a, b = a[order], b[order]
    gap = load_a + np.r_[0.0, np.cumsum(a)] - (load_b + b.sum() - np.r_[0.0, np.cumsum(b)])  # first k to A
    if gap[0] >= 0:
        return float(load_a)
    if gap[-1] <= 0:
        return float(load_b)
    k = int(np.argmax(gap > 0)) - 1  # op k is split: gap[k] < 0 < gap[k + 1]
    return float(load_a + a[:k].sum() + a[k] * -gap[k] / (a[k] + b[k]))


def _lp_load(rows: np.ndarray, count: np.ndarray) -> float:
    """The LP's optimum by HiGHS: rows [r, C] of seconds per class (-1: cannot run), each `count` times."""
    r, dn = rows.shape
    ok = rows >= 0
    var_r, var_d = np.nonzero(ok)  # one variable per (distinct row, class that can run it), then L
    nv = len(var_r)
    c = np.zeros(nv + 1)
    c[-1] = 1.0
    a_eq = _sparse(var_r, np.arange(nv), np.ones(nv), (r, nv + 1))
    a_ub = _sparse(
        np.r_[var_d, np.arange(dn)], np.r_[np.arange(nv), np.full(dn, nv)], np.r_[rows[ok], -np.ones(dn)], (dn, nv + 1)
    )
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(dn), A_eq=a_eq, b_eq=count.astype(float), method="highs")
    if res.status != 0:  # the LP is always feasible and bounded; keep a weaker bound if HiGHS gives up
        return float(np.where(ok, rows, np.inf).min(1) @ count / dn)
    return float(res.fun)


def _sparse(i, j, v, shape):
    return csr_matrix((v, (i, j)), shape=shape)


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


def bound(graph: OpGraph, cluster: Cluster) -> Bound:
    """Returns the lower bound on the step time of any placement with its terms (module docstring).

    Raises:
      InputError: an op has no cost on any device type of the cluster.
    """
    if graph.num_ops == 0:
        return Bound(0.0, 0.0, 0.0)
    times = op_device_times(graph, cluster)
    cp = critical_path(graph, np.nanmin(times, 1))
    load = load_bound(times)
    return Bound(max(cp, load), cp, load)


def lower_bound(graph: OpGraph, cluster: Cluster) -> float:
    """Returns `bound(graph, cluster).value`: a lower bound on the step time of any placement, in seconds.

    Raises:
      InputError: an op has no cost on any device type of the cluster.
    """
    return bound(graph, cluster).value
