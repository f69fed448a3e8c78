"""Cross-entropy or annealing (placer.rl.learn_adaptive): the first round's choice and the proposal table
worked by hand, what learning adds, resuming."""

import numpy as np
import pytest

from placer.core.measurement import Measurement
from placer.core.op_graph import OpGraph
from placer.rl import learn_adaptive
from tests.hand_graphs import cpu_and_gpus, parts_graph
from tests.rl.test_learners import drive, setup_for


def learner_on(graph, cluster, workdir, **kw):
    setup = setup_for(graph, cluster, "ce_or_annealing", str(workdir), budget=2000)
    return learn_adaptive.CrossEntropyOrAnnealing(setup, learn_adaptive.Config(**kw)), setup


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
    lrn.learn(cand, np.array([6.0, 4.0, np.inf]), cur, 5.0, cur)
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
    lrn.descending = False  # past the descent: moves come from Q alone
    moved = (lrn.moves(np.random.default_rng(0), cur, 4000) != cur).argmax(axis=1)
    np.testing.assert_allclose(np.bincount(moved, minlength=4) / 4000, [0.125, 0.125, 0.125, 0.625], atol=0.03)


def test_move_values_hold_each_one_class_neighbour_and_forget_the_class_that_moved(tmp_path):
    lrn, _ = learner_on(parts_graph(3), cpu_and_gpus(1), tmp_path)
    cur = np.array([1, 1, 1])
    cand = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 1]])
    # Annealing took the second neighbour (4 s against 5 s).
    lrn.learn(cand, np.array([6.0, 4.0, np.inf, 3.0]), cur, 5.0, new=cand[1])
    # Class 0 to device 0: (6 - 5) / 5 = +20%; class 2's failure counts as +100%; class 1 moved, so its row
    # (-20% for device 0) is forgotten; the two-class neighbour is no one move's value.
    np.testing.assert_allclose(lrn.V, [[0.2, 0.0], [0.0, 0.0], [1.0, 0.0]])
    lrn.learn(cand[:1], np.array([7.0]), cur, 5.0, new=cur)  # measured again: the latest value counts
    assert lrn.V[0, 0] == pytest.approx(0.4)


def test_the_search_descends_while_its_rounds_move_to_faster_placements(tmp_path):
    lrn, setup = learner_on(parts_graph(24), cpu_and_gpus(3), tmp_path)
    drive(lrn, setup, 1)  # single_gpu (300 s) and the probe; annealing starts there, as the first test shows
    assert lrn.branch == "annealing" and lrn.descending
    lrn.anneal.cur_t = 1.0  # no neighbour can be faster than 1 s: the round cannot move down
    lrn.anneal.temp = 1e-9  # nor, this cold, up
    drive(lrn, setup, 1)
    assert not lrn.descending and lrn.anneal.cur_t == 1.0


def test_compounds_take_every_helping_move_then_the_better_half(tmp_path):
    lrn, _ = learner_on(parts_graph(4), cpu_and_gpus(2), tmp_path)
    cur = np.array([1, 1, 1, 1])  # devices: 0 the CPU, 1 and 2 the GPUs
    lrn.V[0, 2], lrn.V[1, 0], lrn.V[1, 2], lrn.V[2, 2], lrn.V[3, 0] = -0.03, -0.01, -0.02, 0.1, -0.005
    lrn.V[3, 1] = -0.5  # a move to the current device is no move
    # Helping: class 0 (to 2, -3%), class 1 (to 2, -2%, its better move), class 3 (to 0, -0.5%); class 2 only hurts.
    all_of_them, better_half = lrn.compounds(cur)
    np.testing.assert_array_equal(all_of_them, [2, 2, 1, 0])
    np.testing.assert_array_equal(better_half, [2, 2, 1, 1])  # half of 3 rounds to 1: at least 2
    lrn.V[3, 0] = 0.0
    assert len(lrn.compounds(cur)) == 1  # two helping classes: both compounds are the same placement
    lrn.V[1] = 0.0
    assert lrn.compounds(cur) == []


def test_moves_measured_to_hurt_are_not_measured_again(tmp_path):
    lrn, _ = learner_on(parts_graph(6), cpu_and_gpus(1), tmp_path)
    cur = np.ones(6, np.int64)
    lrn.V[:4, 0] = 0.05  # classes 0 to 3 measured 5% slower on the CPU; 4 and 5 not measured
    for seed in range(5):
        cand = lrn.valued_moves(np.random.default_rng(seed), cur, 2)
        assert sorted((cand != cur).argmax(axis=1)) == [4, 5]  # odds e^-25 against each measured one
    lrn.learning = False  # the ablation draws from Q alone, as if nothing was measured
    moved = (lrn.moves(np.random.default_rng(0), cur, 600) != cur).argmax(axis=1)
    assert np.bincount(moved, minlength=6).min() > 60


def test_compounds_speed_up_the_descent(tmp_path):
    # 24 ops of 1..24 s on a GPU (100x slower on the CPU) and 3 GPUs: single_gpu takes 300 s and every move of
    # an op to another GPU helps until the loads even out (100 s each). One move per round takes 5 rounds to
    # shed at most 24 + 23 + 22 + 21 + 20 = 110 s off GPU 0 (190 s at best); the compounds move every op that
    # helped at once.
    best = {}
    for learning in (True, False):
        lrn, setup = learner_on(parts_graph(24), cpu_and_gpus(3), tmp_path / str(learning), learning=learning)
        drive(lrn, setup, 6)  # the first round picks annealing, as above; then 5 of annealing's
        best[learning] = lrn.anneal.best_t
    assert best[False] >= 190.0 and best[True] < 160.0, best


def test_learning_steers_moves_off_the_slow_cpu(tmp_path):
    # Annealing's branch on 24 ops 100x slower on the CPU: no move to the CPU is ever faster, so the learned
    # table's CPU share falls from a quarter; with learning off it stays there.
    share = {}
    for learning in (True, False):
        lrn, setup = learner_on(parts_graph(24), cpu_and_gpus(3), tmp_path / str(learning), learning=learning, rate=0.3)
        drive(lrn, setup, 20)
        assert lrn.branch == "annealing"
        share[learning] = lrn.Q[:, 0].mean()
    assert share[False] == pytest.approx(0.25) and share[True] < 0.15, share


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


@pytest.mark.parametrize(
    ("graph", "branch", "why"),
    [(parts_graph(24), "annealing", "at most 25% beat it"), (even_parts(12), "cross_entropy", "more than 25% beat")],
)
def test_the_first_round_logs_the_branch_it_took(tmp_path, graph, branch, why):
    """The two graphs of the tests above: single_gpu (300 s, then 78 s) against the 16 probe samples."""
    lines = []
    setup = setup_for(graph, cpu_and_gpus(3), "ce_or_annealing", str(tmp_path), budget=2000)
    setup.log = lines.append
    lrn = learn_adaptive.CrossEntropyOrAnnealing(setup)
    (first,) = drive(lrn, setup, 1)
    faster = int((np.array(first[1:]) < first[0]).sum())
    start = "300.0 s" if branch == "annealing" else "78.00 s"
    assert lines[0] == f"ce_or_annealing: {faster} of 16 cross-entropy samples beat its start single_gpu ({start})"
    assert lines[1].startswith(f"ce_or_annealing: branch {branch} ") and why in lines[1]
