"""Schedule engines of the simulator: the contracted graph and list scheduling (no TensorFlow).

The simulator schedules *units*: single ops, or groups of ops that run back to
back on one device (the paper's co-located groups). `Units` holds everything
about the unit graph that does not depend on the placement; the two engines
turn per-placement arrays (unit device, duration, transfer times) into start
and finish times.

Scheduling rule (both engines, identical results): list scheduling in which
every device runs one unit at a time and, whenever it is free, starts the
ready unit of highest priority; priority is the lowest unit index (the op
index in the graph's topological order, or the group number). Equivalently,
each step starts, over all devices, the unit with the earliest possible start
time, ties broken by the lowest index; start times never decrease from step to
step. A unit's outputs leave for another device when the unit finishes; each
directed link carries one transfer at a time, in the order the producers
finish. A transfer of n tensors and b bytes over link (a, b) takes
n * latency + b / bandwidth seconds.

`schedule_batch` runs K placements in lock step with numpy (fast for batches
of placements of a graph with up to a few thousand units); `schedule_one` is a
heap-based pure-Python engine for single placements and large op graphs.
"""

from __future__ import annotations

import dataclasses
import heapq

import numpy as np

from graphs.op_graph import OpGraph, topological_order


@dataclasses.dataclass(frozen=True, eq=False)
class Units:
    """The placement-independent part of the unit graph.

    Attributes:
      op_unit: [n_ops] unit of each op.
      num_units: U.
      cost: [U, T] seconds per unit on a reference device of each graph
        device type (sum over its ops; NaN if any op lacks a kernel).
      offset: [n_ops, T] seconds from the unit start to the op start on a
        reference device (ops of a unit run back to back in index order).
      persistent: [U] bytes of variables owned by the unit's ops.
      external: [U] bytes of op outputs consumed by other units (allocated
        from the unit start until the last consumer on its device finished
        and its outgoing transfers completed).
      transient: [U] peak bytes of outputs consumed only inside the unit
        (held while the unit runs).
      succ_ptr, succ_unit, succ_data: unit-level successor CSR (deduplicated);
        succ_data is True when at least one data edge joins the two units.
      indeg: [U] number of distinct predecessor units.
      pair_unit, pair_cons, pair_bytes, pair_count: data sent by producer ops
        that feed exactly one other unit, summed per (unit, consumer unit),
        sorted by unit.
      ent_unit, ent_cons, ent_bytes, ent_pstart: data sent by producer ops
        feeding several other units, per (producer op, consumer unit), bytes
        = the largest edge between them, sorted by producer op; ent_pstart
        indexes the first entry of each producer and ent_unit is its unit.
      acyclic: whether the unit graph has no cycle.
      unit_group: [U] the group each unit belongs to (see `split_cycles`).
    """

    op_unit: np.ndarray
    num_units: int
    cost: np.ndarray
    offset: np.ndarray
    persistent: np.ndarray
    external: np.ndarray
    transient: np.ndarray
    succ_ptr: np.ndarray
    succ_unit: np.ndarray
    succ_data: np.ndarray
    indeg: np.ndarray
    pair_unit: np.ndarray
    pair_cons: np.ndarray
    pair_bytes: np.ndarray
    pair_count: np.ndarray
    ent_unit: np.ndarray
    ent_cons: np.ndarray
    ent_bytes: np.ndarray
    ent_pstart: np.ndarray
    acyclic: bool
    unit_group: np.ndarray


