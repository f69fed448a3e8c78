"""Colocation: ops sharing a non-empty colocation key must share a device (no TensorFlow).

TF refuses to run a graph whose colocated ops (a variable, its reads and its
update ops; `_class` attributes) sit on different devices. Every part that
checks a placement against this rule uses the two functions here.
"""

from __future__ import annotations

import numpy as np

from placer.core.op_graph import OpGraph


def colocation_sets(graph: OpGraph) -> list[np.ndarray]:
    """Returns the op index arrays of colocation keys shared by two ops or more, by first op."""
    sets: dict[str, list[int]] = {}
    for i, key in enumerate(graph.colocation.tolist()):
        if key:
            sets.setdefault(key, []).append(i)
    return [np.asarray(v, dtype=np.int64) for v in sets.values() if len(v) > 1]


def colocation_breaks(graph: OpGraph, devices: np.ndarray) -> list[tuple[int, int]]:
    """Returns (op, first op of its key) for each op on another device than the first op of its key.

    Args:
      graph: the op graph.
      devices: [n_ops] device per op (indices or names).

    Returns:
      The breaking ops in op order; empty when the placement respects colocation.
    """
    dev = np.asarray(devices)
    out = []
    for members in colocation_sets(graph):
        first = int(members[0])
        out.extend((int(i), first) for i in members[1:] if dev[i] != dev[first])
    return sorted(out)
