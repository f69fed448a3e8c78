"""The cross-entropy search (placer.rl.learn_ce): its update worked by hand, what learning adds, resuming."""

import numpy as np
import pytest

from placer.core.errors import InputError
from placer.core.measurement import Measurement
from placer.rl import learn_ce
from tests.hand_graphs import cpu_and_gpus, parts_graph
from tests.rl.test_learners import drive, setup_for


def learner_on(graph, cluster, workdir, seed=0, **kw):
    setup = setup_for(graph, cluster, "cross_entropy", str(workdir), seed=seed)
    return learn_ce.CrossEntropy(setup, learn_ce.Config(**kw)), setup


def test_update_moves_toward_the_elite_kept_across_rounds(tmp_path):
    # 3 ops, no edges: 3 tie classes on [CPU, GPU]. Every class starts at [0.5, 0.5].
    lrn, _ = learner_on(parts_graph(3), cpu_and_gpus(1), tmp_path, population=3, elite=2 / 3, rate=0.5, floor=0.3)
    assert lrn.P.shape == (3, 2) and lrn.elite == 2
    lrn.P = np.full((3, 2), 0.5)
    lrn._last = np.array([[0, 1, 1], [1, 1, 0], [1, 0, 0]])
    lrn.observe(None, [Measurement(2.0), Measurement(1.0), Measurement(np.inf, failure="oom")])
    # Elite: rows 1 (1 s) and 0 (2 s); the failed row ranks last. Device shares of the elite:
    # class 0 on {1, 0} -> [.5, .5]; class 1 on {1, 1} -> [0, 1]; class 2 on {0, 1} -> [.5, .5].
    # P = .5 P + .5 shares: [.5, .5], [.25, .75], [.5, .5]; the floor .3 lifts .25: [.3, .75] / 1.05.
    np.testing.assert_allclose(lrn.P, [[0.5, 0.5], [0.3 / 1.05, 0.75 / 1.05], [0.5, 0.5]])
    np.testing.assert_array_equal(lrn.elite_t, [1.0, 2.0])
    # A round slower than both elites keeps them: class 1 moves toward [0, 1] again.
    lrn._last = np.array([[0, 0, 0], [0, 0, 1], [1, 0, 1]])
    lrn.observe(None, [Measurement(5.0)] * 3)
    p1 = 0.5 * np.array([0.3, 0.75]) / 1.05 + 0.5 * np.array([0.0, 1.0])  # [.1429, .8571]
    p1[0] = 0.3
    np.testing.assert_allclose(lrn.P[1], p1 / p1.sum())
    np.testing.assert_array_equal(lrn.elite_t, [1.0, 2.0])


def test_learning_finds_the_balanced_split_and_frozen_does_not(tmp_path):
    # 12 independent ops of 1..12 s on a GPU (100x on the CPU) over 3 GPUs: the best step is
    # 78 / 3 = 26 s ({12, 11, 3}, {10, 9, 7}, {8, 6, 5, 4, 2, 1}). The start puts half of each
    # class's mass on GPU:0 (single_gpu, 78 s) and spreads the rest over all 4 devices.
    graph, cluster = parts_graph(12), cpu_and_gpus(3)
    best = {}
    for learning in (True, False):
        lrn, setup = learner_on(graph, cluster, tmp_path / str(learning), learning=learning)
        times = drive(lrn, setup, 40)  # 40 x 64 = 2,560 placements
        best[learning] = min(min(t) for t in times)
        if learning:
            assert lrn.P[:, 0].max() < 0.01  # the CPU (column 0) is left
    assert best[True] <= 27.0 < best[False]


def test_save_and_restore_continue_the_same_search(tmp_path):
    graph, cluster = parts_graph(6), cpu_and_gpus(2)
    a, setup = learner_on(graph, cluster, tmp_path / "a")
    drive(a, setup, 3)
    a.save()
    b, _ = learner_on(graph, cluster, tmp_path / "a")
    assert b.restore() == 3
    np.testing.assert_array_equal(b.P, a.P)
    np.testing.assert_array_equal(a.propose(64), b.propose(64))
    c, _ = learner_on(parts_graph(5), cluster, tmp_path / "a")
    with pytest.raises(InputError, match="learner.json: made for another fingerprint"):
        c.restore()


def test_restarts_around_the_best_once_settled(tmp_path):
    lrn, _ = learner_on(parts_graph(3), cpu_and_gpus(1), tmp_path, population=3, elite=2 / 3, rate=0.5, patience=2)
    rows = np.array([[0, 1, 1], [1, 1, 0], [1, 0, 0]])
    lrn._last = rows
    lrn.observe(None, [Measurement(2.0), Measurement(1.0), Measurement(3.0)])  # best so far: row 1, 1 s
    for _ in range(2):  # two rounds without anything under 1 s: patience 2 is spent after the second
        assert lrn.restarts == 0
        lrn._last = rows
        lrn.observe(None, [Measurement(4.0)] * 3)
    # Half uniform over [CPU, GPU], half row 1 ([GPU, GPU, CPU]); the elite starts empty again.
    assert lrn.restarts == 1 and len(lrn.elite_x) == 0
    np.testing.assert_allclose(lrn.P, [[0.25, 0.75], [0.25, 0.75], [0.75, 0.25]])
