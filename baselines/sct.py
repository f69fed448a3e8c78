"""Baechi's m-SCT placer (Jeon et al., SoCC 2020): ETF with favourite children.

The small-communication-time (SCT) algorithm of Hanen and Munier (1995)
solves the LP relaxation of scheduling with communication delays: per edge
u -> v a variable x in [0, 1] (0: v is u's favourite child and runs right
after u on u's device, no transfer; 1: the transfer is paid), start times s
and the makespan w:

    minimise w  subject to
      s_u + p_u + c_uv x_uv <= s_v        for each edge u -> v
      sum_v x_uv >= outdeg(u) - 1         (at most one favourite child)
      sum_u x_uv >= indeg(v) - 1          (at most one favourite parent)
      s_u + p_u <= w,  s >= 0,  0 <= x <= 1

solved with scipy.optimize.linprog (method="highs"). Edges with x < 0.5 are
favourite (Baechi's threshold), kept in increasing x so that every op keeps
at most one favourite child and one favourite parent. p is the op's mean time
over the target devices, c the transfer time over the mean target link.

When the LP has more than `lp_max_vars` variables (paper-size graphs of 10^4
to 10^5 ops) or HiGHS does not finish within `lp_time_limit` seconds, the
favourite children come from the greedy rule instead: each op's favourite
child is its child over the costliest edge, edges taken from the costliest
down so each op keeps at most one favourite parent. The metadata says which
was used ("favourite": "lp" or "greedy").

Then m-ETF (baselines.list_scheduling.etf_schedule) places the ops, sending a
favourite child to its favourite parent's device when it has room.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.sparse

from baselines import common
from baselines.list_scheduling import etf_schedule, targets_of
from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

LP_MAX_VARS = 8_000  # edges + ops + 1 above which the greedy rule is used (~2,000 ops: a few s)
LP_TIME_LIMIT = 20.0  # seconds HiGHS may take before the greedy rule is used


def sct_costs(graph: OpGraph, cluster: Cluster, targets: list[int]):
    """Returns the SCT inputs over the targets.

    Returns:
      (p [n] seconds per op, src [m], dst [m], c [m] seconds per merged edge).
    """
    t = common.op_times(graph, cluster)[:, targets]
    known = ~np.isnan(t)
    p = np.where(known, t, 0.0).sum(axis=1) / np.maximum(known.sum(axis=1), 1)
    src, dst, b = common.merged_edges(graph)
    if len(targets) > 1:
        off = ~np.eye(len(targets), dtype=bool)
        bw = cluster.bandwidth[np.ix_(targets, targets)][off].mean()
        lat = cluster.latency[np.ix_(targets, targets)][off].mean()
    else:
        bw, lat = np.inf, 0.0
    c = np.where(b > 0, lat + b / bw, 0.0)
    return p, src, dst, c


def lp_favourites(
    n: int, p: np.ndarray, src: np.ndarray, dst: np.ndarray, c: np.ndarray, time_limit: float = LP_TIME_LIMIT
) -> np.ndarray | None:
    """Solves the SCT LP relaxation (module docstring).

    Args:
      n: number of ops.
      p: [n] seconds per op.
      src, dst: [m] edges (merged, src < dst).
      c: [m] seconds of transfer per edge.
      time_limit: seconds HiGHS may take.

    Returns:
      [m] relaxed x (0 = favourite), or None if HiGHS did not solve it.
    """
    m = len(src)
    nv = m + n + 1
    e = np.arange(m)
    rows, cols, vals, rhs = [], [], [], []
    r = 0
    # precedence: s_u - s_v + c x <= -p_u
    rows += [r + e, r + e, r + e]
    cols += [m + src, m + dst, e]
    vals += [np.ones(m), -np.ones(m), c]
    rhs.append(-p[src])
    r += m
    # at most one favourite child / parent: -sum x <= 1 - deg
    for key in (src, dst):
        owners, inv = np.unique(key, return_inverse=True)
        deg = np.bincount(inv)
        rows.append(r + inv)
        cols.append(e)
        vals.append(-np.ones(m))
        rhs.append(1.0 - deg)
        r += len(owners)
    # makespan: s_i - w <= -p_i
    i = np.arange(n)
    rows += [r + i, r + i]
    cols += [m + i, np.full(n, nv - 1)]
    vals += [np.ones(n), -np.ones(n)]
    rhs.append(-p)
    r += n
    a = scipy.sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, nv))
    obj = np.zeros(nv)
    obj[-1] = 1.0
    bounds = np.zeros((nv, 2))
    bounds[:m, 1] = 1.0
    bounds[m:, 1] = np.inf
    res = scipy.optimize.linprog(
        obj,
        A_ub=a,
        b_ub=np.concatenate(rhs),
        bounds=bounds,
        method="highs",
        options={"time_limit": float(time_limit)},
    )
    if res.status != 0 or res.x is None:
        return None
    return res.x[:m]


def pick_favourites(n: int, src: np.ndarray, dst: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Returns [n] favourite child per op (-1: none), taking edges in `order`.

    An edge is kept if its parent has no favourite child yet and its child
    no favourite parent yet.
    """
    fav = np.full(n, -1, dtype=np.int64)
    has_parent = np.zeros(n, dtype=bool)
    for k in order.tolist():
        u, v = src[k], dst[k]
        if fav[u] < 0 and not has_parent[v]:
            fav[u] = v
            has_parent[v] = True
    return fav


def favourites(
    graph: OpGraph,
    cluster: Cluster,
    targets: list[int],
    *,
    lp_max_vars: int = LP_MAX_VARS,
    lp_time_limit: float = LP_TIME_LIMIT,
) -> tuple[np.ndarray, str]:
    """Returns ([n] favourite child per op or -1, "lp" or "greedy")."""
    p, src, dst, c = sct_costs(graph, cluster, targets)
    n, m = graph.num_ops, len(src)
    if m == 0:
        return np.full(n, -1, dtype=np.int64), "lp"
    x = None
    if m + n + 1 <= lp_max_vars:
        x = lp_favourites(n, p, src, dst, c, lp_time_limit)
    if x is not None:
        keep = np.flatnonzero(x < 0.5)
        order = keep[np.lexsort((-c[keep], x[keep]))]
        return pick_favourites(n, src, dst, order), "lp"
    order = np.lexsort((np.arange(m), -c))
    order = order[c[order] > 0]
    return pick_favourites(n, src, dst, order), "greedy"


def place(
    graph: OpGraph,
    cluster: Cluster,
    *,
    seed=None,
    use_cpu: bool = False,
    lp_max_vars: int = LP_MAX_VARS,
    lp_time_limit: float = LP_TIME_LIMIT,
    **options,
) -> Placement:
    """Baechi's m-SCT placement.

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: unused (deterministic).
      use_cpu: also schedule on the CPU(s) (default: GPUs only, as Baechi).
      lp_max_vars: largest LP (edges + ops + 1 variables) solved exactly.
      lp_time_limit: seconds HiGHS may take.
      **options: none others; any other raises InputError.

    On a cluster without GPUs every device is a target.
    """
    del seed
    common.refuse_options("m_sct", options, ("use_cpu", "lp_max_vars", "lp_time_limit"))
    targets = targets_of(cluster, "m_sct", use_cpu)
    fav, how = favourites(graph, cluster, targets, lp_max_vars=lp_max_vars, lp_time_limit=lp_time_limit)
    sched = etf_schedule(graph, cluster, targets, favourite=fav)
    return common.finish(
        graph, cluster, sched.devices, "m_sct", use_cpu=use_cpu, favourite=how, estimated_step_time=sched.makespan
    )
