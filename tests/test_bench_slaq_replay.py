"""bench/slaq_replay.py: replaying a trace CSV under every allocator, without TensorFlow."""

import json
import os

import pytest

from tests import binaries

# Job a: loss 4, 2, 1, 0 at 1 / 0.5 / 0.25 s per iteration on 1 / 2 / 3 slots.
# Job b: loss 4, 3, 2, 1, 0 at 1 s per iteration, one slot only (seconds_2, seconds_3 empty).
TRACE = """job,arrival_s,iteration,loss,seconds_1,seconds_2,seconds_3
a,0,0,4,,,
a,0,1,2,1,0.5,0.25
a,0,2,1,1,0.5,0.25
a,0,3,0,1,0.5,0.25
b,0,0,4,,,
b,0,1,3,1,,
b,0,2,2,1,,
b,0,3,1,1,,
b,0,4,0,1,,
"""


def _trace(tmp_path) -> str:
    """Writes TRACE into `tmp_path`; returns the file's path."""
    p = tmp_path / "trace.csv"
    p.write_text(TRACE)
    return str(p)


def test_replay_writes_a_live_runs_outputs(tmp_path):
    # That the replay imports no TensorFlow is checked in a fresh process by tests/test_light_imports.py.
    out = tmp_path / "out"
    args = [f"--trace={_trace(tmp_path)}", "--slots=4", "--epoch_s=1", "--policy=all", f"--workdir={out}"]
    r = binaries.run("bench.slaq_replay", *args)
    assert r.returncode == 0, r.stderr
    assert "\nslaq-safe: mean time to 90%" in r.stdout and "\nfair-static: mean time to 90%" in r.stdout
    t90 = {}
    for policy in ("slaq", "slaq-safe", "fair", "fair-static"):
        folder = out / policy
        for name in ("summary.json", "curves.json", "allocations.csv", "curves/a.csv", "curves/b.csv"):
            assert (folder / name).exists(), (policy, name)
        summary = json.loads((folder / "summary.json").read_text())
        t90[policy] = {j["name"]: j["time_to"]["90%"] for j in summary["jobs"]}
    # Work-conserving fair share on 4 slots: a capped at 3 (its fastest count), b at 1 -> a takes 3,
    # 0.25 s per iteration, loss 0 (past 90% of 4) after 3 iterations: 0.75 s. b: 4 iterations of 1 s.
    assert t90["fair"] == pytest.approx({"a": 0.75, "b": 4.0})
    # The static share gives a 2 (4 // 2) and leaves b's spare slot idle: 3 iterations of 0.5 s.
    assert t90["fair-static"] == pytest.approx({"a": 1.5, "b": 4.0})


@pytest.mark.parametrize(
    "module, args, message",
    [
        (
            "placer.search_main",
            ["--jobs=bench/data/search_trace.csv"],
            "a jobs file is a Python config file (.py); a trace CSV is replayed by python -m bench.slaq_replay",
        ),
        ("placer.search_main", ["--trace=bench/data/search_trace.csv"], "Unknown command line flag 'trace'"),
        ("placer.search_main", [], "Flag --jobs must have a value"),
        ("bench.slaq_replay", [], "Flag --trace must have a value"),
        ("bench.slaq_replay", ["--trace=missing.csv"], "cannot read trace: missing.csv: no such trace file"),
    ],
)
def test_bad_inputs_are_one_line_exit_2(tmp_path, module, args, message):
    p = binaries.run(module, *args, f"--workdir={tmp_path / 'out'}")
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and message in p.stderr
    assert not os.path.exists(tmp_path / "out")
