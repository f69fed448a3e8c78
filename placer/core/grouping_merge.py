"""The merge engine behind placer/core/grouping.py: union-find plus a cycle check (no TensorFlow).

Nodes (ops, or the groups of an earlier grouping) start as one group each and
form a DAG. Groups are merged only when the merge keeps the group graph
acyclic, so a topological order `pos` of the groups can be maintained under
merges: the check for merging groups A and B (pos[A] < pos[B]) explores only
groups placed between them, and the merge closes a cycle exactly when B is
reachable from A through a third group. The order is repaired as in Pearce
and Kelly, "A dynamic topological sort algorithm for directed acyclic graphs"
(JEA 2006).

A second union-find holds the tie classes: groups that must share a device
without being one group (colocated ops whose merge would close a cycle).
Merging two groups also unites their tie classes, so a merge is refused when
both groups belong to classes of several groups: otherwise, say, merging the
update ops of two variables would tie the two variables (and everything
grouped with them) to one device, far from where the merge happened.
"""

from __future__ import annotations

import heapq

import numpy as np

from placer.core.op_graph import OpGraph, topological_order
from placer.core.op_names import GRADIENT_SCOPE as _GRADIENT_SCOPE
from placer.core.op_names import forward_op_for

# Groups the path search of `merge_closure` may visit per unit of `max_extra`.
_CLOSURE_SEARCH = 4


def _reach(start: int, nbrs: dict[int, dict[int, int]], keep, budget: int) -> set[int] | None:
    """Groups reachable from `start` through groups where keep(g); None past `budget` groups."""
    seen: set[int] = set()
    stack = [start]
    while stack:
        for y in nbrs[stack.pop()]:
            if y not in seen and keep(y):
                if len(seen) >= budget:
                    return None
                seen.add(y)
                stack.append(y)
    return seen


