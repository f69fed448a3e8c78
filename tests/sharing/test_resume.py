"""placer-search --resume: a run killed with SIGKILL at random moments continues where it was.

Two runs in their own processes are killed (the first, then its resume);
the last resume runs to the end in this process (tests/binaries.py).
"""

import csv
import json
import os
import random
import subprocess
import sys
import time

import pytest

from placer.testing.workloads import write_workload
from tests.cli import ROOT
from tests.inprocess import call

STEPS = 12  # enough iterations for all the searches to outlast the kills
KILLS = 2


def _start(args):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [sys.executable, "-m", "placer.search_main", *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _states(out) -> dict[str, dict]:
    """Each search's saved curve (sharing_state.json), by search name."""
    got = {}
    for root, _, files in os.walk(out):
        if "sharing_state.json" in files:
            try:
                with open(os.path.join(root, "sharing_state.json")) as f:
                    got[os.path.basename(root)] = json.load(f)
            except (OSError, ValueError):
                pass
    return got


def _iterations_done(out) -> int:
    return sum(len(s["losses"]) for s in _states(out).values())


@pytest.mark.slow
def test_sigkilled_run_resumes_without_repeating_or_losing_iterations(tmp_path, capsys):
    jobs = write_workload(tmp_path, steps=STEPS, arrivals=(0.0, 0.0, 0.3))
    out = tmp_path / "out"
    args = [f"--jobs={jobs}", "--slots=4", "--epoch_s=0.2", "--policy=fair", f"--workdir={out}"]
    rng = random.Random(0)
    snapshots = []  # the saved curves right after each kill
    for attempt in range(KILLS):
        proc = _start(args + (["--resume"] if attempt else []))
        before = _iterations_done(out)
        deadline = time.monotonic() + 120
        # Kill once this run has finished an iteration of its own, after a random further wait.
        while _iterations_done(out) <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.6))
        assert proc.poll() is None, proc.stderr.read()  # still running: the kill cuts it short
        proc.kill()
        proc.wait()
        proc.stderr.close()
        snapshots.append(_states(out))
    # At least one kill cut a search short, so the resume had something to continue.
    assert any(0 < len(st["losses"]) < STEPS for snap in snapshots for st in snap.values())
    assert call("placer.search_main", *args, "--resume") == 0, capsys.readouterr().err
    summary = json.loads((out / "fair" / "summary.json").read_text())
    assert [(j["status"], j["iterations"]) for j in summary["jobs"]] == [("done", STEPS)] * 3
    for name in ("s0", "s1", "s2"):
        with open(out / "fair" / "curves" / f"{name}.csv") as f:
            rows = list(csv.DictReader(f))
        assert [int(r["iteration"]) for r in rows] == list(range(STEPS))  # each iteration once
        times = [float(r["time_s"]) for r in rows]
        assert times == sorted(times)  # the clock continued across the kills
        # Iterations finished before a kill were not run again: their times and losses survive
        # unchanged (the last saved one may lie past the checkpoint and be redone).
        for snap in snapshots:
            kept = snap.get(name, {"times": [], "losses": []})
            n = max(0, len(kept["losses"]) - 1)
            assert [float(r["time_s"]) for r in rows[:n]] == pytest.approx(kept["times"][:n], abs=1e-9)
            assert [float(r["loss"]) for r in rows[:n]] == kept["losses"][:n]
        history = json.loads((out / "fair" / "jobs" / name / "history.json").read_text())
        assert [h["step"] for h in history] == list(range(1, STEPS + 1))
