"""Longest paths in a topologically ordered op graph (every edge goes to a higher op index)."""

from __future__ import annotations

import numpy as np


def bottom_levels(op_time: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Returns [n_ops] seconds of the longest path from each op to a sink, the op included (edges free).

    One pass over the edges from the last producer back: since edges go to
    higher indices, every edge out of an op's consumers comes before the
    edges out of the op (linear time in the edges, after a sort).

    Args:
      op_time: [n_ops] seconds per op.
      src, dst: [n_edges] producer and consumer op indices.
    """
    times = np.asarray(op_time, dtype=np.float64).tolist()
    out = list(times)
    src, dst = np.asarray(src), np.asarray(dst)
    order = np.argsort(-src, kind="stable")
    for s, d in zip(src[order].tolist(), dst[order].tolist(), strict=True):
        if times[s] + out[d] > out[s]:
            out[s] = times[s] + out[d]
    return np.asarray(out, dtype=np.float64)
