"""Co-location grouping of an op graph (no TensorFlow).

The heuristics of "Device Placement Optimization with Reinforcement Learning"
(Mirhoseini et al., ICML 2017, section 3): the policy places groups of ops, not
single ops, so that a graph of ~10^4 to 10^5 ops becomes a sequence of a few
hundred groups. The group graph is always kept acyclic: every merge below is
refused when it would close a cycle (a path from one group to the other
through a third group) or exceed `max_group_ops`. The steps, in order:

1. Colocation constraints (TF's `_class: loc:@X`). The ops sharing a non-empty
   key are merged into one group where possible, in topological order: each
   op joins the first earlier group of its set that can take it, together
   with the groups on the paths between them when those are few
   (`cycle_closure_ops`, e.g. a batch-norm moving-average update). An op that
   no such group can take starts a new group TIED to the first one: tied
   groups form a tie class, and a placement must put every group of a class
   on one device (`Grouping.tie` names each group's leader, the lowest group
   of its class). Ties are needed because TF gives a variable, its read op
   and its optimizer update op one colocation key, and the path variable ->
   read -> forward -> loss -> gradients -> update runs through most of the
   model: merging them would make one group of nearly the whole graph.
   Typically the variable, its read and its initializer form one group and
   the update op sits in a later group tied to it.
2. Gradient ops join the forward op they differentiate, matched by name
   ("gradients/<forward op>_grad/...", also "gradients_1/..."), and optimizer
   update ops ("<opt>/update_<variable>/...") join their variable; an update
   op that its variable's group cannot take is tied to it instead.
   Off by default (`colocate_gradients`; our choice): it bars every placement
   that runs an op's backward pass on another device than its forward pass,
   which is how the best baselines split NMT, and from scratch the search
   over such groups found little better than one GPU (docs/rl.md,
   "Gradients apart from their forward ops").
3. An op whose only consumer (over data and control edges) is one op joins that
   op's group; then, repeatedly, a group whose edges all go to one other group
   joins it.
4. Coarsening to `target_groups` (our choice; the paper's policy reads a few
   hundred groups, e.g. 280 for NMT): adjacent groups are merged, the
   heaviest edge relative to the product of the two groups' sizes first
   (Merger.coarsen), keeping groups within `BALANCE` times the mean target
   group size. Merging groups of two tie classes unites the classes.

No merge of steps 2 to 4 joins two tie classes of several groups each (step 4
only when the target cannot be reached otherwise): merging, say, the update
ops of two variables would tie the two variables to one device.

The cycle check keeps a topological order of the groups and searches only the
groups between the two in that order; after a merge it repairs the order as in
Pearce and Kelly, "A dynamic topological sort algorithm for directed acyclic
graphs" (JEA 2006).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from placer.core import op_names
from placer.core.grouping_merge import Merger, merge_gradients, single_consumers
from placer.core.op_graph import OpGraph, topological_order

# Our choice: a colocated op whose merge would close a cycle also takes the
# groups on the paths between (e.g. a batch-norm moving average's few update
# ops) when they hold at most this many ops; longer cycles become ties.
CYCLE_CLOSURE_OPS = 8
# Our choice: coarsening keeps each tie class within BALANCE times the mean
# group size of the target (see `coarsen`).
BALANCE = 4.0


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


def group(
    graph: OpGraph,
    *,
    merge_single_consumer: bool = True,
    max_group_ops: int = 0,
    target_groups: int = 0,
    colocate_gradients: bool = False,
    cycle_closure_ops: int = CYCLE_CLOSURE_OPS,
    op_colors: np.ndarray | None = None,
    min_groups: int = 0,
    give_up_above: int = 0,
    scope_depth: int = 0,
) -> Grouping | None:
    """Groups the ops of `graph` with the paper's co-location heuristics (see the module doc).

    Args:
      graph: the op graph (not modified).
      merge_single_consumer: apply step 3 (single-consumer merges).
      max_group_ops: refuse merges that make a group larger than this many
        ops (colocated ops are tied instead); 0 = no cap.
      target_groups: coarsen to at most this many groups (step 4) when
        admissible merges allow; 0 = no coarsening.
      colocate_gradients: apply step 2 (gradient and update ops join their
        forward op or variable). Off by default: with it, no placement can
        run an op's gradient on another device than the op (docs/rl.md).
      cycle_closure_ops: a colocated op (or update op) whose merge would
        close a cycle also takes the groups on the paths between when they
        hold at most this many ops; otherwise it is tied.
      op_colors: [n_ops] a colour per op (e.g. the device a baseline gave
        it; -1 = none): ops of different colours never share a group, so that
        placement stays expressible group by group. Colocated ops must share
        a colour.
      min_groups: the floor: the merges of steps 3 and 4 stop before fewer
        than this many groups remain (see `group_floor`), and while it is set
        step 3 builds groups of at most n_ops // min_groups ops, so that a
        chain is cut into even pieces instead of one group and leftovers;
        0 = no floor. Steps 1 and 2 (colocation, gradients) ignore it.
      give_up_above: with op_colors, return None instead of coarsening when
        coarsening surely leaves more than this many groups (it merges only
        adjacent groups of one colour, so it cannot go below the connected
        components of the same-colour group graph); 0 = never give up.
      scope_depth: ops whose names lie in different scopes at this depth
        never share a group (`op_names.scope_colors`); 0 = names are not read.

    Returns:
      The grouping: acyclic, every colocation set within one tie class;
      deterministic for a given graph; at least min(min_groups, groups after
      step 2) groups. None when it gives up (see give_up_above).
    """
    warm_colored = op_colors is not None
    if scope_depth:
        op_colors = op_names.combine_colors(op_names.scope_colors(graph, scope_depth), op_colors)
    m = Merger(
        graph.num_ops,
        graph.edge_src,
        graph.edge_dst,
        edge_bytes=graph.edge_bytes,
        max_weight=max_group_ops,
        colors=op_colors,
    )
    by_key: dict[str, list[int]] = {}
    for i, key in enumerate(graph.colocation.tolist()):
        if key:
            by_key.setdefault(key, []).append(i)
    for ops in by_key.values():
        anchors: list[int] = []
        for o in ops:  # topological order
            if not any(m.merge_closure(a, o, cycle_closure_ops) for a in anchors):
                if anchors:
                    m.tie(anchors[0], o)
                anchors.append(o)
    if colocate_gradients:
        merge_gradients(graph, m, cycle_closure_ops)
    if merge_single_consumer:
        m.floor = int(min_groups)
        cap = m.cap
        if min_groups > 0:
            piece = max(1, graph.num_ops // int(min_groups))
            m.cap = min(cap, piece) if cap else piece
        consumers = single_consumers(graph)
        for u in range(graph.num_ops):
            if consumers[u] >= 0:
                m.try_merge(u, int(consumers[u]))
        m.merge_single_successor_groups()
        m.cap = cap
    grouping = Grouping.from_labels(graph, m.labels(), m.tie_labels())
    if give_up_above and warm_colored and _colour_components(grouping, op_colors) > give_up_above:
        return None
    if target_groups and grouping.num_groups > max(target_groups, min_groups):
        grouping = coarsen(
            graph,
            grouping,
            max(target_groups, min_groups),
            max_group_ops=max_group_ops,
            op_colors=op_colors,
        )
    return grouping


def group_floor(target_groups: int, num_devices: int) -> int:
    """The fewest groups the merges may leave: min(target_groups, max(8 x devices, 32)).

    Below this a policy has too little to choose from: a graph that is mostly
    one chain, or that ends in one op everything feeds, would otherwise merge
    into a handful of groups, and from scratch the only placement left to
    learn is one device. Eight groups per device let every device hold
    several groups; 32 keeps small clusters searchable (our choice).

    Args:
      target_groups: the coarsening target (0 = no coarsening).
      num_devices: devices in the cluster.

    Returns:
      The floor in groups (never above a non-zero target).
    """
    floor = max(8 * int(num_devices), 32)
    return min(int(target_groups), floor) if target_groups else floor


def coarsen(
    graph: OpGraph,
    grouping: Grouping,
    target_groups: int,
    *,
    max_group_ops: int = 0,
    balance: float = BALANCE,
    op_colors: np.ndarray | None = None,
) -> Grouping:
    """Merges adjacent groups of an acyclic grouping until at most `target_groups` remain.

    Merges go heaviest edge bytes relative to the two groups' sizes first
    (Merger.coarsen), never close a cycle nor exceed the caps; tie classes of
    merged groups unite, two classes of several groups each only when the
    target cannot be reached otherwise. Stops early when no admissible merge
    is left, so the target is not always reached.

    Args:
      graph: the op graph.
      grouping: an acyclic grouping of it.
      target_groups: the wanted number of groups.
      max_group_ops: cap on the ops of a group; 0 = none.
      balance: a group made by these merges, and a tie class (the ops a
        placement puts on one device) made by joining two ties, holds at most
        `balance` times the mean ops per target group, n_ops / target_groups;
        0 = no such cap.
      op_colors: [n_ops] colours (see `group`); groups of different colours never merge.

    Returns:
      The coarser grouping.
    """
    if not grouping.acyclic:
        raise ValueError("coarsen needs an acyclic grouping")
    m = Merger(
        grouping.num_groups,
        grouping.edge_src,
        grouping.edge_dst,
        edge_bytes=grouping.edge_bytes,
        weights=grouping.sizes(),
        max_weight=max_group_ops,
        colors=None if op_colors is None else _group_colors(grouping, op_colors),
        order=np.arange(grouping.num_groups),  # groups are numbered in topological order
    )
    for g, leader in enumerate(grouping.tie.tolist()):
        m.tie(g, leader)
    balance_cap = int(np.ceil(balance * graph.num_ops / target_groups)) if balance else 0
    m.coarsen(target_groups, balance_cap=balance_cap)
    op_group = grouping.op_group.astype(np.int64)
    return Grouping.from_labels(graph, m.labels()[op_group], m.tie_labels()[op_group])


def _colour_components(grouping: Grouping, op_colors: np.ndarray) -> int:
    """The fewest groups that merging adjacent groups of one colour (or none) can leave."""
    colors = _group_colors(grouping, op_colors)
    s, d = np.asarray(grouping.edge_src), np.asarray(grouping.edge_dst)
    same = (colors[s] == colors[d]) | (colors[s] < 0) | (colors[d] < 0)
    g = grouping.num_groups
    adj = coo_matrix((np.ones(int(same.sum())), (s[same], d[same])), shape=(g, g))
    return int(connected_components(adj, directed=False)[0])


def _group_colors(grouping: Grouping, op_colors: np.ndarray) -> np.ndarray:
    """[G] the colour of each group: the largest colour among its ops (-1 when none)."""
    colors = np.full(grouping.num_groups, -1, dtype=np.int64)
    np.maximum.at(colors, grouping.op_group, np.asarray(op_colors, dtype=np.int64))
    return colors
