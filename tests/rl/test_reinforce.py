"""The REINFORCE trainer on hand-built graphs whose best placement is known."""

import json
import os

import numpy as np
import pytest

from configs.common import placer_config  # noqa: E402
from placer.core import cluster as cluster_lib  # noqa: E402
from placer.core.errors import InputError  # noqa: E402
from placer.core.placement import Placement  # noqa: E402
from placer.measure.simulator import Simulator  # noqa: E402
from placer.rl import learn_seq2seq, rl_math, search_loop  # noqa: E402
from placer.rl import problem as problem_lib  # noqa: E402
from placer.rl.reinforce import Trainer, seed_everything, use_xla  # noqa: E402
from tests.hand_graphs import MB, chains_and_gpus  # noqa: E402


def config(steps_between_checkpoints=1000):
    c = placer_config()
    c.grouping.merge_single_consumer = False  # one group per op: the policy must learn the chains
    c.policy.hidden_size = 32
    c.train.learning_rate = 0.02
    c.train.warm_start = ""
    c.policy.logits_noise_steps = 20  # a short search: noise for its first steps only
    c.train.entropy_decay_steps = 100
    c.train.checkpoint_every = steps_between_checkpoints
    return c


def search(problem, cluster, measurer, c, workdir, steps, seed=0):
    """(the Trainer, the last step's statistics) of `steps` steps of the search loop from a uniform policy."""
    loop = learn_seq2seq.loop_for(problem, cluster, measurer, c, str(workdir), seed=seed)
    return loop.learner.trainer, loop.run(search_loop.Limits(rounds=steps))


def test_rewards_baseline_and_masks_by_hand():
    r = rl_math.rewards(np.array([4.0, np.inf, 9.0]), np.array([False, True, False]), 100.0)
    np.testing.assert_allclose(r, [-2.0, -10.0, -3.0])
    assert rl_math.update_baseline(None, np.array([-2.0, -4.0]), 0.9) == -3.0
    assert rl_math.update_baseline(-3.0, np.array([-1.0]), 0.9) == pytest.approx(-2.8)
    np.testing.assert_array_equal(rl_math.update_mask([True, False], 5, 10), [True, True])
    np.testing.assert_array_equal(rl_math.update_mask([True, False], 10, 10), [False, True])


def test_schedules_normalisation_and_elites_by_hand():
    assert rl_math.scheduled("linear", 0.01, 0.0, 100, 50) == pytest.approx(0.005)
    assert rl_math.scheduled("linear", 0.01, 0.0, 100, 500) == 0.0
    assert rl_math.scheduled("exponential", 10.0, 1.0, 2, 1) == pytest.approx(10**0.5)
    assert rl_math.scheduled("constant", 3.0, 1.0, 10, 5) == 3.0
    with pytest.raises(ValueError, match="cosine"):
        rl_math.scheduled("cosine", 1.0, 0.0, 10, 1)
    a = rl_math.normalise_advantages(np.array([1.0, 3.0, 100.0]), np.array([True, True, False]))
    np.testing.assert_allclose(a, [-1.0, 1.0, 0.0])
    e = rl_math.elite_mask(np.array([-3.0, -1.0, -2.0, -0.5]), np.array([True, True, True, False]), 0.5)
    np.testing.assert_array_equal(e, [False, True, True, False])


