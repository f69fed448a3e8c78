"""The learner interface: every registered method stops at --max_placements and counts all it measures; the
registry builds each method with its config; annealing is the baseline's (on hand-built graphs)."""

import json
import os

import numpy as np
import pytest

from configs import common
from placer.core import cluster as cluster_lib
from placer.core import io as graph_io
from placer.core.errors import InputError
from placer.core.placement import Placement
from placer.measure.simulator import Simulator
from placer.rl import learn_anneal, learn_ce, learner, methods, train_lib
from placer.rl import problem as problem_lib
from tests import binaries
from tests.cli import ROOT
from tests.hand_graphs import cpu_and_gpus, parts_graph, write_chains_and_gpus


def setup_for(graph, cluster, method: str, workdir: str, budget: int = 400, seed: int = 0) -> learner.Setup:
    placer = common.placer_config()
    placer.train.method = method
    problem, groups = problem_lib.make_problem(graph, cluster, placer)
    sim = train_lib.search_loop.CountingMeasurer(Simulator(graph, cluster))
    return learner.Setup(problem, groups, cluster, placer, sim, workdir, seed=seed, budget=budget)


def drive(method_obj, setup, rounds: int):
    """Runs `rounds` propose/measure/observe rounds by hand; returns the step times measured per round."""
    times = []
    for _ in range(rounds):
        devices = method_obj.propose(1 << 20)
        results = setup.measurer.measure([setup.problem.placement(d) for d in devices])
        method_obj.observe(devices, results)
        times.append([m.step_time for m in results])
    return times


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("learners")
    write_chains_and_gpus(d)
    return d


@pytest.mark.parametrize(
    "method", [pytest.param(m, marks=pytest.mark.slow) if m == "seq2seq" else m for m in methods.names()]
)
def test_every_method_stops_at_max_placements_counting_all_it_measured(files, tmp_path, method):
    c = common.get_config()
    c.cluster = str(files / "gpus.json")
    c.placer.train.method = method
    c.placer.policy.hidden_size = 16
    c.placer.train.warm_start, c.placer.train.warm_start_steps = "single_gpu,mincut", 10  # 2 baselines measured
    s = train_lib.run(
        c, workdir=str(tmp_path), steps=0, graph_path=str(files / "g.graph.json"), progress=False,
        log=lambda *_: None, max_placements=37,
    )  # fmt: skip
    # 37 is not a multiple of any batch (16) nor of the warm start's baselines: the loop cuts the last batch.
    assert s["placements"] == 37 and s["method"] == method
    best = json.loads((tmp_path / "best_placement.json").read_text())
    assert best["metadata"]["samples"] == 37 and best["metadata"]["learner"] == method
    # Two 3-op chains of 1 s ops, 100 MB edges at 100 MB/s: one GPU runs both in 6 s (where annealing and the
    # warm start begin), one chain per GPU in 3 s; the curve ends at the best, which the simulator confirms.
    assert 3.0 - 1e-9 <= s["best_step_time"] <= 6.0 + 1e-9 and s["curve"][-1][1] == s["best_step_time"]
    graph, cluster = graph_io.load(str(files / "g.graph.json")), cluster_lib.load(str(files / "gpus.json"))
    (m,) = Simulator(graph, cluster).measure([Placement.load(str(tmp_path / "best_placement.json"))])
    assert m.step_time == pytest.approx(s["best_step_time"])


def run_cli(argv) -> int:
    """placer-train in this process; returns its exit status."""
    return binaries.call("placer.train_main", "--noprogress", *argv)


def test_cli_method_switch_learning_off_and_max_placements(files, tmp_path):
    config = f"--config={os.path.join(ROOT, 'configs', 'common.py')}"
    common_args = [config, f"--graph={files / 'g.graph.json'}", f"--cluster={files / 'gpus.json'}"]
    off = ["--config.placer.train.method=cross_entropy", "--config.placer.train.learning=False"]
    assert run_cli([*common_args, f"--workdir={tmp_path / 'a'}", "--max_placements=50", *off]) == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["method"] == "cross_entropy" and summary["placements"] == 50 and summary["learning"] is False
    # Resuming a finished search measures nothing more; asking for more continues to the new limit.
    assert run_cli([*common_args, f"--workdir={tmp_path / 'a'}", "--max_placements=80", "--resume", *off]) == 0
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["placements"] == 80
    # The saved state is learning off's: resuming it with learning on is refused.
    on = off[:1]
    assert run_cli([*common_args, f"--workdir={tmp_path / 'a'}", "--max_placements=90", "--resume", *on]) == 2
    assert run_cli([*common_args, f"--workdir={tmp_path / 'b'}", "--config.placer.train.method=nope"]) == 2
    assert run_cli([*common_args, f"--workdir={tmp_path / 'c'}", "--max_placements=-1"]) == 2
    # Annealing learns nothing: turning its learning off is refused before any work.
    nothing = ["--config.placer.train.method=annealing", "--config.placer.train.learning=False"]
    assert run_cli([*common_args, f"--workdir={tmp_path / 'd'}", "--max_placements=50", *nothing]) == 2
    assert not (tmp_path / "d" / "summary.json").exists()


