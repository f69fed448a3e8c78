"""placer-train end to end on a hand-built graph file, and its bad-input errors.

placer-train runs in the test process (tests/binaries.py). That the same
seed gives the same placement in a fresh process, through the installed
console script, is checked by tests/placer/test_readme_workflow.py.
"""

import json
import os

import numpy as np
import pytest

from placer.core import io as graph_io
from placer.core.op_graph import OpGraph
from tests import binaries
from tests.hand_graphs import MB, write_chains_and_gpus, write_gpu_cluster

pytestmark = pytest.mark.slow  # every test trains a policy (tens of seconds on 2 cores)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("train")
    write_chains_and_gpus(d)  # g.graph.json, gpus.json
    names = [f"{c}{i}" for c in "ab" for i in range(3)]
    edges = [(f"{c}{i}", f"{c}{i + 1}", 100 * MB) for c in "ab" for i in range(2)]
    other = OpGraph.create(
        "other", names[:4], ["MatMul"] * 4, edges[:2], device_types=["GPU"], compute_cost=np.ones((4, 1))
    )
    graph_io.save(other, str(d / "other.graph.json"))
    write_gpu_cluster(d / "tiny.json", "tiny", 1 * MB)
    return d


BASE = ("--noprogress", "--config=configs/nmt.py:tiny", "--config.placer.policy.hidden_size=16")


def train(*args):
    """Runs placer-train in this process."""
    return binaries.run("placer.train_main", *BASE, *args)


def test_train_writes_results_then_resume_continues(files, tmp_path):
    work = tmp_path / "w"
    ok = [f"--graph={files / 'g.graph.json'}", f"--cluster={files / 'gpus.json'}", f"--workdir={work}", "--seed=1"]
    ok.append("--config.placer.train.method=seq2seq")
    r = train(*ok, "--steps=6")
    assert r.returncode == 0, r.stderr
    summary = json.loads((work / "summary.json").read_text())
    assert summary["steps"] == 6
    # Lower bound: two 3-second chains on two devices; step time at least that.
    assert summary["lower_bound"] == pytest.approx(3.0)
    assert summary["best_step_time"] >= 3.0
    best = json.loads((work / "best_placement.json").read_text())
    assert best["metadata"]["method"] == "seq2seq" and len(best["ops"]) == 6  # the method, by its name
    assert os.listdir(work / "tensorboard")
    assert "best step time" in r.stdout
    assert summary["policy"] == "seq2seq_attention" and summary["encoder"] == "bilstm"
    assert json.loads((work / "run.json").read_text())["encoder"] == "bilstm"
    rows = (work / "curve.csv").read_text().splitlines()
    assert rows[0] == "step,samples,wall_seconds,mean_step_time,best_step_time,entropy"
    assert [r.split(",")[0] for r in rows[1:]] == [str(i) for i in range(1, 7)]
    samples = [int(r.split(",")[1]) for r in rows[1:]]
    assert samples == sorted(samples) and samples[0] > 0
    # Warm start (all baselines): the imitated placement is the best at step 0 and never beaten downwards.
    assert summary["warm_start"]["step_time"] >= summary["best_step_time"]

    r = train(*ok, "--steps=9", "--resume")
    assert r.returncode == 0, r.stderr
    assert "resumed at step 6" in r.stdout
    assert json.loads((work / "summary.json").read_text())["steps"] == 9

    # Resuming a finished run changes nothing.
    before = {p: os.path.getmtime(os.path.join(dp, p)) for dp, _, fs in os.walk(work) for p in fs}
    r = train(*ok, "--steps=9", "--resume")
    assert r.returncode == 0 and "finished" in r.stdout, r.stderr
    after = {p: os.path.getmtime(os.path.join(dp, p)) for dp, _, fs in os.walk(work) for p in fs}
    assert before == after
    # run.json without a checkpoint: nothing to continue, so it starts over and says so; --max_minutes stops a
    # long search early and still writes its results.
    for name in os.listdir(work / "checkpoints"):
        os.remove(work / "checkpoints" / name)
    r = train(*ok, "--steps=100000", "--max_minutes=0.02")
    assert r.returncode == 0 and "starting over" in r.stdout, r.stderr
    steps = json.loads((work / "summary.json").read_text())["steps"]
    assert 0 < steps < 100000 and (work / "best_placement.json").exists()


def test_bad_input_exits_2_and_leaves_the_workdir(files, tmp_path):
    work = tmp_path / "w"
    ok = [f"--graph={files / 'g.graph.json'}", f"--cluster={files / 'gpus.json'}", f"--workdir={work}"]
    r = train(*ok, "--steps=0")
    assert r.returncode == 2 and "--steps must be positive" in r.stderr and "Traceback" not in r.stderr
    r = train(*ok[:1], "--cluster=no_such_cluster", ok[2], "--steps=3")
    assert r.returncode == 2 and "no_such_cluster" in r.stderr
    r = train(*ok, "--steps=3", "--config.measure=psychic")
    assert r.returncode == 2 and "psychic" in r.stderr
    for field, value in (
        ("train.algorithm", "a2c"),
        ("train.entropy_schedule", "cosine"),
        ("policy.temperature_schedule", "cosine"),
        ("policy.encoder", "transformer"),
        ("policy.compute_prior", "-1"),
    ):
        r = train(*ok, "--steps=3", f"--config.placer.{field}={value}")
        assert r.returncode == 2 and field in r.stderr and value in r.stderr, r.stderr
        errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and field in errors[0] and "Traceback" not in r.stderr
    assert not work.exists() or not os.listdir(work)

    assert train(*ok, "--steps=3").returncode == 0
    before = {p: os.path.getmtime(os.path.join(dp, p)) for dp, _, fs in os.walk(work) for p in fs}
    r = train(f"--graph={files / 'other.graph.json'}", *ok[1:], "--steps=5", "--resume")
    assert r.returncode == 2 and "another" in r.stderr, r.stderr
    r = train(*ok, "--steps=5")  # without --resume: refuses to start over
    assert r.returncode == 2 and "--resume" in r.stderr
    after = {p: os.path.getmtime(os.path.join(dp, p)) for dp, _, fs in os.walk(work) for p in fs}
    assert before == after


@pytest.mark.parametrize("method", ["seq2seq", "annealing_warm"])
def test_every_sample_failing_reports_cleanly(files, tmp_path, method):
    r = train(
        f"--graph={files / 'g.graph.json'}",
        f"--cluster={files / 'tiny.json'}",
        f"--workdir={tmp_path / 'w'}",
        "--steps=3",
        f"--config.placer.train.method={method}",
    )
    assert r.returncode == 0, r.stderr
    assert "every sample failed (oom)" in r.stdout  # why, whatever the method
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["best_step_time"] is None
    assert not (tmp_path / "w" / "best_placement.json").exists()
