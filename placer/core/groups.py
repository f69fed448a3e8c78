"""The result of co-location grouping: `Grouping`, the groups of an op graph and their ties (no TensorFlow).

placer/core/grouping.py makes one; the features, the problem and the
placements read it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from placer.core.op_graph import OpGraph, topological_order


@dataclasses.dataclass(frozen=True, eq=False)
class Grouping:
    """A partition of a graph's ops into groups, numbered in topological order.

    Attributes:
      op_group: [n_ops] int32 group index of each op.
      num_groups: number of groups G.
      edge_src: [E] int32 producer group of each group-graph edge.
      edge_dst: [E] int32 consumer group; only edges between distinct groups,
        one per ordered pair of groups.
      edge_bytes: [E] int64 bytes sent along the edge per step: per producer op
        and consuming group the largest edge (one tensor is sent once), summed
        over producer ops. Control edges add no bytes.
      acyclic: True if the group graph has no cycle; then every edge has
        edge_src < edge_dst (always so for `group`). Otherwise groups are
        numbered in a topological order of the strongly connected components,
        by first op within one.
      tie: [G] int32 tie leader of each group: the lowest group of its tie
        class (a group tied to nothing is its own leader). A placement must
        put every group on its leader's device. Default: no ties.
    """

    op_group: np.ndarray
    num_groups: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_bytes: np.ndarray
    acyclic: bool
    tie: np.ndarray | None = None

    def __post_init__(self):
        if self.tie is None:
            object.__setattr__(self, "tie", np.arange(self.num_groups, dtype=np.int32))
        for a in (self.op_group, self.edge_src, self.edge_dst, self.edge_bytes, self.tie):
            a.setflags(write=False)

    @staticmethod
    def from_labels(graph: OpGraph, labels: np.ndarray, tie_labels: np.ndarray | None = None) -> Grouping:
        """Builds a Grouping from any per-op label (ops with one label form a group).

        Args:
          graph: the op graph.
          labels: [n_ops] integer labels.
          tie_labels: [n_ops] integer tie-class labels, or None (no ties). Two
            groups are tied when any of their ops share a tie label (and so
            on, transitively).

        Returns:
          The grouping, groups renumbered in topological order (ties by first op).
        """
        n = graph.num_ops
        _, first, inv = np.unique(np.asarray(labels), return_index=True, return_inverse=True)
        # Provisional ids in order of each group's first op.
        rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")
        g0 = rank[inv.reshape(-1)].astype(np.int64)
        num = len(first)
        s, d = g0[graph.edge_src], g0[graph.edge_dst]
        cross = s != d
        pairs = np.unique(np.stack([s[cross], d[cross]], axis=1), axis=0) if cross.any() else np.zeros((0, 2), int)
        adj = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(num, num))
        ncomp, comp = connected_components(adj, directed=True, connection="strong")
        # Components in topological order, ties by their first group.
        cfirst = np.full(ncomp, num, dtype=np.int64)
        np.minimum.at(cfirst, comp, np.arange(num))
        crank = np.argsort(np.argsort(cfirst, kind="stable"), kind="stable")
        cs, cd = crank[comp[pairs[:, 0]]], crank[comp[pairs[:, 1]]]
        keep = cs != cd
        corder = topological_order(ncomp, cs[keep], cd[keep])
        cpos = np.empty(ncomp, dtype=np.int64)
        cpos[corder] = np.arange(ncomp)
        final = np.empty(num, dtype=np.int64)
        final[np.lexsort((np.arange(num), cpos[crank[comp]]))] = np.arange(num)
        op_group = final[g0].astype(np.int32) if n else np.zeros(0, np.int32)
        tie = None if tie_labels is None or not n else _tie_leaders(op_group, num, np.asarray(tie_labels))
        return Grouping(op_group, num, *_group_edges(graph, op_group), acyclic=bool(ncomp == num), tie=tie)

    # ----- queries --------------------------------------------------------

    def members(self, g: int) -> np.ndarray:
        """Returns the op indices of group `g`, ascending."""
        return np.flatnonzero(self.op_group == g)

    def sizes(self) -> np.ndarray:
        """Returns [G] int64, number of ops per group."""
        return np.bincount(self.op_group, minlength=self.num_groups).astype(np.int64)

    def group_graph(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Returns (src [E], dst [E], bytes [E]) of the edges between groups."""
        return self.edge_src, self.edge_dst, self.edge_bytes

    # ----- ties -------------------------------------------------------------

    @property
    def num_leaders(self) -> int:
        """Number of tie classes L (the groups whose device a policy chooses)."""
        return int(np.count_nonzero(self.tie == np.arange(self.num_groups)))

    def leaders(self) -> np.ndarray:
        """Returns [L] int64 the leader groups, ascending."""
        return np.flatnonzero(self.tie == np.arange(self.num_groups))

    def leader_index(self) -> np.ndarray:
        """Returns [G] int64: for each group, the position of its leader in `leaders()`."""
        pos = np.full(self.num_groups, -1, dtype=np.int64)
        pos[self.leaders()] = np.arange(self.num_leaders)
        return pos[self.tie]

    def expand(self, devices: np.ndarray) -> np.ndarray:
        """Copies leaders' devices to their followers.

        Args:
          devices: [..., L] device per leader (in `leaders()` order) or
            [..., G] device per group (followers' entries are ignored).

        Returns:
          [..., G] device per group, every group on its leader's device.
        """
        devices = np.asarray(devices)
        if devices.shape[-1] == self.num_leaders:
            return devices[..., self.leader_index()]
        if devices.shape[-1] == self.num_groups:
            return devices[..., self.tie]
        raise ValueError(
            f"expected {self.num_leaders} leader or {self.num_groups} group devices, got {devices.shape[-1]}"
        )

    def tied_apart(self, graph: OpGraph) -> list[str]:
        """Returns the colocation keys whose ops lie in more than one tie class (empty when all are respected)."""
        leader = self.tie[self.op_group]
        out = []
        for key in sorted(set(graph.colocation.tolist()) - {""}):
            if len(set(leader[graph.colocation == key].tolist())) > 1:
                out.append(key)
        return out