class Merger:
    """Merges groups of nodes while keeping the group graph acyclic.

    Args:
      num_nodes: number of nodes n.
      src: [E] edge sources; the node graph must be a DAG.
      dst: [E] edge targets.
      edge_bytes: [E] bytes per edge (summed over parallel edges); default 0.
      weights: [n] size of each node (ops); default 1 each.
      max_weight: cap on the total weight of a group; 0 = none.
      colors: [n] a colour per node (-1 = none); groups of two different
        colours never merge (used to keep a given placement expressible).
      order: [n] a topological order of the nodes, when the caller has one;
        default computed.
    """

    def __init__(
        self,
        num_nodes: int,
        src: np.ndarray,
        dst: np.ndarray,
        *,
        edge_bytes: np.ndarray | None = None,
        weights: np.ndarray | None = None,
        max_weight: int = 0,
        colors: np.ndarray | None = None,
        order: np.ndarray | None = None,
    ):
        n = int(num_nodes)
        self.color = [-1] * n if colors is None else [int(c) for c in colors]
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        b = np.zeros(len(src), np.int64) if edge_bytes is None else np.asarray(edge_bytes, dtype=np.int64)
        self.cap = int(max_weight)
        self.parent = list(range(n))
        self.tparent = list(range(n))
        self.tcount = [1] * n  # groups per tie class, at the class root
        self.size = [1] * n if weights is None else [int(w) for w in weights]
        self.tweight = list(self.size)  # weight per tie class, at the class root
        self.num_groups = n
        # Merges stop before fewer than `floor` groups remain (0 = no floor).
        self.floor = 0
        self.succ: dict[int, dict[int, int]] = {i: {} for i in range(n)}
        self.pred: dict[int, dict[int, int]] = {i: {} for i in range(n)}
        for a, c, w in zip(src.tolist(), dst.tolist(), b.tolist(), strict=True):
            if a != c:
                self.succ[a][c] = self.succ[a].get(c, 0) + w
                self.pred[c][a] = self.pred[c].get(a, 0) + w
        if order is None:
            order = topological_order(n, src[src != dst], dst[src != dst])
        if order is None:
            raise ValueError("the node graph has a cycle")
        self.pos = [0] * n
        for p, k in enumerate(order.tolist()):
            self.pos[k] = p

    # ----- union-finds ------------------------------------------------------

    @staticmethod
    def _root(parent: list[int], i: int) -> int:
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    def find(self, i: int) -> int:
        """Returns the group root of node `i`."""
        return self._root(self.parent, i)

    def tie_find(self, i: int) -> int:
        """Returns the tie-class root of node `i`."""
        return self._root(self.tparent, i)

    def tie(self, a: int, b: int) -> None:
        """Puts the groups of nodes a and b into one tie class (they must share a device)."""
        ta, tb = self.tie_find(a), self.tie_find(b)
        if ta != tb:
            lo, hi = min(ta, tb), max(ta, tb)
            self.tparent[hi] = lo
            self.tcount[lo] += self.tcount[hi]
            self.tweight[lo] += self.tweight[hi]

    def admissible(self, ga: int, gb: int, *, join_ties: bool = False, balance_cap: int = 0) -> bool:
        """Whether group roots ga, gb may merge as far as the caps and the ties go (no cycle check).

        Args:
          ga: a group root.
          gb: another group root.
          join_ties: allow joining two tie classes of several groups each.
          balance_cap: cap on the weight of the merged group and, when two
            classes of several groups are joined, of the joined class; 0 = none.
        """
        merged = self.size[ga] + self.size[gb]
        if (self.cap and merged > self.cap) or (balance_cap and merged > balance_cap):
            return False
        if not self._same_color(ga, gb):
            return False
        ta, tb = self.tie_find(ga), self.tie_find(gb)
        if ta == tb or self.tcount[ta] == 1 or self.tcount[tb] == 1:
            return True
        return join_ties and not (balance_cap and self.tweight[ta] + self.tweight[tb] > balance_cap)

    def merge_closure(self, a: int, b: int, max_extra: int) -> bool:
        """Merges the groups of a and b together with every group on a path between them.

        Contracting the two groups and all groups on paths between them keeps
        the group graph acyclic. Refused when those other groups weigh more
        than `max_extra`, the search for them meets too many groups, or the
        merge breaks the cap or joins two ties.

        Returns:
          True if a and b now share a group.
        """
        ga, gb = self.find(a), self.find(b)
        if ga == gb:
            return True
        pos, succ, pred = self.pos, self.succ, self.pred
        if pos[ga] > pos[gb]:
            ga, gb = gb, ga
        lo, hi = pos[ga], pos[gb]
        budget = _CLOSURE_SEARCH * (max_extra + 1)
        fwd = _reach(ga, succ, lambda y: pos[y] < hi, budget)
        if fwd is None:
            return False  # a long way round: not worth searching further
        if not any(gb in succ[x] for x in fwd):
            return self.try_merge(ga, gb)  # no path through a third group
        back = _reach(gb, pred, lambda y: pos[y] > lo, budget)
        if back is None:
            return False
        between = sorted(fwd & back, key=pos.__getitem__)
        extra = sum(self.size[x] for x in between)
        if extra > max_extra or (self.cap and extra + self.size[ga] + self.size[gb] > self.cap):
            return False
        multi = {t for t in (self.tie_find(x) for x in [ga, gb, *between]) if self.tcount[t] > 1}
        if len(multi) > 1:
            return False
        if len({self.color[x] for x in [ga, gb, *between]} - {-1}) > 1:
            return False
        # In topological order each merge is admissible and closes no cycle:
        # every group on a path from the growing group to x is already in it.
        for x in [*between, gb]:
            self._merge_roots(self.find(ga), x)
        return True

    def _same_color(self, ga: int, gb: int) -> bool:
        ca, cb = self.color[ga], self.color[gb]
        return ca < 0 or cb < 0 or ca == cb

    def labels(self) -> np.ndarray:
        """Returns [n] the group root of every node."""
        n = len(self.parent)
        return np.fromiter((self.find(i) for i in range(n)), dtype=np.int64, count=n)

    def tie_labels(self) -> np.ndarray:
        """Returns [n] the tie-class root of every node."""
        n = len(self.parent)
        return np.fromiter((self.tie_find(i) for i in range(n)), dtype=np.int64, count=n)

    # ----- merges -------------------------------------------------------------

    def try_merge(self, a: int, b: int) -> bool:
        """Merges the groups of nodes a and b unless that closes a cycle, breaks the cap or joins two ties.

        Returns:
          True if a and b now share a group.
        """
        ga, gb = self.find(a), self.find(b)
        if ga == gb:
            return True
        if not self.admissible(ga, gb):
            return False
        return self._merge_roots(ga, gb) is not None

    def merge_single_successor_groups(self) -> None:
        """Repeatedly merges a group whose edges all go to one group into that group.

        Such a merge never closes a cycle; only the cap can refuse it.
        """
        work = sorted(self.succ, key=self.pos.__getitem__)
        queued = set(work)
        while work:
            c = work.pop()
            queued.discard(c)
            if c not in self.succ or len(self.succ[c]) != 1:
                continue
            (d,) = self.succ[c]
            preds = list(self.pred[c]) + list(self.pred[d])
            if self.try_merge(c, d):
                for x in [c, *preds]:
                    x = self.find(x)
                    if x not in queued:
                        queued.add(x)
                        work.append(x)

    def coarsen(self, target: int, *, balance_cap: int = 0) -> None:
        """Merges adjacent groups, best first, until at most `target` groups remain.

        A merge along a group-graph edge (a, b) is ranked by the edge's bytes
        over the product of the two groups' weights, bytes(a, b) / (w(a) *
        w(b)): heavy edges between small groups first, which keeps the groups
        balanced; among equal ranks the lighter merged group goes first, then
        the lower ids. Merges that would close a cycle or break the caps are
        skipped. A first pass also skips merges that would join two ties (see
        `admissible`); if the target is not reached, a second pass allows
        them. Stale heap entries are recognised by a per-group stamp and
        dropped when popped.

        Args:
          target: the wanted number of groups (stops earlier when no
            admissible merge is left).
          balance_cap: cap on the weight of a group made by these merges, and
            of a tie class (the unit a placement puts on one device) made by
            joining two ties; 0 = none.
        """
        size = self.size
        for join_ties in (False, True):
            if self.num_groups <= target:
                return
            stamp = dict.fromkeys(self.succ, 0)

            def entry(a: int, b: int, w: int, stamp=stamp) -> tuple[float, int, int, int, int, int]:
                return (-w / (size[a] * size[b]), size[a] + size[b], a, b, stamp[a], stamp[b])

            heap = [entry(a, b, w) for a, out in self.succ.items() for b, w in out.items()]
            heapq.heapify(heap)
            clock = 0
            while self.num_groups > target and heap:
                _, _, a, b, sa, sb = heapq.heappop(heap)
                if stamp.get(a) != sa or stamp.get(b) != sb:
                    continue
                if not self.admissible(a, b, join_ties=join_ties, balance_cap=balance_cap):
                    continue
                r = self._merge_roots(a, b)
                if r is None:
                    continue
                clock += 1
                stamp.pop(b if r == a else a)
                stamp[r] = clock
                for x, w in self.succ[r].items():
                    heapq.heappush(heap, entry(r, x, w))
                for x, w in self.pred[r].items():
                    heapq.heappush(heap, entry(x, r, w))

    def _merge_roots(self, ca: int, cb: int) -> int | None:
        """Merges two group roots if no path joins them through a third group; returns the new root or None."""
        if self.num_groups <= self.floor:
            return None
        pos, succ, pred = self.pos, self.succ, self.pred
        if pos[ca] > pos[cb]:
            ca, cb = cb, ca
        hi, lo = pos[cb], pos[ca]
        # Forward from ca over groups placed before cb.
        fwd = [x for x in succ[ca] if x != cb and pos[x] < hi]
        seen = set(fwd)
        stack = list(fwd)
        while stack:
            for y in succ[stack.pop()]:
                if y == cb:
                    return None
                if y not in seen and pos[y] < hi:
                    seen.add(y)
                    stack.append(y)
        if not seen:
            new_pos = hi  # ca's other successors all come after cb.
        else:
            back = {x for x in pred[cb] if x != ca and pos[x] > lo}
            stack = list(back)
            while stack:
                for y in pred[stack.pop()]:
                    if y not in back and pos[y] > lo:
                        back.add(y)
                        stack.append(y)
            if not back:
                new_pos = lo
            else:
                # Pearce-Kelly: the ones reaching cb first, then the merged
                # group, then the ones reached from ca, in the freed slots.
                slots = sorted([pos[x] for x in seen] + [pos[x] for x in back] + [lo, hi])
                for k, x in enumerate(sorted(back, key=pos.__getitem__)):
                    pos[x] = slots[k]
                new_pos = slots[len(back)]
                for k, x in enumerate(sorted(seen, key=pos.__getitem__)):
                    pos[x] = slots[len(slots) - len(seen) + k]
        big, small = (ca, cb) if len(succ[ca]) + len(pred[ca]) >= len(succ[cb]) + len(pred[cb]) else (cb, ca)
        for x, w in succ.pop(small).items():
            del pred[x][small]
            if x != big:
                pred[x][big] = pred[x].get(big, 0) + w
                succ[big][x] = succ[big].get(x, 0) + w
        for x, w in pred.pop(small).items():
            del succ[x][small]
            if x != big:
                succ[x][big] = succ[x].get(big, 0) + w
                pred[big][x] = pred[big].get(x, 0) + w
        succ[big].pop(small, None)
        pred[big].pop(small, None)
        self.parent[small] = big
        self.size[big] += self.size[small]
        if self.color[big] < 0:
            self.color[big] = self.color[small]
        self.num_groups -= 1
        self.tie(big, small)
        self.tcount[self.tie_find(big)] -= 1
        pos[big] = new_pos
        return big


def merge_gradients(graph: OpGraph, m: Merger, closure_ops: int) -> None:
    """Grouping step 2: gradient ops join their forward op, update ops their variable (or are tied to it)."""
    index = graph.index()
    by_forward: dict[int, int] = {}
    for i, name in enumerate(graph.names.tolist()):
        f = forward_op_for(name, index)
        if f is None:
            continue
        update = not _GRADIENT_SCOPE.match(name)
        # Ops of one forward op first join each other, then the forward op.
        if f not in by_forward:
            by_forward[f] = i
        elif not m.try_merge(by_forward[f], i) and update:
            m.tie(f, i)
    for f, i in by_forward.items():
        if not _GRADIENT_SCOPE.match(str(graph.names[i])):
            if not m.merge_closure(f, i, closure_ops):
                m.tie(f, i)
        else:
            m.try_merge(f, i)


def single_consumers(graph: OpGraph) -> np.ndarray:
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