def contract(graph: OpGraph, op_unit: np.ndarray | None = None) -> Units:
    """Builds the unit graph of `graph` (each op its own unit when op_unit is None).

    Args:
      graph: the op graph.
      op_unit: [n_ops] int unit index per op, units numbered 0..U-1.

    Returns:
      The placement-independent tables of the unit graph.
    """
    n = graph.num_ops
    src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
    group = np.arange(n, dtype=np.int64) if op_unit is None else np.asarray(op_unit, dtype=np.int64)
    unit, unit_group = (group, np.arange(int(group.max()) + 1 if n else 0)) if op_unit is None else \
        split_cycles(group, src, dst)
    num_units = int(unit.max()) + 1 if n else 0
    data = ~graph.edge_control
    cost = np.zeros((num_units, len(graph.device_types)))
    np.add.at(cost, unit, graph.compute_cost)
    offset = np.zeros((n, len(graph.device_types)))
    order = np.argsort(unit, kind="stable")
    for t in range(len(graph.device_types)):
        c = np.nan_to_num(graph.compute_cost[order, t])
        cs = np.cumsum(c) - c
        first = np.searchsorted(unit[order], unit[order])
        offset[order, t] = cs - cs[first]
    persistent = np.bincount(unit, weights=graph.persistent_bytes, minlength=num_units)

    su, du = unit[src], unit[dst]
    cross = su != du
    # Unit-level successor lists, deduplicated, priority order kept.
    key = np.unique(su[cross] * num_units + du[cross])
    us, ud = key // max(num_units, 1), key % max(num_units, 1)
    dkey = np.unique(su[cross & data] * num_units + du[cross & data])
    succ_data = np.isin(key, dkey)
    succ_ptr = np.searchsorted(us, np.arange(num_units + 1))
    indeg = np.bincount(ud, minlength=num_units)
    acyclic = topological_order(num_units, us, ud) is not None

    # Bytes per (producer op, consumer unit): the largest edge, since the same
    # tensor is sent to a device once.
    xd = cross & data
    ekey = src[xd] * num_units + du[xd]
    ukey, inv = np.unique(ekey, return_inverse=True)
    ebytes = np.full(len(ukey), -1, dtype=np.int64)
    np.maximum.at(ebytes, inv, graph.edge_bytes[xd])
    ent_op, ent_cons = ukey // max(num_units, 1), ukey % max(num_units, 1)
    seg = np.bincount(ent_op, minlength=n)
    single = seg[ent_op] == 1
    pkey, pinv = np.unique(unit[ent_op[single]] * num_units + ent_cons[single], return_inverse=True)
    pair_bytes = np.bincount(pinv, weights=ebytes[single], minlength=len(pkey))
    pair_count = np.bincount(pinv, minlength=len(pkey))
    ent_op, ent_cons, ebytes = ent_op[~single], ent_cons[~single], ebytes[~single]
    ent_pstart = np.flatnonzero(np.r_[True, ent_op[1:] != ent_op[:-1]]) if len(ent_op) else np.zeros(0, np.int64)

    external, transient = _activation_bytes(graph, unit, num_units, src, dst, data)
    return Units(unit, num_units, cost, offset, persistent, external, transient, succ_ptr, ud, succ_data,
                 indeg, pkey // max(num_units, 1), pkey % max(num_units, 1), pair_bytes, pair_count,
                 unit[ent_op[ent_pstart]] if len(ent_op) else np.zeros(0, np.int64), ent_cons,
                 ebytes, ent_pstart, acyclic, unit_group)


