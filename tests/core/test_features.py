"""Group features of hand-built graphs."""

import numpy as np

from placer.core.features import OOV, SHAPE_COLUMNS, build_vocab, features
from placer.core.grouping import Grouping
from placer.core.op_graph import OpGraph


def graph():
    # a -> b (100 bytes), a -> c (10), b -> d (50), c -> d (20); groups {a}, {b, c}, {d}.
    return OpGraph.create(
        "f",
        ["a", "b", "c", "d"],
        ["Const", "MatMul", "MatMul", "Add"],
        [("a", "b", 100), ("a", "c", 10), ("b", "d", 50), ("c", "d", 20)],
        output_shapes=[[(5, 5)], [(2, 3, 4)], [(7,)], [()]],
        output_bytes=[100, 96, 28, 4],
    )


def test_vocab_and_type_ids():
    g = graph()
    assert build_vocab(g) == (OOV, "MatMul", "Add", "Const")
    gr = Grouping.from_labels(g, np.array([0, 1, 1, 2]))
    f = features(g, gr)
    assert f.num_groups == 3
    assert f.type_ids.tolist() == [3, 1, 2]
    np.testing.assert_allclose(f.type_counts[1], [0, 1, 0, 0])
    # A vocabulary without "Add" and "Const": those become id 0.
    f2 = features(g, gr, vocab=(OOV, "MatMul"))
    assert f2.type_ids.tolist() == [0, 1, 0]
    np.testing.assert_allclose(f2.type_counts[0], [1, 0])


def test_shape_features():
    g = graph()
    gr = Grouping.from_labels(g, np.array([0, 1, 1, 2]))
    f = features(g, gr, max_dims=3)
    assert f.shape_features.shape == (3, len(SHAPE_COLUMNS) + 3)
    raw_total = np.log1p([100, 124, 4])
    np.testing.assert_allclose(f.shape_features[:, 0], raw_total / raw_total.max(), rtol=1e-6)
    # Group 1's largest output is b (96 bytes), shape (2, 3, 4).
    dims = f.shape_features[1, len(SHAPE_COLUMNS) :]
    raw_dims = np.log1p([[5, 5, 0], [2, 3, 4], [0, 0, 0]])
    np.testing.assert_allclose(dims, raw_dims[1] / raw_dims.max(axis=0), rtol=1e-6)
    assert f.shape_features.min() >= 0 and f.shape_features.max() <= 1


def test_adjacency_lists_neighbours_by_bytes():
    g = graph()
    gr = Grouping.from_labels(g, np.array([0, 1, 2, 3]))
    f = features(g, gr, max_neighbors=2)
    # Group 3 (d): producers b (50 bytes) then c (20); no consumers.
    np.testing.assert_allclose(f.adjacency[3], [1 / 4, 2 / 4, -1, -1])
    # Group 0 (a): no producers; consumers b (100) then c (10).
    np.testing.assert_allclose(f.adjacency[0], [-1, -1, 1 / 4, 2 / 4])
    m = f.matrix()
    assert m.dtype == np.float32 and m.shape == (4, len(f.vocab) + f.shape_features.shape[1] + 4)
