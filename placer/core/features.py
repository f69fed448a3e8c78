"""Per-group input features for the placement policy (no TensorFlow).

"Device Placement Optimization with Reinforcement Learning" (Mirhoseini et al.,
ICML 2017, section 3) feeds its encoder, per group, the op type, the output
shapes and the adjacency (indices of the neighbours, padded to a fixed size).
`features` builds those for a `Grouping`; `GroupFeatures.matrix()` is the
numeric part the policy concatenates with a learned type embedding.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence

import numpy as np

from placer.core.grouping import Grouping
from placer.core.op_graph import OpGraph

OOV = "<oov>"
# Names of the fixed columns of shape_features, before the padded largest shape.
SHAPE_COLUMNS = (
    "log_output_bytes",  # log1p of the group's total output bytes
    "log_largest_output",  # log1p of the largest output bytes of one op
    "log_num_ops",  # log1p of the number of ops
    "mean_rank",  # mean number of dims of the ops' outputs
    "log_persistent_bytes",  # log1p of the variables' bytes
    "log_compute_us",  # log1p of the cheapest device type's total cost, microseconds
    "log_in_degree",  # log1p of the number of producer groups
    "log_out_degree",  # log1p of the number of consumer groups
)


@dataclasses.dataclass(frozen=True, eq=False)
class GroupFeatures:
    """Encoder inputs, one row per group.

    Attributes:
      type_ids: [G] int32 id in `vocab` of the group's most common op type
        (ties: the type more common in the whole graph); 0 = out of vocabulary.
      type_counts: [G, V] float32 share of the group's ops of each type (rows sum to 1).
      vocab: op types by id; vocab[0] is the out-of-vocabulary token "<oov>".
      shape_features: [G, S] float32: the SHAPE_COLUMNS, then the dims of the
        op with the largest output (its first output), log1p, padded with 0 to
        `max_dims`; every column divided by its maximum over groups, so in [0, 1].
      adjacency: [G, 2k] float32: indices of up to k producer groups, then up to
        k consumer groups, by descending bytes on the edge (ties by index),
        each divided by G, padded with -1.
    """

    type_ids: np.ndarray
    type_counts: np.ndarray
    vocab: tuple[str, ...]
    shape_features: np.ndarray
    adjacency: np.ndarray

    @property
    def num_groups(self) -> int:
        return len(self.type_ids)

    def matrix(self) -> np.ndarray:
        """Returns [G, V + S + 2k] float32: type_counts, shape_features and adjacency side by side."""
        return np.concatenate([self.type_counts, self.shape_features, self.adjacency], axis=1).astype(np.float32)


def build_vocab(graph: OpGraph, max_size: int = 0) -> tuple[str, ...]:
    """Returns ("<oov>", op types by descending count, ties by name), at most `max_size` entries (0 = all)."""
    counts = collections.Counter(graph.types.tolist())
    types = sorted(counts, key=lambda t: (-counts[t], t))
    vocab = (OOV, *types)
    return vocab[:max_size] if max_size else vocab


def features(
    graph: OpGraph,
    grouping: Grouping,
    *,
    vocab: Sequence[str] | None = None,
    max_vocab: int = 0,
    max_dims: int = 4,
    max_neighbors: int = 6,
) -> GroupFeatures:
    """Computes the per-group encoder inputs.

    Args:
      graph: the op graph.
      grouping: its grouping.
      vocab: op-type vocabulary with vocab[0] the OOV token (e.g. from another
        graph, so ids agree); default `build_vocab(graph, max_vocab)`.
      max_vocab: vocabulary size when it is built here; 0 = every type.
      max_dims: dims of the largest output kept (padded with 0).
      max_neighbors: k, producer and consumer groups kept each.

    Returns:
      The features; see GroupFeatures.
    """
    vocab = tuple(vocab) if vocab is not None else build_vocab(graph, max_vocab)
    ids = {t: i for i, t in enumerate(vocab) if i > 0}
    num = grouping.num_groups
    op_group = grouping.op_group.astype(np.int64)
    op_type = np.fromiter((ids.get(t, 0) for t in graph.types), dtype=np.int64, count=graph.num_ops)

    counts = np.zeros((num, len(vocab)), dtype=np.float64)
    np.add.at(counts, (op_group, op_type), 1.0)
    sizes = counts.sum(axis=1)
    # Most common type; among equal counts the lowest id (the more common type overall).
    type_ids = np.argmax(counts, axis=1).astype(np.int32)
    type_counts = (counts / np.maximum(sizes, 1)[:, None]).astype(np.float32)

    shape = _shape_features(graph, grouping, max_dims)
    adjacency = _adjacency(grouping, max_neighbors)
    return GroupFeatures(type_ids, type_counts, vocab, shape, adjacency)


def _shape_features(graph: OpGraph, grouping: Grouping, max_dims: int) -> np.ndarray:
    num = grouping.num_groups
    g = grouping.op_group.astype(np.int64)
    obytes = graph.output_bytes.astype(np.float64)
    total = np.bincount(g, weights=obytes, minlength=num)
    largest = np.zeros(num)
    np.maximum.at(largest, g, obytes)
    nops = np.bincount(g, minlength=num).astype(np.float64)
    ranks = np.fromiter(
        (np.mean([len(s) for s in ss]) if ss else 0.0 for ss in graph.output_shapes),
        dtype=np.float64,
        count=graph.num_ops,
    )
    mean_rank = np.bincount(g, weights=ranks, minlength=num) / np.maximum(nops, 1)
    persistent = np.bincount(g, weights=graph.persistent_bytes.astype(np.float64), minlength=num)
    cost = graph.compute_cost
    if cost.shape[1]:
        per_type = np.stack(
            [np.bincount(g, weights=np.nan_to_num(cost[:, j]), minlength=num) for j in range(cost.shape[1])], axis=1
        )
        compute = per_type.min(axis=1) * 1e6
    else:
        compute = np.zeros(num)
    indeg = np.bincount(grouping.edge_dst, minlength=num).astype(np.float64)
    outdeg = np.bincount(grouping.edge_src, minlength=num).astype(np.float64)
    cols = [
        np.log1p(total),
        np.log1p(largest),
        np.log1p(nops),
        mean_rank,
        np.log1p(persistent),
        np.log1p(compute),
        np.log1p(indeg),
        np.log1p(outdeg),
    ]

    # Dims of the first output of the op with the largest output in each group (first such op).
    dims = np.zeros((num, max_dims))
    order = np.lexsort((np.arange(graph.num_ops), -obytes, g))
    firsts = order[np.r_[True, g[order][1:] != g[order][:-1]]] if graph.num_ops else order
    for op in firsts.tolist():
        shapes = graph.output_shapes[op]
        if shapes:
            d = [max(int(x), 0) for x in shapes[0][:max_dims]]
            dims[g[op], : len(d)] = np.log1p(d)
    out = np.concatenate([np.stack(cols, axis=1), dims], axis=1) if num else np.zeros((0, len(cols) + max_dims))
    peak = out.max(axis=0) if num else np.zeros(out.shape[1])
    return (out / np.where(peak > 0, peak, 1.0)).astype(np.float32)


def _adjacency(grouping: Grouping, k: int) -> np.ndarray:
    num = grouping.num_groups
    out = np.full((num, 2 * k), -1.0, dtype=np.float32)
    src, dst, b = (a.astype(np.int64) for a in grouping.group_graph())
    # Producers of each group, by descending bytes then index.
    for half, (owner, other) in enumerate(((dst, src), (src, dst))):
        order = np.lexsort((other, -b, owner))
        o, x = owner[order], other[order]
        start = np.searchsorted(o, np.arange(num))
        rank = np.arange(len(o)) - start[o]
        keep = rank < k
        out[o[keep], half * k + rank[keep]] = x[keep] / max(num, 1)
    return out
