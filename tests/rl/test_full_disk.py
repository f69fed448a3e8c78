"""placer-train on a disk that fills: one line naming the path and the bytes, exit 2, and --resume continues.

The disk is made to fill in this process (the writes that would meet it
raise ENOSPC as the OS would); the same run on a real 300 KiB tmpfs gives
the same line (docs/limits.md).
"""

import errno
import json
import os

import pytest
import tensorflow as tf

from tests import binaries
from tests.hand_graphs import write_chains_and_gpus

pytestmark = pytest.mark.slow  # placer-train twice per test


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("full")
    write_chains_and_gpus(d)
    return d


def train(files, work, *args):
    base = (
        "--noprogress",
        "--config=configs/nmt.py:tiny",
        "--config.placer.train.method=seq2seq",
        "--config.placer.policy.hidden_size=16",
    )
    return binaries.run(
        "placer.train_main", *base, f"--graph={files / 'g.graph.json'}", f"--cluster={files / 'gpus.json'}",
        f"--workdir={work}", "--config.placer.train.checkpoint_every=1", *args,
    )  # fmt: skip


def test_checkpoint_that_meets_a_full_disk_stops_the_run_and_resume_continues(files, tmp_path, monkeypatch):
    save = tf.train.CheckpointManager.save

    def full_at_step_3(manager, checkpoint_number=None, **kw):
        if checkpoint_number == 3:  # as SaveV2 reports it on a full file system
            raise tf.errors.ResourceExhaustedError(None, None, "ckpt-3_temp/part-00000; No space left on device")
        return save(manager, checkpoint_number=checkpoint_number, **kw)

    work = tmp_path / "w"
    monkeypatch.setattr(tf.train.CheckpointManager, "save", full_at_step_3)
    r = train(files, work, "--steps=5")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {work / 'checkpoints'}: cannot write the checkpoint of step 3, about "
    )
    assert lines[0].endswith(
        " bytes (No space left on device); the checkpoint of step 2 is kept: free space, then run again with --resume"
    )
    assert int(lines[0].split("about ")[1].split(" bytes")[0]) > 10_000  # the policy's weights and Adam's slots
    monkeypatch.setattr(tf.train.CheckpointManager, "save", save)  # space freed
    r = train(files, work, "--steps=5", "--resume")
    assert r.returncode == 0, r.stderr
    assert "resumed at step 2" in r.stdout
    assert [h["step"] for h in json.loads((work / "history.json").read_text())] == [1, 2, 3, 4, 5]


def test_state_file_that_meets_a_full_disk_keeps_the_last_one_and_resume_continues(files, tmp_path, monkeypatch):
    replace, calls = os.replace, []

    def full_on_the_third_state(src, dst, *a, **kw):
        if str(dst).endswith("learner.json"):
            calls.append(dst)
            if len(calls) == 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), dst)
        return replace(src, dst, *a, **kw)

    work = tmp_path / "w"
    anneal = "--config.placer.train.method=annealing"
    monkeypatch.setattr(os, "replace", full_on_the_third_state)
    r = train(files, work, anneal, "--steps=6")
    assert r.returncode == 2
    state = work / "learner.json"
    need = r.stderr.split("cannot write ")[1].split(" bytes")[0]
    assert int(need) > 100  # the state's JSON text
    assert r.stderr.strip().splitlines() == [
        f"error: {state}: cannot write {need} bytes (No space left on device); an earlier file there is unchanged: "
        "free space, then run again (with --resume, a run continues from its last checkpoint)"
    ]
    assert json.loads(state.read_text())["rounds"] == 2  # the last complete state
    assert not [f for f in os.listdir(work) if f.startswith(".learner.json.")]  # no temporary file left
    monkeypatch.setattr(os, "replace", replace)
    r = train(files, work, anneal, "--steps=6", "--resume")
    assert r.returncode == 0, r.stderr
    assert "resumed at step 2" in r.stdout
    assert json.loads((work / "summary.json").read_text())["steps"] == 6
