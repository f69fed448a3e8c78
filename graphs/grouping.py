"""Co-location grouping of an op graph (no TensorFlow).

The heuristics of "Device Placement Optimization with Reinforcement Learning"
(Mirhoseini et al., ICML 2017, section 3): the policy places groups of ops, not
single ops, so that a graph of ~10^4 to 10^5 ops becomes a sequence of a few
hundred groups. The steps, in order:

1. Colocation constraints (TF's `_class: loc:@X`): ops sharing a non-empty key
   share a group. These merges cannot be refused.
2. Gradient ops join the forward op they differentiate, matched by name
   ("gradients/<forward op>_grad/...", also "gradients_1/..."), and optimizer
   update ops ("<opt>/update_<variable>/...") join their variable.
3. An op whose only consumer (over data and control edges) is one op joins that
   op's group; then, repeatedly, a group whose edges all go to one other group
   joins it.

Steps 2 and 3 are refused when they would make the group graph cyclic (a path
from one group to the other through a third group) or exceed `max_group_ops`.

Cycles made by step 1. In a TF training graph a variable and its optimizer
update op share a colocation key, and the path variable -> read -> forward ->
loss -> gradients -> update runs through most of the graph, so merging each
such cycle into one group (`constraint_cycles="merge"`) swallows most of the
model. `constraint_cycles="keep"` (the default) keeps the constraint groups as
they are, like the paper, whose groups follow TF's colocation groups: then the
group graph may contain cycles, but only ones closed by colocation
constraints: merges in steps 2 and 3 still never close a new cycle (they are
checked on the condensation of the group graph, its strongly connected
components). `Grouping.acyclic` says which case a grouping is in.

The cycle check keeps a topological order of the condensation and searches
only the ops between the two groups in that order; after a merge it repairs the
order as in Pearce and Kelly, "A dynamic topological sort algorithm for
directed acyclic graphs" (JEA 2006).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from graphs.grouping_merge import Merger
from graphs.op_graph import OpGraph, topological_order

_GRADIENT_SCOPE = re.compile(r"^gradients(?:_\d+)?/")


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
        edge_src < edge_dst. Otherwise groups are numbered in a topological
        order of the strongly connected components, by first op within one.
    """

    op_group: np.ndarray
    num_groups: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_bytes: np.ndarray
    acyclic: bool

    def __post_init__(self):
        for a in (self.op_group, self.edge_src, self.edge_dst, self.edge_bytes):
            a.setflags(write=False)

    @staticmethod
    def from_labels(graph: OpGraph, labels: np.ndarray) -> Grouping:
        """Builds a Grouping from any per-op label (ops with one label form a group).

        Args:
          graph: the op graph.
          labels: [n_ops] integer labels.

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
        return Grouping(op_group, num, *_group_edges(graph, op_group), acyclic=bool(ncomp == num))

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


def forward_op_for(name: str, index: dict[str, int]) -> int | None:
    """Finds the forward op a gradient or optimizer-update op belongs to, by name.

    "gradients/enc/MatMul_grad/MatMul_1" -> "enc/MatMul" (TF names gradient ops
    "gradients[_k]/<forward op>_grad/..."); "Adam/update_enc/w/ResourceApplyAdam"
    -> "enc/w" (TF's optimizers name update ops "<opt>/update_<variable>/...").
    The longest matching prefix wins; gradient ops never match.

    Args:
      name: the op's name.
      index: op name -> op index.

    Returns:
      The forward op's index, or None when the name matches no op.
    """
    m = _GRADIENT_SCOPE.match(name)
    if m:
        parts = name[m.end() :].split("/")
    else:
        pos = name.find("/update_")
        if pos < 0 and not name.startswith("update_"):
            return None
        rest = name[pos + 1 :] if pos >= 0 else name
        parts = rest[len("update_") :].split("/")
    # The last part is the op's own name inside the gradient/update scope.
    for k in range(len(parts) - 1, 0, -1):
        cand = "/".join(parts[:k])
        for c in (cand[:-5], cand) if cand.endswith("_grad") else (cand,):
            i = index.get(c)
            if i is not None and not _GRADIENT_SCOPE.match(c):
                return i
    return None


def group(
    graph: OpGraph,
    *,
    merge_single_consumer: bool = True,
    max_group_ops: int = 0,
    colocate_gradients: bool = True,
    constraint_cycles: str = "keep",
) -> Grouping:
    """Groups the ops of `graph` with the paper's co-location heuristics.

    Args:
      graph: the op graph (not modified).
      merge_single_consumer: apply step 3 (single-consumer merges).
      max_group_ops: refuse merges of steps 2 and 3 that make a group larger
        than this many ops; 0 = no cap. Constraint merges ignore the cap.
      colocate_gradients: apply step 2 (gradient and update ops join their
        forward op or variable).
      constraint_cycles: "keep" (constraint groups stay as they are; the group
        graph may contain cycles closed by them) or "merge" (each such cycle
        becomes one group, so the group graph is acyclic). See the module doc.

    Returns:
      The grouping; deterministic for a given graph.
    """
    if constraint_cycles not in ("keep", "merge"):
        raise ValueError(f"constraint_cycles must be 'keep' or 'merge', not {constraint_cycles!r}")
    m = Merger(graph, max_group_ops=max_group_ops, merge_cycles=constraint_cycles == "merge")
    if colocate_gradients:
        index = graph.index()
        by_forward: dict[int, int] = {}
        for i, name in enumerate(graph.names):
            f = forward_op_for(name, index)
            if f is None:
                continue
            # Gradient ops of one forward op first join each other, then the forward op.
            if f in by_forward:
                m.try_merge(by_forward[f], i)
            else:
                by_forward[f] = i
        for f, i in by_forward.items():
            m.try_merge(f, i)
    if merge_single_consumer:
        consumers = _single_consumers(graph)
        for u in range(graph.num_ops):
            if consumers[u] >= 0:
                m.try_merge(u, int(consumers[u]))
        m.merge_single_successor_groups()
    return Grouping.from_labels(graph, m.labels())


def _single_consumers(graph: OpGraph) -> np.ndarray:
    """Returns [n] the only consumer op of each op, or -1 (none or several)."""
    n = graph.num_ops
    pairs = np.unique(np.stack([graph.edge_src, graph.edge_dst], axis=1).astype(np.int64), axis=0)
    out = np.full(n, -1, dtype=np.int64)
    if not len(pairs):
        return out
    count = np.bincount(pairs[:, 0], minlength=n)
    single = count[pairs[:, 0]] == 1
    out[pairs[single, 0]] = pairs[single, 1]
    return out
