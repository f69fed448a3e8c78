"""The merge engine behind graphs/grouping.py: union-find plus a cycle check (no TensorFlow).

Two union-finds over op indices: groups (ops that share a device) and
components (strongly connected sets of groups; one group per component unless
colocation constraints closed a cycle and the caller kept it). Components form
a DAG whose topological order `pos` is maintained under merges, so the cycle
check for merging components A and B (pos[A] < pos[B]) only explores
components between them: the merge closes a cycle exactly when B is reachable
from A through a third component. The order is repaired as in Pearce and
Kelly, "A dynamic topological sort algorithm for directed acyclic graphs"
(JEA 2006).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from graphs.op_graph import OpGraph, topological_order


class Merger:
    """Merges groups of ops while keeping the component graph acyclic.

    Args:
      graph: the op graph.
      max_group_ops: cap on the ops of a group for refusable merges; 0 = none.
      merge_cycles: when colocation constraints close a cycle of groups, merge
        the whole cycle into one group (True) or keep the groups and treat the
        cycle as one component (False).
    """

    def __init__(self, graph: OpGraph, *, max_group_ops: int = 0, merge_cycles: bool = False):
        n = graph.num_ops
        self.cap = int(max_group_ops)
        self.parent = list(range(n))
        self.size = [1] * n
        self.cparent = list(range(n))
        by_key: dict[str, list[int]] = {}
        for i, key in enumerate(graph.colocation):
            if key:
                by_key.setdefault(key, []).append(i)
        for ops in by_key.values():
            for o in ops[1:]:
                self._union(ops[0], o)

        # Strongly connected sets of constraint groups.
        roots = np.fromiter((self.find(i) for i in range(n)), dtype=np.int64, count=n)
        s, d = roots[graph.edge_src], roots[graph.edge_dst]
        cross = s != d
        adj = coo_matrix((np.ones(int(cross.sum())), (s[cross], d[cross])), shape=(n, n))
        _, scc = connected_components(adj, directed=True, connection="strong")
        first_root: dict[int, int] = {}
        for r in np.unique(roots).tolist():
            label = int(scc[r])
            if label not in first_root:
                first_root[label] = r
            elif merge_cycles:
                self._union(first_root[label], r)
            else:
                self.cparent[r] = first_root[label]
        # After forced unions the representative may no longer be a group root.
        self.ngroups: dict[int, int] = {}
        comp_of = np.empty(n, dtype=np.int64)
        for i in range(n):
            g = self.find(i)
            c = self.cfind(g)
            if merge_cycles and c != g:
                self.cparent[g] = g
                c = g
            comp_of[i] = c
            if g == i:
                self.ngroups[c] = self.ngroups.get(c, 0) + 1
        cs, cd = comp_of[graph.edge_src], comp_of[graph.edge_dst]
        cross = cs != cd
        self.succ: dict[int, set[int]] = {c: set() for c in self.ngroups}
        self.pred: dict[int, set[int]] = {c: set() for c in self.ngroups}
        for a, b in zip(cs[cross].tolist(), cd[cross].tolist(), strict=True):
            self.succ[a].add(b)
            self.pred[b].add(a)
        comps = sorted(self.ngroups)
        label = {c: k for k, c in enumerate(comps)}
        ls = np.asarray([label[a] for a in cs[cross].tolist()], dtype=np.int64)
        ld = np.asarray([label[b] for b in cd[cross].tolist()], dtype=np.int64)
        order = topological_order(len(comps), ls, ld)
        self.pos = [0] * n
        for p, k in enumerate(order.tolist()):
            self.pos[comps[k]] = p

    # ----- union-find -----------------------------------------------------

    def find(self, i: int) -> int:
        """Returns the group root of op `i`."""
        parent = self.parent
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    def cfind(self, i: int) -> int:
        """Returns the component root of group root `i`."""
        parent = self.cparent
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    def _union(self, a: int, b: int) -> int:
        """Unions the groups of ops a and b (no checks); returns the new root."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return ra

    def labels(self) -> np.ndarray:
        """Returns [n] the group root of every op."""
        return np.fromiter((self.find(i) for i in range(len(self.parent))), dtype=np.int64, count=len(self.parent))

    # ----- refusable merges -------------------------------------------------

    def try_merge(self, a: int, b: int) -> bool:
        """Merges the groups of ops a and b unless that closes a new cycle or breaks the cap.

        Returns:
          True if a and b now share a group.
        """
        ga, gb = self.find(a), self.find(b)
        if ga == gb:
            return True
        if self.cap and self.size[ga] + self.size[gb] > self.cap:
            return False
        ca, cb = self.cfind(ga), self.cfind(gb)
        if ca != cb:
            c = self._merge_components(ca, cb)
            if c is None:
                return False
        else:
            c = ca
        self._union(ga, gb)
        self.ngroups[c] -= 1
        return True

    def merge_single_successor_groups(self) -> None:
        """Repeatedly merges a group whose edges all go to one group into that group.

        Such a merge never closes a cycle. Only components made of one group
        take part (a component of several groups is a kept constraint cycle).
        """
        work = sorted(self.ngroups, key=lambda c: self.pos[c])
        queued = set(work)
        while work:
            c = work.pop()
            queued.discard(c)
            if c not in self.ngroups or self.ngroups[c] != 1 or len(self.succ[c]) != 1:
                continue
            (d,) = self.succ[c]
            if self.ngroups[d] != 1:
                continue
            preds = list(self.pred[c]) + list(self.pred[d])
            if self.try_merge(c, d):
                for x in [self.cfind(self.find(c)), *preds]:
                    x = self.cfind(self.find(x))
                    if x not in queued:
                        queued.add(x)
                        work.append(x)

    def _merge_components(self, ca: int, cb: int) -> int | None:
        """Merges two components if no path joins them through a third; returns the new root or None."""
        pos, succ, pred = self.pos, self.succ, self.pred
        if pos[ca] > pos[cb]:
            ca, cb = cb, ca
        hi, lo = pos[cb], pos[ca]
        # Forward from ca over components placed before cb.
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
                # component, then the ones reached from ca, in the freed slots.
                slots = sorted([pos[x] for x in seen] + [pos[x] for x in back] + [lo, hi])
                for k, x in enumerate(sorted(back, key=pos.__getitem__)):
                    pos[x] = slots[k]
                new_pos = slots[len(back)]
                for k, x in enumerate(sorted(seen, key=pos.__getitem__)):
                    pos[x] = slots[len(slots) - len(seen) + k]
        big, small = (ca, cb) if len(succ[ca]) + len(pred[ca]) >= len(succ[cb]) + len(pred[cb]) else (cb, ca)
        for x in succ.pop(small):
            pred[x].discard(small)
            if x != big:
                pred[x].add(big)
                succ[big].add(x)
        for x in pred.pop(small):
            succ[x].discard(small)
            if x != big:
                succ[x].add(big)
                pred[big].add(x)
        succ[big].discard(small)
        pred[big].discard(small)
        self.cparent[small] = big
        self.ngroups[big] += self.ngroups.pop(small)
        pos[big] = new_pos
        return big
