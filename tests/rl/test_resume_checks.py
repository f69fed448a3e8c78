"""placer-train --resume continues only the search its checkpoint was made from, and survives a damaged newest checkpoint."""

import json
import os

import numpy as np
import pytest

from placer.core import io as graph_io
from tests import binaries
from tests.hand_graphs import MB, two_chains, write_chains_and_gpus

pytestmark = pytest.mark.slow  # each test runs placer-train two or three times


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("resume")
    write_chains_and_gpus(d)
    graph_io.save(
        two_chains(edge_bytes=100 * MB, gpu_seconds=1000 * np.ones(6)), str(d / "slow.graph.json")
    )  # the same ops, costs x1000
    return d


def train(files, work, *args, graph="g.graph.json"):
    base = (
        "--noprogress",
        "--config=configs/nmt.py:tiny",
        "--config.placer.train.method=seq2seq",
        "--config.placer.policy.hidden_size=16",
    )
    return binaries.run(
        "placer.train_main", *base, f"--graph={files / graph}", f"--cluster={files / 'gpus.json'}",
        f"--workdir={work}", *args,
    )  # fmt: skip


def test_resume_after_the_costs_changed_refuses_then_restarts_when_asked(files, tmp_path):
    work = tmp_path / "w"
    anneal = "--config.placer.train.method=annealing"
    assert train(files, work, anneal, "--steps=2").returncode == 0
    r = train(files, work, anneal, "--steps=4", "--resume", graph="slow.graph.json")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: --resume: {work} was checkpointed from other inputs, changed since: costs; continuing it would "
        "mix two searches (give --resume=restart to start over, or pick another --workdir)"
    ]
    r = train(files, work, anneal, "--steps=4", "--resume=restart", graph="slow.graph.json")
    assert r.returncode == 0, r.stderr
    assert f"--resume=restart: the costs changed since the checkpoint in {work}; starting over" in r.stdout
    summary = json.loads((work / "summary.json").read_text())
    # Two 3000-second chains: no stale best of the 3-second graph, and never under the lower bound.
    assert summary["best_step_time"] >= 3000.0 and summary["lower_bound"] == pytest.approx(3000.0)
    # Another method on the same workdir: one line naming both methods (it was "learner.json: cannot read").
    r = train(
        files, work, "--config.placer.train.method=random_search", "--steps=6", "--resume", graph="slow.graph.json"
    )
    assert r.returncode == 2
    assert "changed since: method (annealing, this run random_search);" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_damaged_newest_checkpoint_falls_back_to_the_previous_one(files, tmp_path):
    work = tmp_path / "w"
    every = "--config.placer.train.checkpoint_every=1"
    assert train(files, work, every, "--steps=3", "--seed=2").returncode == 0
    data = work / "checkpoints" / "ckpt-3.data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)  # a write cut short; it was an IndexError traceback
    r = train(files, work, every, "--steps=5", "--seed=2", "--resume")
    assert r.returncode == 0, r.stderr
    assert "cannot restore checkpoint" in r.stderr and "resuming from the previous intact one" in r.stderr
    assert "resumed at step 2" in r.stdout
    history = json.loads((work / "history.json").read_text())
    assert [h["step"] for h in history] == [1, 2, 3, 4, 5]  # step 3 run again, once
