"""Cross-entropy or annealing (placer.rl.learn_adaptive): the first round's choice and the proposal table
worked by hand, what learning adds, resuming."""

import numpy as np
import pytest

from placer.core.measurement import Measurement
from placer.core.op_graph import OpGraph
from placer.rl import learn_adaptive
from tests.rl.test_learners import cpu_and_gpus, drive, parts_graph, setup_for


def learner_on(graph, cluster, workdir, **kw):
    setup = setup_for(graph, cluster, "ce_or_annealing", str(workdir), budget=2000)
    return learn_adaptive.CrossEntropyOrAnnealing(setup, **kw), setup


def even_parts(n: int) -> OpGraph:
    """n independent ops of 1, 2, ..., n s, as fast on the CPU as on a GPU."""
    costs = np.arange(1, n + 1, dtype=float)
    return OpGraph.create(
        f"even{n}", [f"op{i}" for i in range(n)], ["Op"] * n, [], device_types=("CPU", "GPU"),
        compute_cost=np.stack([costs, costs], axis=1),
    )  # fmt: skip


def test_first_round_picks_annealing_where_single_gpu_beats_the_spread_start(tmp_path):
    # 24 ops of 1..24 s, 100x slower on the CPU. single_gpu: 300 s. A sample of the cross-entropy start puts each
    # op on the CPU with probability 1/2 x 1/4: one op there already costs >= 100 s, and a sample misses the CPU
    # with probability (7/8)^24 = 0.04, so far fewer than a quarter of the 16 samples are faster than single_gpu.
    lrn, setup = learner_on(parts_graph(24), cpu_and_gpus(3), tmp_path)
    (first,) = drive(lrn, setup, 1)
    assert len(first) == 17 and first[0] == 300.0 and (np.array(first[1:]) < 300.0).mean() <= 0.25
    assert lrn.branch == "annealing" and lrn.anneal.cur_t == 300.0
    # The rest are annealing's neighbours of single_gpu: one op moved each.
    devices = lrn.propose(1 << 20)
    assert len(devices) == 16 and ((devices != lrn.start).sum(axis=1) == 1).all()


def test_first_round_keeps_cross_entropy_where_spreading_pays(tmp_path):
    # 12 ops as fast on the CPU: single_gpu (78 s) is the slowest placement there is, every sample that uses two
    # devices is faster, so the search goes on as cross-entropy with the probe as its first round.
    lrn, setup = learner_on(even_parts(12), cpu_and_gpus(3), tmp_path)
    (first,) = drive(lrn, setup, 1)
    assert np.median(first[1:]) < first[0] == 78.0
    assert lrn.branch == "cross_entropy" and lrn.ce.rounds == 1 and len(lrn.ce.elite_t) == 6  # 10% of 64
    assert len(lrn.propose(1 << 20)) == 64


def test_proposal_table_moves_toward_improving_moves(tmp_path):
    lrn, _ = learner_on(parts_graph(3), cpu_and_gpus(1), tmp_path, rate=0.5)
    lrn.Q = np.full((3, 2), 0.5)
    cur = np.array([1, 1, 1])
    cand = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    # Only the second neighbour (class 1 to device 0) is faster than the current 5 s: Q[1] = .5 Q[1] + .5 [1, 0].
    lrn.learn(cand, np.array([6.0, 4.0, np.inf]), cur, 5.0)
    np.testing.assert_allclose(lrn.Q, [[0.5, 0.5], [0.75, 0.25], [0.5, 0.5]])


def test_moves_favour_the_classes_the_table_would_move(tmp_path):
    lrn, _ = learner_on(parts_graph(4), cpu_and_gpus(1), tmp_path)
    cur = np.array([1, 1, 1, 1])
    # Uniform Q: as much mass off the current device for every class, so the draw is uniform.
    np.testing.assert_allclose(lrn.class_odds(cur), 0.25)
    # Q puts all of classes 0 to 2 on their current device and half of class 3 off it: class 3 takes the whole
    # Q half, 1/2 + 1/2 x 1/4 = 5/8, the others the uniform half's 1/8 each.
    lrn.Q = np.array([[0.0, 1.0]] * 3 + [[0.5, 0.5]])
    np.testing.assert_allclose(lrn.class_odds(cur), [0.125, 0.125, 0.125, 0.625])
    moved = (lrn.moves(np.random.default_rng(0), cur, 4000) != cur).argmax(axis=1)
    np.testing.assert_allclose(np.bincount(moved, minlength=4) / 4000, [0.125, 0.125, 0.125, 0.625], atol=0.03)


def test_learning_steers_moves_off_the_slow_cpu(tmp_path):
    # Annealing's branch on 24 ops 100x slower on the CPU: no move to the CPU is ever faster, so the learned
    # table's CPU share falls from a quarter; with learning off it stays there.
    share = {}
    for learning in (True, False):
        lrn, setup = learner_on(parts_graph(24), cpu_and_gpus(3), tmp_path / str(learning), learning=learning, rate=0.3)
        drive(lrn, setup, 20)
        assert lrn.branch == "annealing"
        share[learning] = lrn.Q[:, 0].mean()
    assert share[False] == pytest.approx(0.25) and share[True] < 0.1, share


def test_save_and_restore_continue_the_same_search(tmp_path):
    branches = []
    for graph in (parts_graph(24), even_parts(6)):  # one search per branch (the first two tests)
        a, setup = learner_on(graph, cpu_and_gpus(2), tmp_path / graph.name)
        drive(a, setup, 3)
        a.save()
        b, _ = learner_on(graph, cpu_and_gpus(2), tmp_path / graph.name)
        assert b.restore() == 3 and b.branch == a.branch
        np.testing.assert_array_equal(a.propose(1 << 20), b.propose(1 << 20))
        branches.append(a.branch)
    assert branches == ["annealing", "cross_entropy"]


def test_a_failed_single_gpu_keeps_cross_entropy(tmp_path):
    lrn, _ = learner_on(parts_graph(3), cpu_and_gpus(1), tmp_path)
    devices = lrn.propose(1 << 20)
    lrn.observe(devices, [Measurement(np.inf, failure="oom")] + [Measurement(500.0)] * 8)
    assert lrn.branch == "cross_entropy"


@pytest.mark.slow
def test_a_pretrained_policy_starts_the_move_table(tmp_path):
    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core import generated  # noqa: PLC0415
    from placer.rl import pretrain_lib  # noqa: PLC0415 (TensorFlow)
    from tests.rl.test_transfer import tiny_config  # noqa: PLC0415

    policy = str(tmp_path / "policy")
    pretrain_lib.run(
        tiny_config("gen:chain:16:0"), workdir=policy, steps=2, seed=0, progress=False, log=lambda *_: None
    )
    graph, cluster = generated.generate("chain", 20, 9), cluster_lib.load("k80x2")
    uniform = learner_on(graph, cluster, tmp_path / "scratch")[0].Q
    setup = setup_for(graph, cluster, "ce_or_annealing", str(tmp_path / "run"), budget=2000)
    setup.init_from = policy
    lrn = learn_adaptive.CrossEntropyOrAnnealing(setup)
    # The policy's device shares over 256 of its placements on this graph, which cross-entropy starts from too.
    np.testing.assert_allclose(lrn.Q, lrn.ce.start_table)
    np.testing.assert_allclose(lrn.Q.sum(axis=1), 1.0)
    assert not np.allclose(lrn.Q, uniform) and np.allclose(uniform, uniform[:, :1])
