"""The pretrained graph policy: it learns across graphs, round-trips through disk, and refuses what it cannot read."""

import json
import os

import numpy as np
import pytest

from configs import pretrain
from placer.core import cluster as cluster_lib
from placer.core import generated
from placer.core import io as graph_io
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.rl import graph_features, graph_policy, place_lib, pretrain_lib, transfer_lib
from tests import binaries


def tiny_config(graphs, held_out="gen:layered:16:50", clusters="k80x2"):
    c = pretrain.get_config("small")
    c.pretrain.graphs = graphs
    c.pretrain.held_out = held_out
    c.pretrain.clusters = clusters
    c.pretrain.samples_per_step = 8
    c.pretrain.checkpoint_every = 1000
    c.placer.policy.gnn_hidden_size = 32
    c.placer.policy.gnn_layers = 2
    return c


def quality(policy, graph, cluster, config):
    """(greedy step time, mean step time of 16 samples), seconds."""
    r = place_lib.place(policy, graph, cluster, config.placer, samples=0, seed=0, source="test")
    task = r["task"]
    acts = graph_policy.sample_numpy(policy, task.ctx, task.mask_bias, task.problem.leader, 16, (0, 1))
    times = [m.step_time for m in r["measurer"].measure(task.placements(acts))]
    return r["greedy_step_time"], float(np.mean(times))


@pytest.mark.slow
def test_pretrained_policy_places_an_unseen_graph_better_than_an_untrained_one(tmp_path):
    config = tiny_config(",".join(f"gen:layered:16:{s}" for s in range(4)))
    pretrain_lib.run(config, workdir=str(tmp_path), steps=150, seed=0, progress=False, log=lambda *_: None)
    trained, info = transfer_lib.load_policy(str(tmp_path))
    untrained = graph_policy.build(config.placer.policy, seed=0)
    assert "gen:layered:16:50" in info["held_out"] and "gen:layered:16:50" not in info["train"]
    k80x2 = cluster_lib.load("k80x2")
    unseen = generated.generate("layered", 16, 50)
    t_greedy, t_mean = quality(trained, unseen, k80x2, config)
    u_greedy, u_mean = quality(untrained, unseen, k80x2, config)
    assert t_greedy < u_greedy and t_mean < u_mean


def test_one_policy_serves_every_device_count_and_ignores_op_names():
    config = tiny_config("gen:chain:16:0")
    policy = graph_policy.build(config.placer.policy, seed=0)
    graph = generated.generate("chain", 20, 1)
    for name, d in (("k80x2", 3), ("k80x4", 5), ("h100x8", 9)):
        cluster = cluster_lib.load(name)
        assert cluster.num_devices == d
        task = transfer_lib.make_task(graph, cluster, config.placer, None, "test")
        assert policy.logits(*task.ctx).shape[1] == d
    # The same graph with other op names reads the same inputs.
    renamed = OpGraph.create(
        graph.name,
        [f"x/{i}" for i in range(graph.num_ops)],
        list(graph.types),
        [
            (f"x/{s}", f"x/{t}", int(b))
            for s, t, b in zip(graph.edge_src, graph.edge_dst, graph.edge_bytes, strict=True)
        ],
        output_bytes=graph.output_bytes,
        device_types=graph.device_types,
        compute_cost=graph.compute_cost,
    )
    k80x4 = cluster_lib.load("k80x4")
    a = transfer_lib.make_task(graph, k80x4, config.placer, None, "a").inputs
    b = transfer_lib.make_task(renamed, k80x4, config.placer, None, "b").inputs
    np.testing.assert_array_equal(a.groups, b.groups)
    np.testing.assert_array_equal(a.devices, b.devices)


@pytest.mark.slow
def test_save_load_place_round_trip(tmp_path):
    config = tiny_config("gen:chain:16:0,gen:fanin:16:0")
    pretrain_lib.run(config, workdir=str(tmp_path), steps=3, seed=0, progress=False, log=lambda *_: None)
    with open(tmp_path / "policy.json") as f:
        info = json.load(f)
    assert info["steps"] == 3 and info["encoder"] == "gnn" and info["features"] == graph_features.layout()
    # Resuming continues from the saved step; without --resume the folder is refused.
    assert (
        pretrain_lib.run(config, workdir=str(tmp_path), steps=5, resume=True, progress=False, log=lambda *_: None)[
            "steps"
        ]
        == 5
    )
    with pytest.raises(InputError, match="holds a pretrained policy"):
        pretrain_lib.run(config, workdir=str(tmp_path), steps=6, progress=False, log=lambda *_: None)
    a, _ = transfer_lib.load_policy(str(tmp_path))
    b, _ = transfer_lib.load_policy(str(tmp_path))
    graph = generated.generate("layered", 20, 7)
    k80x4 = cluster_lib.load("k80x4")
    task = transfer_lib.make_task(graph, k80x4, config.placer, None, "test")
    np.testing.assert_allclose(a.logits(*task.ctx).numpy(), b.logits(*task.ctx).numpy())
    out = tmp_path / "p.json"
    graph_io.save(graph, str(tmp_path / "g.graph.json"))
    r = binaries.run(
        "placer.place_main",
        f"--policy={tmp_path}",
        f"--graph={tmp_path / 'g.graph.json'}",
        "--cluster=k80x4",
        "--method=zero_shot",
        "--samples=8",
        f"--out={out}",
    )
    assert r.returncode == 0, r.stderr
    assert "single_gpu" in r.stdout and "pretrained (greedy)" in r.stdout
    placement = Placement.load(str(out))
    assert placement.fingerprint == graph.fingerprint() and len(placement.op_names) == graph.num_ops
    assert placement.metadata["method"] == "pretrained_gnn"