def test_self_imitation_memory_keeps_the_best_distinct_placements_by_hand():
    mem = np.array([[0, 1], [1, 1]])
    batch = np.array([[0, 0], [0, 1], [1, 0], [1, 0]])
    # [0, 1] comes back with a better reward: one copy stays, the memory's (ties keep the memory's).
    a, r = rl_math.merge_memory(mem, np.array([-2.0, -4.0]), batch, np.array([-5.0, -2.0, -3.0, -1.0]), 3)
    np.testing.assert_array_equal(a, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(r, [-1.0, -2.0, -4.0])
    a, r = rl_math.merge_memory(np.zeros((0, 2)), np.zeros(0), batch[:1], np.array([-np.inf]), 3)
    assert a.shape == (0, 2) and r.size == 0, "a sample without a finite reward is never remembered"


@pytest.mark.slow
def test_training_from_scratch_finds_one_chain_per_device(tmp_path):
    seed_everything(0)  # as placer-train does: the weights must not depend on what ran before
    graph, cluster = chains_and_gpus()
    c = config()
    problem, groups = problem_lib.make_problem(graph, cluster, c)
    assert groups.num_groups == 6
    trainer = Trainer(problem, Simulator(graph, cluster), c, str(tmp_path), seed=0)
    means = []
    while len(means) < 150 and not (len(means) > 10 and max(means[-10:]) == 3.0):
        means.append(trainer.train_step()["mean_step_time"])
    assert max(means[-10:]) == pytest.approx(3.0), "every sample of the last 10 steps is optimal"
    assert float(trainer.best_time.numpy()) == pytest.approx(3.0)
    best = trainer.best_placement().devices
    assert len(set(best[:3])) == 1 and len(set(best[3:])) == 1 and best[0] != best[3]
    # The policy itself, not just the record, has learned it: greedy decoding is optimal.
    greedy = trainer.greedy_placement()
    assert Simulator(graph, cluster).measure([greedy])[0].step_time == pytest.approx(3.0)


def test_xla_compiles_the_update_of_large_problems_only():
    # "auto": grouped NMT (323 groups x 128 units) compiles, a tiny variant (256 x 16) does not.
    assert use_xla("auto", 323, 128) and not use_xla("auto", 256, 16)
    assert use_xla("auto", 128, 128) and not use_xla("auto", 127, 128)  # 16,384 = 128 x 128
    assert use_xla("on", 6, 16) and not use_xla("off", 323, 128)
    with pytest.raises(InputError, match="jit_compile: unknown value 'always'"):
        use_xla("always", 6, 16)


@pytest.mark.slow
def test_the_xla_update_learns_the_same_placement_and_repeats_itself(tmp_path):
    graph, cluster = chains_and_gpus()
    c = config()
    c.train.jit_compile = "on"
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    seed_everything(0)
    trainer = Trainer(problem, Simulator(graph, cluster), c, str(tmp_path), seed=0)
    assert trainer.uses_xla()
    trainer.save()  # step 0: the initial weights and optimizer state
    first = [trainer.train_step()["mean_step_time"] for _ in range(15)]  # compiling takes most
    learned = trainer.greedy_placement()
    # Back at step 0, the compiled update takes the same steps again: the same seed, the same steps.
    assert trainer.restore(0) == 0
    assert [trainer.train_step()["mean_step_time"] for _ in range(5)] == first[:5]
    # One chain per device, as without XLA: the policy's greedy placement has learned it.
    assert Simulator(graph, cluster).measure([learned])[0].step_time == pytest.approx(3.0)


@pytest.mark.slow
def test_warm_start_records_the_imitated_placement_at_step_0(tmp_path):
    graph, cluster = chains_and_gpus()
    c = config()
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    trainer = Trainer(problem, Simulator(graph, cluster), c, str(tmp_path), seed=0)
    target = np.array([0, 0, 0, 1, 1, 1], np.int32)
    nll, steps, equal = trainer.warm_start(target, 300, 0.02, step_time=3.0)
    assert equal and steps <= 300
    np.testing.assert_array_equal(trainer.greedy_placement().devices, target[problem.op_group])
    assert int(trainer.step.numpy()) == 0
    best = trainer.best_placement()
    assert best.metadata["step_time"] == 3.0 and best.metadata["step"] == 0
    np.testing.assert_array_equal(best.devices, target[problem.op_group])


class Interrupt(Exception):
    pass


class _KilledAfter:
    """Simulates, and raises Interrupt on measuring round `rounds + 1` (a search killed after that many)."""

    def __init__(self, graph, cluster, rounds):
        self.sim, self.left = Simulator(graph, cluster), rounds

    def measure(self, placements):
        if self.left == 0:
            raise Interrupt
        self.left -= 1
        return self.sim.measure(placements)


@pytest.mark.slow
def test_resume_continues_from_saved_step_and_best_placement(tmp_path):
    graph, cluster = chains_and_gpus()
    c = config(steps_between_checkpoints=10)
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    loop = learn_seq2seq.loop_for(problem, cluster, _KilledAfter(graph, cluster, 15), c, str(tmp_path), seed=1)
    with pytest.raises(Interrupt):  # killed after step 15, five steps past its last checkpoint
        loop.run(search_loop.Limits(rounds=100))
    saved = Placement.load(str(tmp_path / "best_placement.json"))
    assert saved.metadata["step"] == 10
    # The placements its search measured, which placer-compare gives the same-budget searches.
    assert saved.metadata["samples"] == 10 * c.train.samples_per_step

    loop = learn_seq2seq.loop_for(problem, cluster, Simulator(graph, cluster), c, str(tmp_path), seed=1)
    again = loop.learner.trainer
    assert loop.restore() == 10
    assert float(again.best_time.numpy()) == saved.metadata["step_time"]
    np.testing.assert_array_equal(again.best_placement().devices, saved.devices)
    loop.run(search_loop.Limits(rounds=20))
    assert int(again.step.numpy()) == 20
    assert len(json.load(open(tmp_path / "history.json"))) == 20
    # Counted across the restart: 20 steps in all, not the 10 of this process.
    assert again.best_placement().metadata["samples"] == 20 * c.train.samples_per_step


@pytest.mark.slow
def test_self_imitation_memory_holds_the_best_placements_measured_and_survives_a_restart(tmp_path):
    graph, cluster = chains_and_gpus()
    c = config(steps_between_checkpoints=5)
    c.train.elite_memory = 3
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    sim = Simulator(graph, cluster)
    trainer = search(problem, cluster, sim, c, tmp_path, 5, seed=2)[0]
    memory, rewards = trainer.memory_devices.numpy(), trainer.memory_rewards.numpy()
    assert len({row.tobytes() for row in memory}) == 3 and np.all(np.diff(rewards) <= 0)
    # The rewards are the remembered placements' own -sqrt(step time), the first one the best so far.
    times = [m.step_time for m in sim.measure([problem.placement(row) for row in memory])]
    np.testing.assert_allclose(rewards, -np.sqrt(times))
    assert times[0] == pytest.approx(float(trainer.best_time.numpy()))
    again = Trainer(problem, sim, c, str(tmp_path), seed=2)
    assert again.restore() == 5
    np.testing.assert_array_equal(again.memory_devices.numpy(), memory)


@pytest.mark.slow
def test_resume_refuses_another_graph(tmp_path):
    graph, cluster = chains_and_gpus()
    c = config(steps_between_checkpoints=5)
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    search(problem, cluster, Simulator(graph, cluster), c, tmp_path, 5)
    other, _ = chains_and_gpus(length=4)
    problem2, _ = problem_lib.make_problem(other, cluster, c)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(InputError, match="fingerprint"):
        Trainer(problem2, Simulator(other, cluster), c, str(tmp_path)).restore()
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.slow
def test_every_sample_failing_ends_cleanly(tmp_path):
    graph, _ = chains_and_gpus()
    tiny = [cluster_lib.Device(f"/device:GPU:{i}", "GPU", 1 * MB) for i in range(2)]
    cluster = cluster_lib.make("tiny_gpus", tiny, bandwidth=100 * MB)
    c = config()
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    trainer, stats = search(problem, cluster, Simulator(graph, cluster), c, tmp_path, 5)
    assert stats["failed_fraction"] == 1.0
    assert stats["failures"] == ["oom"]
    assert trainer.best_placement() is None
    trainer.save()
    assert not os.path.exists(tmp_path / "best_placement.json")


class _FlagsA0OnSecondGpu:
    """Simulates, but reports placements with op a0 on GPU:1 ten times too fast and flagged."""

    def __init__(self, graph, cluster):
        self.sim = Simulator(graph, cluster)
        self.flagged = 0

    def measure(self, placements):
        import dataclasses  # noqa: PLC0415

        out = []
        for p, m in zip(placements, self.sim.measure(placements), strict=True):
            if p.devices[list(p.op_names).index("a0")] == 1:
                m = dataclasses.replace(m, step_time=m.step_time / 10, flag="op 'a0' costs less than unplaced")
                self.flagged += 1
            out.append(m)
        return out


@pytest.mark.slow
def test_flagged_measurements_never_become_the_best(tmp_path):
    graph, cluster = chains_and_gpus()
    c = config()
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    measurer = _FlagsA0OnSecondGpu(graph, cluster)
    trainer, stats = search(problem, cluster, measurer, c, tmp_path, 3)
    assert measurer.flagged > 0
    assert stats["min_step_time"] < 3.0  # a flagged one beat the true optimum of 3 s...
    best = trainer.best_placement()
    assert best is not None and best.devices[list(best.op_names).index("a0")] == 0  # ...and was not kept
    assert stats["best_step_time"] >= 3.0


@pytest.mark.slow
def test_warm_start_from_groups_that_mix_the_baselines_devices_records_what_it_imitates(tmp_path):
    from placer.rl import train_lib  # noqa: PLC0415

    graph, cluster = chains_and_gpus()
    c = config()
    c.grouping.merge_single_consumer = True
    c.grouping.target_groups = 2
    c.grouping.min_groups = 2
    problem, groups = problem_lib.make_problem(graph, cluster, c)  # no colours: one group per chain
    np.testing.assert_array_equal(groups.op_group, [0, 0, 0, 1, 1, 1])
    # The baseline cuts chain a after a1: a0, a1 on GPU 0 (0-2 s), the transfer (2-3 s), a2 on GPU 1
    # after b0..b2 (3-4 s): 4 s.
    baseline = Placement.from_ops(graph, np.array([0, 0, 1, 1, 1, 1]), cluster.device_names, method="cut")
    given = Simulator(graph, cluster).measure([baseline])[0].step_time
    assert given == pytest.approx(4.0)
    trainer = Trainer(problem, Simulator(graph, cluster), c, str(tmp_path), seed=0)
    info = train_lib.apply_warm_start(trainer, problem, (given, baseline), c.train, lambda *_: None)
    # Each group imitates its majority device, a different (here better) placement, measured as such.
    assert info["step_time"] == pytest.approx(3.0)
    best = trainer.best_placement()
    np.testing.assert_array_equal(best.devices, [0, 0, 0, 1, 1, 1])
    assert best.metadata["step_time"] == pytest.approx(3.0)
