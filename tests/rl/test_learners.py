"""The learner interface: every registered method stops at --max_placements, counts all it measures, and
the learned annealing methods learn (on hand-built graphs whose answers are worked out below)."""

import json
import os

import numpy as np
import pytest

from configs import common
from placer.core import cluster as cluster_lib
from placer.core import io as graph_io
from placer.core.cluster import Device
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure.simulator import Simulator
from placer.rl import learn_anneal, learner, methods, train_lib
from placer.rl import problem as problem_lib
from tests import binaries
from tests.cli import ROOT
from tests.rl.chains import MB, two_chains, write_gpu_cluster


def parts_graph(n: int = 12) -> OpGraph:
    """n independent ops costing 1, 2, ..., n s on a GPU and 100x that on the CPU, no edges."""
    costs = np.arange(1, n + 1, dtype=float)
    return OpGraph.create(
        f"parts{n}",
        [f"op{i}" for i in range(n)],
        ["Op"] * n,
        [],
        device_types=("CPU", "GPU"),
        compute_cost=np.stack([100 * costs, costs], axis=1),
    )


def cpu_and_gpus(gpus: int = 3):
    devs = [Device("/device:CPU:0", "CPU", 10**10)] + [Device(f"/device:GPU:{i}", "GPU", 10**10) for i in range(gpus)]
    return cluster_lib.make("cpu_gpus", devs, bandwidth=1e9, latency=0.0)


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
    graph_io.save(two_chains(100 * MB, np.ones(6)), str(d / "g.graph.json"))
    write_gpu_cluster(d / "gpus.json", "gpus", 16 << 30)
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


def test_cli_method_switch_and_max_placements(files, tmp_path):
    config = f"--config={os.path.join(ROOT, 'configs', 'common.py')}"
    common_args = [config, f"--graph={files / 'g.graph.json'}", f"--cluster={files / 'gpus.json'}"]
    code = run_cli([*common_args, f"--workdir={tmp_path / 'a'}", "--max_placements=50",
                    "--config.placer.train.method=learned_moves"])  # fmt: skip
    assert code == 0
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["method"] == "learned_moves" and summary["placements"] == 50
    # Resuming a finished search measures nothing more; asking for more continues to the new limit.
    assert run_cli([*common_args, f"--workdir={tmp_path / 'a'}", "--max_placements=80", "--resume",
                    "--config.placer.train.method=learned_moves"]) == 0  # fmt: skip
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["placements"] == 80
    assert run_cli([*common_args, f"--workdir={tmp_path / 'b'}", "--config.placer.train.method=nope"]) == 2
    assert run_cli([*common_args, f"--workdir={tmp_path / 'c'}", "--max_placements=-1"]) == 2


def test_learned_moves_stop_proposing_the_cpu(tmp_path):
    """On 12 independent ops from single_gpu (GPU:0), a move to the CPU costs 100x its GPU time and never
    helps, and a move to another GPU does whenever GPU:0 is the busiest: the learned proposals must send
    fewer moves to the CPU than uniform ones, which pick it for 1 of a class's 3 other devices (1/3)."""
    graph, cluster = parts_graph(), cpu_and_gpus()
    shares = {}
    for method in ("learned_moves", "learned_moves_off"):
        setup = setup_for(graph, cluster, method, str(tmp_path / method))
        obj = methods.get(method)(setup)
        drive(obj, setup, 20)
        cur = obj.anneal.cur
        cand = obj.model.sample(np.random.default_rng(5), cur, 3000)
        moved = cand != cur[None]
        shares[method] = float((cand[moved] == 0).mean())
    assert shares["learned_moves_off"] == pytest.approx(1 / 3, abs=0.03)
    # With the uniform mixture weight 0.25 the floor is 0.25 x 1/3; learning must take most of the way there.
    assert shares["learned_moves"] < 0.2


def test_cost_model_screens_out_worse_neighbours(tmp_path):
    """12 independent ops: the step time is the busiest device's load, which the features hold exactly, so
    after fitting, the screened neighbours of the same placement measure faster on average than uniform ones."""
    graph, cluster = parts_graph(), cpu_and_gpus()
    means = {}
    for method in ("cost_model", "cost_model_off"):
        setup = setup_for(graph, cluster, method, str(tmp_path / method))
        obj = methods.get(method)(setup)
        drive(obj, setup, 10)
        assert obj.model.fitted == (method == "cost_model")
        obj.anneal.temp = 1e-3  # the end of the schedule: the screen picks the predicted best
        cand = obj.moves(np.random.default_rng(1), obj.anneal.cur, 16)
        t = [m.step_time for m in Simulator(graph, cluster).measure([obj.space.placement(c, "x") for c in cand])]
        means[method] = float(np.mean(t))
    assert means["cost_model"] < means["cost_model_off"]


def test_loop_times_the_method_apart_from_measuring(tmp_path):
    """The method's own seconds (bench/budget.py's `method ms`) hold its propose and observe, not the measuring."""
    import time  # noqa: PLC0415

    class SlowSim(Simulator):
        def measure(self, placements):
            time.sleep(0.3)
            return super().measure(placements)

    class SlowAnnealing(learn_anneal.Plain):
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
    obj = learn_anneal.Plain(setup)
    while not obj.finished():
        drive(obj, setup, 1)
    ref = search.place_local_search(graph, cluster, seed=3, measurer=Simulator(graph, cluster), budget=200,
                                    groups=setup.groups)  # fmt: skip
    assert obj.anneal.best_t == pytest.approx(ref.metadata["step_time"])
    np.testing.assert_array_equal(obj.space.placement(obj.anneal.best, "x").devices, ref.devices)


def test_move_weights_learned_on_a_small_graph_help_on_a_larger_one(tmp_path):
    """Weights learned by learned_moves on 12 independent ops transfer to 24: every move to the CPU costs 100x the
    op's GPU time (op k: 100k s), so the first rounds on the larger graph measure faster on average when the
    proposals start from what was learned (CPU moves rarer) than from uniform ones (a third of them on the CPU)."""
    cluster = cpu_and_gpus()
    small = setup_for(parts_graph(12), cluster, "learned_moves", str(tmp_path / "small"), budget=400)
    trained = methods.get("learned_moves")(small)
    drive(trained, small, 24)
    trained.save()
    means = {}
    for name, init in (("pretrained", str(tmp_path / "small")), ("untrained", None)):
        setup = setup_for(parts_graph(24), cluster, "learned_moves", str(tmp_path / name), budget=400, seed=1)
        setup.init_from = init
        rounds = drive(methods.get("learned_moves")(setup), setup, 4)
        means[name] = float(np.mean([t for r in rounds[1:] for t in r]))  # round 0 measures the start alone
    assert means["pretrained"] < means["untrained"]
    with pytest.raises(InputError, match="cannot read"):
        bad = setup_for(parts_graph(24), cluster, "learned_moves", str(tmp_path / "bad"))
        bad.init_from = str(tmp_path / "missing")
        methods.get("learned_moves")(bad)
