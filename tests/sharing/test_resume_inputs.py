"""placer-search --resume (and bench/slaq_replay.py --resume) continues only a run made from the same jobs file
or trace and settings."""

import json

from bench.testing.workloads import write_workload
from tests import binaries

TRACE = """job,arrival_s,iteration,loss,seconds_1
a,0,0,4,
a,0,1,2,1
a,0,2,0,1
b,0,0,4,
b,0,1,2,{b}
b,0,2,0,{b}
"""


def _seconds(out) -> dict[str, float]:
    return {j["name"]: j["seconds"] for j in json.loads((out / "fair" / "summary.json").read_text())["jobs"]}


def test_trace_edited_between_runs_is_not_resumed_from_the_old_summary(tmp_path):
    trace, out = tmp_path / "t.csv", tmp_path / "out"
    trace.write_text(TRACE.format(b=1))
    args = [f"--trace={trace}", "--slots=2", "--epoch_s=1", "--policy=fair", f"--workdir={out}"]
    assert binaries.run("bench.slaq_replay", *args).returncode == 0
    before = _seconds(out)
    trace.write_text(TRACE.format(b=5))  # b's iterations now take 5 s
    r = binaries.run("bench.slaq_replay", *args, "--resume")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: --resume: {out} was checkpointed from other inputs, changed since: trace; continuing it would mix "
        "two searches (give --resume=restart to start over, or pick another --workdir)"
    ]
    r = binaries.run("bench.slaq_replay", *args, "--resume=restart")
    assert r.returncode == 0, r.stderr
    assert f"--resume=restart: the trace changed since the checkpoint in {out}; starting over" in r.stdout
    assert _seconds(out)["b"] > before["b"] + 3  # replayed on the edited trace, not read back from the old summary
    r = binaries.run("bench.slaq_replay", *args, "--slots=3", "--resume")  # another setting: refused too
    assert r.returncode == 2 and "changed since: slots (2, this run 3);" in r.stderr


def test_jobs_file_edited_between_runs_is_refused_before_any_search(tmp_path):
    jobs = write_workload(tmp_path, steps=2)
    out = tmp_path / "out"
    args = [f"--jobs={jobs}", "--slots=2", "--policy=fair", f"--workdir={out}"]
    assert binaries.run("placer.search_main", *args).returncode == 0
    with open(jobs) as f:
        text = f.read()
    with open(jobs, "w") as f:
        f.write(text.replace("seed=1", "seed=7"))
    r = binaries.run("placer.search_main", *args, "--resume")
    assert r.returncode == 2
    assert "changed since: jobs file;" in r.stderr and len(r.stderr.strip().splitlines()) == 1