def test_zero_shot_budget_and_chunks():
    config = tiny_config("gen:chain:16:0")
    policy = graph_policy.build(config.placer.policy, seed=0)
    graph = generated.generate("layered", 40, 3)
    k80x4 = cluster_lib.load("k80x4")
    n = place_lib.CHUNK + 9  # a full chunk and a partial one

    def run(**kw):
        return place_lib.place(policy, graph, k80x4, config.placer, samples=n, seed=0, source="test", **kw)

    full = run()
    assert full["samples"] == n
    # The result is the fastest of the greedy placement and the chunks, each drawn with seed (0, 1 + i).
    task = full["task"]
    leader = task.problem.leader
    drawn = np.concatenate([
        graph_policy.sample_numpy(policy, task.ctx, task.mask_bias, leader, 1, (0, 0), greedy=True),
        graph_policy.sample_numpy(policy, task.ctx, task.mask_bias, leader, place_lib.CHUNK, (0, 1)),
        graph_policy.sample_numpy(policy, task.ctx, task.mask_bias, leader, 9, (0, 2)),
    ])  # fmt: skip
    times = [m.step_time for m in full["measurer"].measure(task.placements(drawn))]
    assert full["step_time"] == pytest.approx(min(times)) and full["greedy_step_time"] == pytest.approx(times[0])
    assert min(times[1:]) < times[0]  # the samples found something faster than the greedy placement
    # A spent budget starts no chunk: the greedy placement alone.
    none = run(max_seconds=0.0)
    assert none["samples"] == 0 and none["step_time"] == pytest.approx(times[0])
    assert run(max_seconds=600.0)["step_time"] == pytest.approx(full["step_time"])


def cpu_only_graph():
    return OpGraph.create(
        "cpu_only", ["a", "b"], ["MatMul", "Add"], [("a", "b", 8)], device_types=("CPU",), compute_cost=[[1e-3], [1e-3]]
    )


@pytest.mark.slow
def test_refusals(tmp_path):
    config = tiny_config("gen:chain:16:0")
    with pytest.raises(InputError, match="both a training graph and held out"):
        pretrain_lib.check_lists(tiny_config("gen:chain:16:0", held_out="gen:chain:16:0").pretrain)
    with pytest.raises(InputError, match="test.json: graph 'cpu_only' has no GPU costs"):
        transfer_lib.make_task(cpu_only_graph(), cluster_lib.load("k80x2"), config.placer, None, "test.json")
    with pytest.raises(InputError, match="missing; not a policy folder"):
        transfer_lib.load_policy(str(tmp_path))
    pretrain_lib.run(config, workdir=str(tmp_path), steps=1, seed=0, progress=False, log=lambda *_: None)
    with open(tmp_path / "policy.json") as f:
        info = json.load(f)
    info["features"]["type_buckets"] = 32
    with open(tmp_path / "policy.json", "w") as f:
        json.dump(info, f)
    with pytest.raises(InputError, match="feature layout type_buckets=32"):
        transfer_lib.load_policy(str(tmp_path))


@pytest.mark.slow
def test_cli_refuses_a_graph_without_gpu_costs_in_one_line(tmp_path):
    config = tiny_config("gen:chain:16:0")
    policy = tmp_path / "policy"
    pretrain_lib.run(config, workdir=str(policy), steps=1, seed=0, progress=False, log=lambda *_: None)
    graph_io.save(cpu_only_graph(), str(tmp_path / "cpu.graph.json"))
    out = tmp_path / "p.json"
    r = binaries.run(
        "placer.place_main",
        f"--policy={policy}",
        f"--graph={tmp_path / 'cpu.graph.json'}",
        "--cluster=k80x2",
        f"--out={out}",
    )
    assert r.returncode == 2
    lines = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "has no GPU costs" in lines[0] and "Traceback" not in r.stderr
    assert not os.path.exists(out)


@pytest.mark.slow
def test_train_fine_tunes_from_a_pretrained_policy(tmp_path):
    from placer.rl import train_lib  # noqa: PLC0415

    config = tiny_config("gen:chain:16:0")
    pretrain_lib.run(config, workdir=str(tmp_path / "policy"), steps=2, seed=0, progress=False, log=lambda *_: None)
    graph_io.save(generated.generate("chain", 20, 9), str(tmp_path / "g.graph.json"))
    config.placer.train.warm_start = ""
    config.placer.train.method = "seq2seq"  # fine-tuned by REINFORCE
    summary = train_lib.run(
        config,
        workdir=str(tmp_path / "run"),
        steps=2,
        graph_path=str(tmp_path / "g.graph.json"),
        progress=False,
        log=lambda *_: None,
        init_from=str(tmp_path / "policy"),
    )
    assert summary["policy"] == graph_policy.NAME and summary["encoder"] == "gnn" and summary["steps"] == 2
    assert summary["best_step_time"] > 0
    with pytest.raises(InputError, match="missing; not a policy folder"):
        train_lib.run(
            config,
            workdir=str(tmp_path / "run2"),
            steps=2,
            graph_path=str(tmp_path / "g.graph.json"),
            progress=False,
            log=lambda *_: None,
            init_from=str(tmp_path),
        )
