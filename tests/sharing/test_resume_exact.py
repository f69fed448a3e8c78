"""placer-search --resume after SIGKILL is exact: the same epochs, allocations and figures as a run never killed.

The run is killed three times (twice under SLAQ, once under fair share, in
their own processes) and each time resumed; the last resume runs to the end
in this process. In lockstep (the in-process default) the same seeds give
the same run, so every output must match an uninterrupted run's, byte for byte.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from placer.testing.workloads import write_workload
from tests.cli import ROOT
from tests.inprocess import call

pytestmark = pytest.mark.slow

STEPS = 8
KILL_AT = (3, 17, 34)  # iterations saved (all searches, both policies) before each kill; 48 in all


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
    for policy in ("slaq", "fair"):
        folder = out / policy
        got[f"{policy}/allocations.csv"] = (folder / "allocations.csv").read_text()
        got[f"{policy}/curves.json"] = json.loads((folder / "curves.json").read_text())
        for curve in sorted((folder / "curves").iterdir()):
            got[f"{policy}/curves/{curve.name}"] = curve.read_text()
        summary = json.loads((folder / "summary.json").read_text())
        summary.pop("engine")
        got[f"{policy}/summary.json"] = summary
    return got


def test_sigkilled_search_resumes_exactly_as_an_uninterrupted_run(tmp_path, capsys):
    jobs = write_workload(tmp_path, steps=STEPS, arrivals=(0.0, 0.0, 0.3))
    common = [f"--jobs={jobs}", "--slots=4", "--epoch_s=0.2", "--policy=both"]
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
    for policy in ("slaq", "fair"):
        state = json.loads((out / policy / "run_state.json").read_text())
        assert state["epochs"] == sorted(set(state["epochs"]))  # no epoch repeated
