"""Disjoint sets (union-find) over hashable items, shared by extraction and apply (no TensorFlow)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable


class DisjointSets:
    """Sets of items merged pairwise; each set is named by its root item.

    Path halving keeps `find` near constant time; `union` keeps the root of
    its first argument, so callers decide which member names the merged set.
    """

    def __init__(self, items: Iterable[Hashable] = ()):
        self._parent: dict = {x: x for x in items}

    def __contains__(self, x: Hashable) -> bool:
        return x in self._parent

    def add(self, x: Hashable) -> None:
        """Adds `x` as a set of its own, unless it is already in a set."""
        self._parent.setdefault(x, x)

    def find(self, x: Hashable) -> Hashable:
        """The root of the set holding `x` (added as a set of its own if new)."""
        parent = self._parent
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, keep: Hashable, other: Hashable) -> tuple[Hashable, Hashable] | None:
        """Merges the set of `other` into the set of `keep`.

        Returns:
          (kept root, absorbed root), or None when they were already one set.
        """
        rk, ro = self.find(keep), self.find(other)
        if rk == ro:
            return None
        self._parent[ro] = rk
        return rk, ro