def _tie_leaders(op_group: np.ndarray, num: int, tie_labels: np.ndarray) -> np.ndarray:
    """Returns [num] the lowest group tied to each group (groups and tie labels joined through ops)."""
    _, tinv = np.unique(tie_labels, return_inverse=True)
    tinv = tinv.reshape(-1)
    n_t = int(tinv.max()) + 1
    adj = coo_matrix((np.ones(len(op_group)), (op_group.astype(np.int64), num + tinv)), shape=(num + n_t,) * 2)
    _, comp = connected_components(adj, directed=False)
    low = np.full(int(comp.max()) + 1, num, dtype=np.int64)
    np.minimum.at(low, comp[:num], np.arange(num))
    return low[comp[:num]].astype(np.int32)


def _group_edges(graph: OpGraph, op_group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aggregates op edges into group edges (see Grouping.edge_bytes)."""
    gs, gd = op_group[graph.edge_src].astype(np.int64), op_group[graph.edge_dst].astype(np.int64)
    cross = gs != gd
    src_op, gs, gd = graph.edge_src[cross].astype(np.int64), gs[cross], gd[cross]
    b = graph.edge_bytes[cross]
    if not len(gs):
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int64)
    # Largest edge per (producer op, consuming group), then sum per group pair.
    order = np.lexsort((-b, gd, src_op))
    src_op, gs, gd, b = src_op[order], gs[order], gd[order], b[order]
    first = np.ones(len(b), bool)
    first[1:] = (src_op[1:] != src_op[:-1]) | (gd[1:] != gd[:-1])
    gs, gd, b = gs[first], gd[first], b[first]
    pairs, inv = np.unique(np.stack([gs, gd], axis=1), axis=0, return_inverse=True)
    total = np.zeros(len(pairs), np.int64)
    np.add.at(total, inv.reshape(-1), b)
    return pairs[:, 0].astype(np.int32), pairs[:, 1].astype(np.int32), total
