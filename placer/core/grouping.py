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

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from placer.core import op_names
from placer.core.grouping_merge import Merger, merge_gradients, single_consumers
from placer.core.groups import Grouping
from placer.core.op_graph import OpGraph

__all__ = ["Grouping", "coarsen", "group", "group_floor"]

# Our choice: a colocated op whose merge would close a cycle also takes the
# groups on the paths between (e.g. a batch-norm moving average's few update
# ops) when they hold at most this many ops; longer cycles become ties.
CYCLE_CLOSURE_OPS = 8
# Our choice: coarsening keeps each tie class within BALANCE times the mean
# group size of the target (see `coarsen`).
BALANCE = 4.0
# Our choice: coarsening more than CONTRACT_ABOVE x the target groups first joins
# runs of a depth-first topological order into CONTRACT_TO x the target groups
# (`contract_runs`, linear time), so that the best-first merges, whose cycle
# checks grow with the graph, start from a few thousand groups. NMT with 8
# layers (12,384 groups before coarsening, target 256) stays below it.
CONTRACT_ABOVE = 64
CONTRACT_TO = 32


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
    if grouping.num_groups > CONTRACT_ABOVE * target_groups:
        grouping = contract_runs(
            graph, grouping, CONTRACT_TO * target_groups, max_group_ops=max_group_ops, op_colors=op_colors
        )
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


def depth_first_order(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A topological order of a DAG that follows paths: Kahn's algorithm taking the most recently readied node.

    After a node, its successors that became ready come next, so runs of the
    order follow chains of the graph rather than its layers. O(n + m).

    Args:
      n: number of nodes.
      src: [m] edge sources.
      dst: [m] edge targets (the graph must be acyclic).

    Returns:
      [n] the nodes in topological order.

    >>> depth_first_order(4, np.array([0, 0, 1, 2]), np.array([1, 2, 3, 3])).tolist()
    [0, 2, 1, 3]
    """
    src = np.asarray(src, dtype=np.int64)
    by_src = np.argsort(src, kind="stable")
    starts = np.searchsorted(src[by_src], np.arange(n + 1)).tolist()
    targets = np.asarray(dst, dtype=np.int64)[by_src].tolist()
    indegree = np.bincount(np.asarray(dst, dtype=np.int64), minlength=n).tolist()
    ready = [i for i in range(n - 1, -1, -1) if indegree[i] == 0]  # the lowest index on top
    order = []
    while ready:
        u = ready.pop()
        order.append(u)
        for v in targets[starts[u] : starts[u + 1]]:
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    if len(order) != n:
        raise ValueError("depth_first_order needs an acyclic graph")
    return np.asarray(order, dtype=np.int64)


def contract_runs(
    graph: OpGraph, grouping: Grouping, runs: int, *, max_group_ops: int = 0, op_colors: np.ndarray | None = None
) -> Grouping:
    """Joins consecutive groups of `depth_first_order` into about `runs` groups of even size, in linear time.

    Groups joined are consecutive in a topological order, so the result is
    acyclic. A run ends before a group that would take it over n_ops / runs
    ops (or `max_group_ops`), that has another colour than the run, or that
    belongs to another tie class of several groups than one the run holds
    (the rule of `Merger.admissible`); a group over the size alone is a run.

    Args:
      graph: the op graph.
      grouping: an acyclic grouping of it.
      runs: the wanted number of groups (more when the rules above cut runs short).
      max_group_ops: cap on the ops of a group; 0 = none.
      op_colors: [n_ops] colours (see `group`), or None.

    Returns:
      The contracted grouping (ties kept: a run holding a tied group is tied to its class).
    """
    g = grouping.num_groups
    order = depth_first_order(g, grouping.edge_src, grouping.edge_dst).tolist()
    sizes = grouping.sizes().tolist()
    colors = [-1] * g if op_colors is None else _group_colors(grouping, op_colors).tolist()
    tie = grouping.tie.tolist()
    several = (np.bincount(grouping.tie, minlength=g) > 1).tolist()
    limit = max(1, -(-graph.num_ops // max(1, runs)))
    limit = min(limit, max_group_ops) if max_group_ops else limit
    run_of = np.empty(g, dtype=np.int64)
    run, weight, color, cls = 0, 0, -1, -1
    for x in order:
        cx, tx = colors[x], tie[x] if several[tie[x]] else -1
        if weight and (
            weight + sizes[x] > limit
            or (cx >= 0 and color >= 0 and cx != color)
            or (tx >= 0 and cls >= 0 and tx != cls)
        ):
            run, weight, color, cls = run + 1, 0, -1, -1
        run_of[x] = run
        weight += sizes[x]
        color = cx if cx >= 0 else color
        cls = tx if tx >= 0 else cls
    op_group = grouping.op_group.astype(np.int64)
    return Grouping.from_labels(graph, run_of[op_group], grouping.tie[op_group])


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
