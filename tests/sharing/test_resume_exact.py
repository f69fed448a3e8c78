"""placer-search --resume after SIGKILL is exact: the same epochs, allocations and figures as a run never killed.

The run (seq2seq, annealing and random search sharing the slots under
SLAQ) is killed twice, in its own processes, and each time resumed; the last resume runs to the end in this
process. In lockstep (the in-process default) the same seeds give the same
run, so every output must match an uninterrupted run's, byte for byte: no
iteration was repeated or lost.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from bench.testing.workloads import write_workload
from placer.sharing import running
from tests.cli import ROOT
from tests.inprocess import call

STEPS = 8
KILL_AT = (6, 15)  # iterations saved (all searches) before each kill; 24 in all


def _start(args):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [sys.executable, "-m", "placer.search_main", *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _iterations_done(out) -> int:
    n = 0
    for root, _, files in os.walk(out):
        if "sharing_state.json" in files:
            try:
                with open(os.path.join(root, "sharing_state.json")) as f:
                    n += len(json.load(f)["losses"])
            except (OSError, ValueError):
                pass
    return n


def _outputs(out) -> dict[str, object]:
    """Every output that states a result: allocations, curves and summaries (less the engine's retry counts)."""
    got = {}
    for policy in ("slaq",):
        folder = out / policy
        got[f"{policy}/allocations.csv"] = (folder / "allocations.csv").read_text()
        got[f"{policy}/curves.json"] = json.loads((folder / "curves.json").read_text())
        for curve in sorted((folder / "curves").iterdir()):
            got[f"{policy}/curves/{curve.name}"] = curve.read_text()
        summary = json.loads((folder / "summary.json").read_text())
        summary.pop("engine")
        got[f"{policy}/summary.json"] = summary
    return got


@pytest.mark.slow
def test_sigkilled_search_resumes_exactly_as_an_uninterrupted_run(tmp_path, capsys):
    jobs = write_workload(tmp_path, steps=STEPS, arrivals=(0.0, 0.0, 0.3))
    common = [f"--jobs={jobs}", "--slots=4", "--epoch_s=0.2", "--policy=slaq"]
    assert call("placer.search_main", *common, f"--workdir={tmp_path / 'ref'}") == 0
    out = tmp_path / "out"
    args = [*common, f"--workdir={out}"]
    for attempt, at in enumerate(KILL_AT):
        proc = _start(args + (["--resume"] if attempt else []))
        deadline = time.monotonic() + 180
        while _iterations_done(out) < at and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read()  # still running: the kill cuts it short
        proc.kill()
        proc.wait()
        proc.stderr.close()
    assert call("placer.search_main", *args, "--resume") == 0, capsys.readouterr().err
    capsys.readouterr()
    want, got = _outputs(tmp_path / "ref"), _outputs(out)
    assert got.keys() == want.keys()
    for name in want:
        assert got[name] == want[name], name
    for policy in ("slaq",):
        state = json.loads((out / policy / "run_state.json").read_text())
        assert state["epochs"] == sorted(set(state["epochs"]))  # no epoch repeated
        history = json.loads((out / policy / "jobs" / "s0" / "history.json").read_text())
        assert [h["step"] for h in history] == list(range(1, STEPS + 1))  # the policy's steps, each once


def test_an_epoch_cut_short_after_some_searches_saved_is_run_again_exactly(tmp_path):
    """The state a kill leaves midway through an epoch, made by hand: the run's record and s1 at the end of
    epoch 2, s0 and s2 already one iteration further. The resumed run must equal the uninterrupted one."""
    from placer.measure.pool import InProcessEngine  # noqa: PLC0415
    from placer.sharing import jobs as search_jobs  # noqa: PLC0415
    from placer.sharing import search  # noqa: PLC0415

    methods = ("annealing_warm", "random_search", "annealing_warm")
    work = search_jobs.load_workload(write_workload(tmp_path, steps=6, arrivals=(0.0, 0.0, 0.3), methods=methods))
    prepared = search.prepare(work, log=lambda *a: None)
    ref, snapshots = tmp_path / "ref", {}

    def snapshot(now, _):
        snapshots[len(snapshots)] = tmp_path / f"epoch{len(snapshots)}"
        shutil.copytree(ref, snapshots[len(snapshots) - 1])  # the ends of epochs so far, searches idle

    def run(workdir, on_epoch=None, resume=False):
        with InProcessEngine(4) as engine:
            search.run_policy(
                prepared, engine, "slaq", epoch_s=0.2, workdir=str(workdir), log=lambda *a: None,
                on_epoch=on_epoch, resume=resume, lockstep=True,
            )  # fmt: skip

    ref.mkdir()
    run(ref, on_epoch=snapshot)
    cut = tmp_path / "cut"
    shutil.copytree(snapshots[4], cut)  # every search at the end of epoch 3 ...
    shutil.copy(snapshots[3] / running.RUN_FILE, cut / running.RUN_FILE)  # ... the run's record at epoch 2's
    shutil.rmtree(cut / "jobs" / "s1")
    shutil.copytree(snapshots[3] / "jobs" / "s1", cut / "jobs" / "s1")  # s1 had not saved epoch 3's iteration
    ahead = json.loads((cut / "jobs" / "s0" / "sharing_state.json").read_text())["losses"]
    behind = json.loads((cut / "jobs" / "s1" / "sharing_state.json").read_text())["losses"]
    assert len(ahead) == len(behind) + 1  # the state a kill between two searches' saves leaves
    run(cut, resume=True)
    for name in ("allocations.csv", "curves.json", "curves/s0.csv", "curves/s1.csv", "curves/s2.csv"):
        assert (cut / name).read_text() == (ref / name).read_text(), name