def split_cycles(group: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Splits groups into units so that the unit graph has no cycle.

    Colocation constraints can close cycles between groups (a variable's
    group holds both its read, needed by the forward pass, and its update,
    which needs the gradients). Only groups on such a cycle (a strongly
    connected component of the group graph) are split: inside a component
    each op gets a phase, the largest number of group changes on a path to it
    within the component, and a unit is a (group, phase) pair. Every edge
    between units of one component then goes to a higher phase, so no cycle
    remains; the units of a group still share its device.

    Args:
      group: [n_ops] group per op.
      src, dst: [m] edges (ops in topological order, src < dst).

    Returns:
      ([n_ops] unit per op, [U] group per unit); units numbered by group, then phase.
    """
    from scipy.sparse import csr_matrix  # noqa: PLC0415
    from scipy.sparse.csgraph import connected_components  # noqa: PLC0415

    n_groups = int(group.max()) + 1
    gs, gd = group[src], group[dst]
    adj = csr_matrix((np.ones(len(src)), (gs, gd)), shape=(n_groups, n_groups))
    _, comp = connected_components(adj, directed=True, connection="strong")
    size = np.bincount(comp)
    if size.max(initial=1) <= 1:
        return group, np.arange(n_groups)
    opcomp = comp[group]
    inside = (opcomp[src] == opcomp[dst]) & (size[opcomp[src]] > 1)
    order = np.argsort(dst[inside], kind="stable")
    phase = [0] * len(group)
    g = group.tolist()
    for u, v in zip(src[inside][order].tolist(), dst[inside][order].tolist()):
        p = phase[u] + (g[u] != g[v])
        if p > phase[v]:
            phase[v] = p
    ph = np.asarray(phase, dtype=np.int64)
    keys, unit = np.unique(group * (int(ph.max()) + 1) + ph, return_inverse=True)
    return unit.astype(np.int64), keys // (int(ph.max()) + 1)


def _activation_bytes(graph, unit, num_units, src, dst, data):
    """Returns ([U] external bytes, [U] transient peak bytes) of each unit.

    An op output read by another unit is external; one read only inside its
    unit (or by nobody) lives from its op's start until its last reader in
    the unit finished (its own finish if unread).
    """
    n = graph.num_ops
    obytes = graph.output_bytes.astype(np.int64)
    s, d = src[data], dst[data]
    has_ext = np.zeros(n, dtype=bool)
    has_ext[s[unit[s] != unit[d]]] = True
    external = np.bincount(unit, weights=np.where(has_ext, obytes, 0), minlength=num_units)
    internal = ~has_ext
    last = np.arange(n)  # last reader inside the unit, in op order
    same = unit[s] == unit[d]
    np.maximum.at(last, s[same], d[same])
    # Sweep ops in unit order then op order; frees happen after an op ran.
    order = np.lexsort((np.arange(n), unit))
    frees: dict[int, int] = {}
    for i in np.flatnonzero(internal & (last > np.arange(n))):
        frees[int(last[i])] = frees.get(int(last[i]), 0) + int(obytes[i])
    transient = np.zeros(num_units)
    u_prev, live, peak = -1, 0, 0
    unit_l, ob_l, int_l, last_l = unit.tolist(), obytes.tolist(), internal.tolist(), last.tolist()
    for i in order.tolist():
        u = unit_l[i]
        if u != u_prev:
            if u_prev >= 0:
                transient[u_prev] = peak
            u_prev, live, peak = u, 0, 0
        if int_l[i]:
            live += ob_l[i]
        peak = max(peak, live)
        live -= frees.get(i, 0)
        if int_l[i] and last_l[i] == i:
            live -= ob_l[i]
    if u_prev >= 0:
        transient[u_prev] = peak
    return external, transient


def transfer_tables(units: Units, dev: np.ndarray, num_devices: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes and tensor counts each unit sends to each device, for K placements.

    Args:
      units: the unit graph.
      dev: [K, U] device per unit.
      num_devices: D.

    Returns:
      (bytes [K, U, D] float, tensors [K, U, D] int); zero towards the unit's
      own device.
    """
    k, u_n = dev.shape
    nbytes = np.zeros((k, u_n, num_devices))
    ntens = np.zeros((k, u_n, num_devices), dtype=np.int64)
    if len(units.pair_cons):
        dcp = dev.T[units.pair_cons]  # [pairs, K]
        pstart = np.flatnonzero(np.r_[True, units.pair_unit[1:] != units.pair_unit[:-1]])
        pu = units.pair_unit[pstart]
        pb, pc = units.pair_bytes[:, None], units.pair_count[:, None]
        for b in range(num_devices):
            on = dcp == b
            nbytes[:, pu, b] = np.add.reduceat(np.where(on, pb, 0.0), pstart, axis=0).T
            ntens[:, pu, b] = np.add.reduceat(np.where(on, pc, 0), pstart, axis=0).T
    if len(units.ent_cons):
        dcons = dev.T[units.ent_cons]  # [M, K]: entries major, so reductions run over rows
        ebytes = units.ent_bytes[:, None]
        perm = np.argsort(units.ent_unit, kind="stable")
        eu = units.ent_unit[perm]
        ustart = np.flatnonzero(np.r_[True, eu[1:] != eu[:-1]])
        uu = eu[ustart]
        for b in range(num_devices):
            v = np.where(dcons == b, ebytes, -1)
            m = np.maximum.reduceat(v, units.ent_pstart, axis=0)[perm]  # [producers by unit, K]
            nbytes[:, uu, b] += np.add.reduceat(np.maximum(m, 0), ustart, axis=0).T
            ntens[:, uu, b] += np.add.reduceat((m >= 0).astype(np.int64), ustart, axis=0).T
    own = np.arange(num_devices)[None, None, :] == dev[:, :, None]
    nbytes[own] = 0
    ntens[own] = 0
    return nbytes, ntens


@dataclasses.dataclass
class Schedule:
    """Start and finish times of K placements (seconds from the step start).

    Attributes:
      start, finish: [K, U] per unit.
      tx_start, tx_end: [K, U, D] transfer of a unit's outputs to a device
        (NaN where there is none).
    """

    start: np.ndarray
    finish: np.ndarray
    tx_start: np.ndarray
    tx_end: np.ndarray


def schedule_batch(units: Units, dev, dur, need, xt, num_devices: int) -> Schedule:
    """Lock-step numpy list scheduling of K placements (see module docstring).

    Args:
      units: the (acyclic) unit graph.
      dev: [K, U] int device per unit.
      dur: [K, U] seconds per unit on its device.
      need: [K, U, D] bool, a transfer from the unit to the device exists.
      xt: [K, U, D] seconds of that transfer.
      num_devices: D.
    """
    k, u_n = dev.shape
    dn = num_devices
    r = np.arange(k)
    inf = np.inf
    big = np.iinfo(np.int64).max
    # Per placement, the ready units live in a short list (ids, ready times,
    # devices), so a step costs O(K * ready) instead of O(K * U).
    roots = np.flatnonzero(units.indeg == 0)
    width = max(16, 2 * len(roots))
    ids = np.full((k, width), u_n, dtype=np.int64)
    rt = np.full((k, width), inf)
    dv = np.zeros((k, width), dtype=np.int64)
    ids[:, :len(roots)] = roots
    rt[:, :len(roots)] = 0.0
    dv[:, :len(roots)] = dev[:, roots]
    cnt = np.full(k, len(roots))
    indeg = np.tile(units.indeg, k)  # flat [K * U]
    ready = np.zeros(k * u_n)
    dev_f = dev.ravel()
    free = np.zeros(k * dn)  # flat [K, D]
    link = np.zeros((k, dn, dn))
    start = np.zeros((k, u_n))
    finish = np.zeros((k, u_n))
    tx_start = np.full((k, u_n, dn), np.nan)
    tx_end = np.full((k, u_n, dn), np.nan)
    ptr, succ, sdata = units.succ_ptr, units.succ_unit, units.succ_data
    deg = np.diff(ptr)
    rd = (r * dn)[:, None]
    for _ in range(u_n):
        st = np.maximum(rt, free[rd + dv])
        s = st.min(1)
        slot = np.where(st == s[:, None], ids, big).argmin(1)
        c = ids[r, slot]
        last = cnt - 1
        ids[r, slot], rt[r, slot], dv[r, slot] = ids[r, last], rt[r, last], dv[r, last]
        ids[r, last], rt[r, last] = u_n, inf
        cnt = last
        d = dev[r, c]
        f = s + dur[r, c]
        start[r, c] = s
        finish[r, c] = f
        free[r * dn + d] = f
        nd = need[r, c]
        lk = link[r, d]
        ls = np.maximum(f[:, None], lk)
        arr = np.where(nd, ls + xt[r, c], f[:, None])
        link[r, d] = np.where(nd, arr, lk)
        tx_start[r, c] = np.where(nd, ls, np.nan)
        tx_end[r, c] = np.where(nd, arr, np.nan)
        nsucc = deg[c]
        tot = int(nsucc.sum())
        if tot == 0:
            continue
        rr = np.repeat(r, nsucc)
        e = np.repeat(ptr[c] - (np.cumsum(nsucc) - nsucc), nsucc) + np.arange(tot)
        h = succ[e]
        fl = rr * u_n + h
        hd = dev_f[fl]
        a = np.where(sdata[e], arr[rr, hd], f[rr])
        ready[fl] = np.maximum(ready[fl], a)
        indeg[fl] -= 1
        now = indeg[fl] == 0
        if not now.any():
            continue
        rn, hn, fn = rr[now], h[now], fl[now]
        nb = np.bincount(rn, minlength=k)
        pos = cnt[rn] + np.arange(len(rn)) - (np.cumsum(nb) - nb)[rn]
        if pos.max() >= width:
            grow = width
            ids = np.concatenate([ids, np.full((k, grow), u_n, dtype=np.int64)], 1)
            rt = np.concatenate([rt, np.full((k, grow), inf)], 1)
            dv = np.concatenate([dv, np.zeros((k, grow), dtype=np.int64)], 1)
            width += grow
        ids[rn, pos] = hn
        rt[rn, pos] = ready[fn]
        dv[rn, pos] = hd[now]
        cnt = cnt + nb
    return Schedule(start, finish, tx_start, tx_end)


def schedule_one(units: Units, dev, dur, need, xt, num_devices: int) -> Schedule:
    """Heap-based list scheduling of one placement; same results as `schedule_batch`.

    Args: as `schedule_batch` with K = 1 (arrays [U] and [U, D]).
    """
    u_n, dn = len(dev), num_devices
    dev_l, dur_l = dev.tolist(), dur.tolist()
    need_l, xt_l = need.tolist(), xt.tolist()
    ptr, succ, sdata = units.succ_ptr.tolist(), units.succ_unit.tolist(), units.succ_data.tolist()
    indeg = units.indeg.tolist()
    ready = [0.0] * u_n
    free = [0.0] * dn
    link = [[0.0] * dn for _ in range(dn)]
    pending: list[list] = [[] for _ in range(dn)]  # (ready time, unit), inputs not yet there
    avail: list[list] = [[] for _ in range(dn)]  # unit, inputs there by the time the device is free
    for u in range(u_n):
        if indeg[u] == 0:
            pending[dev_l[u]].append((0.0, u))
    for p in pending:
        heapq.heapify(p)
    start, finish = [0.0] * u_n, [0.0] * u_n
    tx_start = np.full((u_n, dn), np.nan)
    tx_end = np.full((u_n, dn), np.nan)
    push, pop = heapq.heappush, heapq.heappop
    for _ in range(u_n):
        best = None
        bd = -1
        for di in range(dn):
            pd, fd = pending[di], free[di]
            while pd and pd[0][0] <= fd:
                push(avail[di], pop(pd)[1])
            if avail[di]:
                cnd = (fd, avail[di][0])
            elif pd:
                cnd = pd[0]
            else:
                continue
            if best is None or cnd < best:
                best, bd = cnd, di
        s, u = best
        pop(avail[bd] if avail[bd] else pending[bd])
        f = s + dur_l[u]
        start[u], finish[u] = s, f
        free[bd] = f
        arr = [f] * dn
        nu = need_l[u]
        if any(nu):
            lk = link[bd]
            for b in range(dn):
                if nu[b]:
                    ls = lk[b] if lk[b] > f else f
                    arr[b] = lk[b] = ls + xt_l[u][b]
                    tx_start[u, b], tx_end[u, b] = ls, arr[b]
        for e in range(ptr[u], ptr[u + 1]):
            h = succ[e]
            a = arr[dev_l[h]] if sdata[e] else f
            if a > ready[h]:
                ready[h] = a
            indeg[h] -= 1
            if indeg[h] == 0:
                push(pending[dev_l[h]], (ready[h], h))
    return Schedule(np.array([start]), np.array([finish]), tx_start[None], tx_end[None])
