"""The unit graph of the simulator: ops or groups contracted to units (no TensorFlow).

The simulator schedules *units*: single ops, or groups of ops that run back to
back on one device (the paper's co-located groups). `Units` holds everything
about the unit graph that does not depend on the placement; the kernel of
`placer.measure.fast` adds, per placement, the bytes each unit sends to each
device. A unit's seconds on a device are `Cluster.op_seconds` over its ops.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from placer.core.op_graph import OpGraph, topological_order


@dataclasses.dataclass(frozen=True, eq=False)
class Units:
    """The placement-independent part of the unit graph.

    Attributes:
      op_unit: [n_ops] unit of each op.
      num_units: U.
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
      op_unit: [n_ops] int group per op, groups numbered 0..G-1; groups on a
        cycle of the group graph are split into several units (`split_cycles`).

    Returns:
      The placement-independent tables of the unit graph.
    """
    n = graph.num_ops
    src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
    group = np.arange(n, dtype=np.int64) if op_unit is None else np.asarray(op_unit, dtype=np.int64)
    unit, unit_group = (
        (group, np.arange(int(group.max()) + 1 if n else 0)) if op_unit is None else split_cycles(group, src, dst)
    )
    num_units = int(unit.max()) + 1 if n else 0
    data = ~graph.edge_control
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

    # A step sends nothing to the ops it does not run (initialisers): those edges carry no transfer.
    stepped = np.ones(len(dst), dtype=bool) if graph.in_step is None else graph.in_step[dst]
    transfers = _transfer_tables(graph, unit, num_units, cross & data & stepped)
    external, transient = _activation_bytes(graph, unit, num_units, src, dst, data)
    return Units(
        unit,
        num_units,
        persistent,
        external,
        transient,
        succ_ptr,
        ud,
        succ_data,
        indeg,
        *transfers,
        acyclic,
        unit_group,
    )


def _transfer_tables(graph: OpGraph, unit: np.ndarray, num_units: int, xd: np.ndarray) -> tuple:
    """The Units fields pair_unit to ent_pstart: bytes each producer sends to each consumer unit.

    Args:
      graph: the op graph.
      unit: [n_ops] unit per op.
      num_units: U.
      xd: [m] bool, data edges between units.
    """
    # Bytes per (producer op, consumer unit): the largest edge, since the same
    # tensor is sent to a device once.
    src, du = graph.edge_src[xd].astype(np.int64), unit[graph.edge_dst[xd].astype(np.int64)]
    ukey, inv = np.unique(src * num_units + du, return_inverse=True)
    ebytes = np.full(len(ukey), -1, dtype=np.int64)
    np.maximum.at(ebytes, inv, graph.edge_bytes[xd])
    ent_op, ent_cons = ukey // max(num_units, 1), ukey % max(num_units, 1)
    seg = np.bincount(ent_op, minlength=graph.num_ops)
    single = seg[ent_op] == 1
    pkey, pinv = np.unique(unit[ent_op[single]] * num_units + ent_cons[single], return_inverse=True)
    pair_bytes = np.bincount(pinv, weights=ebytes[single], minlength=len(pkey))
    pair_count = np.bincount(pinv, minlength=len(pkey))
    ent_op, ent_cons, ebytes = ent_op[~single], ent_cons[~single], ebytes[~single]
    ent_pstart = np.flatnonzero(np.r_[True, ent_op[1:] != ent_op[:-1]]) if len(ent_op) else np.zeros(0, np.int64)
    return (
        pkey // max(num_units, 1),
        pkey % max(num_units, 1),
        pair_bytes,
        pair_count,
        unit[ent_op[ent_pstart]] if len(ent_op) else np.zeros(0, np.int64),
        ent_cons,
        ebytes,
        ent_pstart,
    )


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
    n_groups = int(group.max()) + 1 if len(group) else 0
    if n_groups == 0:
        return group, np.arange(0)
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
    for u, v in zip(src[inside][order].tolist(), dst[inside][order].tolist(), strict=True):
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
    if graph.in_step is not None:  # a step never makes the outputs of ops it does not run
        obytes = np.where(graph.in_step, obytes, 0)
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