def test_registry_builds_each_method_with_its_config(tmp_path):
    graph, cluster = parts_graph(), cpu_and_gpus()
    setup = setup_for(graph, cluster, "cross_entropy", str(tmp_path))
    assert methods.build("cross_entropy", setup).learning is True
    setup.placer.train.learning = False
    lrn = methods.build("cross_entropy", setup)
    assert lrn.learning is False and lrn.population == learn_ce.Config().population
    assert methods.has_learning("ce_or_annealing") and not methods.has_learning("annealing")
    with pytest.raises(InputError, match="annealing learns nothing"):
        methods.build("annealing", setup)


def test_loop_times_the_method_apart_from_measuring(tmp_path):
    """The method's own seconds (bench/budget.py's `method ms`) hold its propose and observe, not the measuring."""
    import time  # noqa: PLC0415

    class SlowSim(Simulator):
        def measure(self, placements):
            time.sleep(0.3)
            return super().measure(placements)

    class SlowAnnealing(learn_anneal.Annealing):
        def propose(self, limit):
            time.sleep(0.02 if self.anneal.done else 0.5)  # the first round pays once, as tracing does
            return super().propose(limit)

    graph, cluster = parts_graph(6), cpu_and_gpus(1)
    setup = setup_for(graph, cluster, "annealing", str(tmp_path), budget=64)
    setup.measurer = train_lib.search_loop.CountingMeasurer(SlowSim(graph, cluster))
    loop = train_lib.search_loop.Loop(SlowAnnealing(setup), setup.problem, setup.measurer, str(tmp_path), 100, {})
    loop.run(train_lib.search_loop.Limits(placements=64))
    # single_gpu (0.5 s to propose), then rounds of 16, 16, 16 and 15 neighbours (20 ms each); 5 measurements of 0.3 s.
    assert loop.rounds == 5 and loop.measurer.seconds >= 1.5
    assert 0.58 <= loop.learner_seconds < 1.5
    first_s, first_n = loop.first_round
    assert first_n == 1 and 0.5 <= first_s < 0.9
    after = train_lib._after_first_round(loop)
    assert after["learner_seconds_first_round"] == first_s
    # 4 later rounds of 20 ms over 63 placements: about 1.3 ms each, far under the first round's 0.5 s.
    assert 0.08 / 63 <= after["learner_seconds_per_placement_after_first_round"] < 0.5 / 63


def test_annealing_from_the_warm_start_moves_around_it(tmp_path):
    # Ops of 1..6 s, 100x slower on the CPU, no edges, two GPUs. single_gpu: 21 s. The warm start alternates the
    # GPUs: 1 + 3 + 5 = 9 s on one, 2 + 4 + 6 = 12 s on the other, so it measures 12 s.
    graph, cluster = parts_graph(6), cpu_and_gpus(2)
    setup = setup_for(graph, cluster, "annealing_warm", str(tmp_path), budget=200)
    warm = Placement.from_ops(graph, np.array([1, 2, 1, 2, 1, 2]), cluster.device_names, method="mine")
    setup.warm = (12.0, warm)
    obj = learn_anneal.FromWarmStart(setup)
    assert setup.measurer.count == 1 and obj.anneal.cur_t == pytest.approx(12.0)
    t, devices = obj.best()
    assert t == pytest.approx(12.0) and (setup.problem.placement(devices).devices == warm.devices).all()
    # Its neighbours move one op of the warm start each, not of single_gpu.
    obj.propose(1 << 20)
    assert ((obj._last != obj.space.from_ops(warm.devices)).sum(axis=1) == 1).all()
    drive(obj, setup, 10)
    assert obj.anneal.best_t <= 12.0
    # Without a warm start it is plain annealing from single_gpu.
    setup.warm = None
    assert learn_anneal.FromWarmStart(setup).best() is None


def test_annealing_learner_is_baselines_local_search(tmp_path):
    """The loop's "annealing" is baselines.search's: same seed, same budget, same best placement."""
    from baselines import search  # noqa: PLC0415

    graph, cluster = parts_graph(), cpu_and_gpus()
    setup = setup_for(graph, cluster, "annealing", str(tmp_path), budget=200, seed=3)
    obj = learn_anneal.Annealing(setup)
    while not obj.finished():
        drive(obj, setup, 1)
    ref = search.place_local_search(graph, cluster, seed=3, measurer=Simulator(graph, cluster), budget=200,
                                    groups=setup.groups)  # fmt: skip
    assert obj.anneal.best_t == pytest.approx(ref.metadata["step_time"])
    np.testing.assert_array_equal(obj.space.placement(obj.anneal.best, "x").devices, ref.devices)
