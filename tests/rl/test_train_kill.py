"""placer-train killed with SIGKILL at random moments, then --resume: it finishes and every file stays valid.

The killed run runs in its own process with a step count it never reaches;
the resume, a few steps past the last checkpoint, runs to the end in this
process (tests/binaries.py). (placer-search's test kills a resumed run too:
tests/sharing/test_resume_exact.py.)
"""

import csv
import json
import os
import random
import re
import subprocess
import sys
import time

import pytest

from placer.core import io as graph_io
from tests import binaries
from tests.cli import ROOT
from tests.hand_graphs import MB, two_chains, write_gpu_cluster

KILLS = 1
FOREVER = 100000  # the killed runs' --steps: the kill always comes first
MORE = 5  # steps the last resume runs past the last checkpoint
DEVICES = [f"/device:GPU:{i}" for i in range(2)]
COLUMNS = ["step", "samples", "wall_seconds", "mean_step_time", "best_step_time", "entropy"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two chains of three ops with uneven costs, and a cluster of two GPUs."""
    d = tmp_path_factory.mktemp("kill")
    graph = two_chains(edge_bytes=10 * MB, gpu_seconds=[1.0, 2.0, 3.0, 3.0, 1.0, 2.0])
    graph_io.save(graph, str(d / "g.graph.json"))
    write_gpu_cluster(d / "gpus.json", "gpus")
    return d, graph


def _command(files, work, steps, *extra):
    d, _ = files
    return [
        sys.executable,
        "-m",
        "placer.train_main",
        "--noprogress",
        "--config=configs/nmt.py:tiny",
        "--config.placer.train.method=seq2seq",
        "--config.placer.policy.hidden_size=16",
        "--config.placer.train.warm_start=",
        "--config.placer.train.checkpoint_every=5",
        f"--graph={d / 'g.graph.json'}",
        f"--cluster={d / 'gpus.json'}",
        f"--workdir={work}",
        f"--steps={steps}",
        "--seed=3",
        *extra,
    ]


def _env():
    return dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")


def _checkpoint_step(work) -> int:
    """The step of the checkpoint the workdir's index names (0 before the first)."""
    try:
        text = (work / "checkpoints" / "checkpoint").read_text()
    except OSError:
        return 0
    return int(re.search(r'model_checkpoint_path: "ckpt-(\d+)"', text).group(1))


def _curve(work) -> list[dict]:
    with open(work / "curve.csv") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        return list(reader)


def _check_files(work, graph) -> float | None:
    """Asserts that every file of the workdir parses and agrees with the graph; returns the saved best step time."""
    run = json.loads((work / "run.json").read_text())
    assert run["fingerprint"] == graph.fingerprint() and run["devices"] == DEVICES
    # Each is written whole; a kill between the two may leave history.json a checkpoint ahead.
    history = [h["step"] for h in json.loads((work / "history.json").read_text())]
    assert history == list(range(1, len(history) + 1))
    steps = [int(r["step"]) for r in _curve(work)]
    assert steps == list(range(1, len(steps) + 1))
    if not (work / "best_placement.json").exists():
        return None
    best = json.loads((work / "best_placement.json").read_text())
    assert best["graph"]["fingerprint"] == graph.fingerprint()
    assert sorted(best["ops"]) == sorted(graph.names) and set(best["ops"].values()) <= set(DEVICES)
    assert best["metadata"]["step_time"] > 0
    return best["metadata"]["step_time"]


@pytest.mark.slow
def test_sigkilled_train_resumes_to_completion_with_valid_files(files, tmp_path):
    _, graph = files
    work = tmp_path / "w"
    rng = random.Random(0)
    kept = []  # the best step time saved on disk right after each kill
    for kill in range(KILLS):
        err = open(tmp_path / f"stderr{kill}.txt", "w")  # a file, not a pipe: nothing blocks the run
        cmd = _command(files, work, FOREVER, *(["--resume"] if kill else []))
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
        before = _checkpoint_step(work)
        deadline = time.monotonic() + 120
        # Kill once this run has written a checkpoint of its own, after a random further wait.
        while _checkpoint_step(work) <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.0))
        assert proc.poll() is None, (tmp_path / f"stderr{kill}.txt").read_text()  # the kill cuts it short
        proc.kill()
        proc.wait()
        err.close()
        assert _checkpoint_step(work) > 0
        kept.append(_check_files(work, graph))
    # A kill between the curve and its checkpoint leaves a step the checkpoint does not hold;
    # make the last kill one of those, as a save cut off there leaves the files.
    history = json.loads((work / "history.json").read_text())
    step = _checkpoint_step(work)
    history = [h for h in history if h["step"] <= step]
    history.append(dict(history[-1], step=step + 1))
    (work / "history.json").write_text(json.dumps(history))
    with open(work / "curve.csv", "a") as f:
        f.write(",".join(str(history[-1][k]) for k in COLUMNS) + "\n")

    # The last resume runs to the end: nothing to kill, so it runs in this process (tests/binaries.py).
    steps = step + MORE
    r = binaries.run(*_command(files, work, steps, "--resume")[2:])
    assert r.returncode == 0, r.stderr
    assert f"resumed at step {step}" in r.stdout
    summary = json.loads((work / "summary.json").read_text())
    assert summary["steps"] == steps
    best = _check_files(work, graph)
    rows = _curve(work)
    assert [int(row["step"]) for row in rows] == list(range(1, steps + 1))  # each step once, in order
    samples = [int(row["samples"]) for row in rows]
    assert all(a < b for a, b in zip(samples, samples[1:], strict=False))
    bests = [float(row["best_step_time"]) for row in rows]
    assert bests == sorted(bests, reverse=True)  # the best never got worse across the kills
    assert summary["best_step_time"] == best == bests[-1]
    assert all(summary["best_step_time"] <= b for b in kept if b is not None)
