"""Job names are data, never paths: a trace's or jobs file's names cannot leave --workdir or replace a file."""

import json
import os

import pytest

from bench.testing.workloads import write_workload
from placer.core import names
from tests import binaries

# One job named by the test ({name}), one plain: loss 4, 2, 0 at 1 s per iteration on one slot.
TRACE = """job,arrival_s,iteration,loss,seconds_1
{name},0,0,4,
{name},0,1,2,1
{name},0,2,0,1
b,0,0,4,
b,0,1,2,1
b,0,2,0,1
"""


def _files(root) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def _replay(tmp_path, name: str, *extra: str):
    """Replays TRACE (bench/slaq_replay.py) with the first job named `name` into tmp_path/a/b/c/out under fair share."""
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE.format(name=name))
    out = tmp_path / "a" / "b" / "c" / "out"
    args = [f"--trace={trace}", "--slots=2", "--epoch_s=1", "--policy=fair", f"--workdir={out}", *extra]
    return binaries.run("bench.slaq_replay", *args), out


def test_slug_by_hand():
    assert names.slug("resnet-1") == "resnet-1"  # a safe name is kept as it is
    s = names.slug("../../../x")
    assert s.startswith("x-") and len(s) == 10 and "/" not in s
    assert names.slug("a/b") != names.slug("a_b") == "a_b"  # a changed name gets a hash: no clash
    assert len(names.slug("a" * 300)) == names.LIMIT and names.slug("a" * 300) != names.slug("a" * 299)
    assert not names.slug("..").startswith(".") and not names.slug("-rf").startswith("-")


def test_job_named_up_the_tree_stays_in_the_workdir(tmp_path):
    before = _files(tmp_path)
    r, out = _replay(tmp_path, "../../../x")
    assert r.returncode == 0, r.stderr
    new = _files(tmp_path) - before - {"trace.csv"}
    assert all(f.startswith(os.path.join("a", "b", "c", "out") + os.sep) for f in new), new
    slug = names.slug("../../../x")
    assert (out / "fair" / "curves" / f"{slug}.csv").exists()
    summary = json.loads((out / "fair" / "summary.json").read_text())
    assert [j["name"] for j in summary["jobs"]] == ["../../../x", "b"]  # the name itself is kept as data


def test_job_named_by_an_absolute_path_stays_in_the_workdir(tmp_path):
    target = tmp_path / "elsewhere" / "victim"
    r, out = _replay(tmp_path, str(target))
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "elsewhere").exists()
    assert (out / "fair" / "curves" / f"{names.slug(str(target))}.csv").exists()


def test_job_named_like_an_existing_csv_does_not_replace_it(tmp_path):
    out = tmp_path / "a" / "b" / "c" / "out"
    mine = out / "fair" / "curves" / "b.csv"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own notes\n")
    r, _ = _replay(tmp_path, "../allocations")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: {mine}: exists and this run did not write it (give --overwrite to replace it)"
    ]
    assert mine.read_text() == "my own notes\n" and _files(out) == {os.path.join("fair", "curves", "b.csv")}
    r, _ = _replay(tmp_path, "../allocations", "--overwrite")
    assert r.returncode == 0, r.stderr
    assert mine.read_text().startswith("time_s,iteration")  # replaced, as asked
    assert (out / "fair" / "allocations.csv").read_text().startswith("time_s,job,slots")  # not a job's curve


def test_300_character_job_name_keeps_the_results(tmp_path):
    name = "j" * 300
    r, out = _replay(tmp_path, name)
    assert r.returncode == 0, r.stderr
    curve = out / "fair" / "curves" / f"{names.slug(name)}.csv"
    assert curve.exists() and len(curve.name) <= names.LIMIT + 4
    assert json.loads((out / "fair" / "summary.json").read_text())["jobs"][0]["name"] == name


@pytest.mark.slow
def test_jobs_file_with_a_300_character_name_runs_to_the_end(tmp_path):
    jobs = write_workload(tmp_path, steps=2)
    name = "s" * 300
    text = open(jobs).read().replace("name='s0'", f"name='{name}'")
    with open(jobs, "w") as f:
        f.write(text)
    out = tmp_path / "out"
    r = binaries.run("placer.search_main", f"--jobs={jobs}", "--slots=2", "--policy=fair", f"--workdir={out}")
    assert r.returncode == 0, r.stderr
    slug = names.slug(name)
    assert (out / "fair" / "curves" / f"{slug}.csv").exists()
    assert (out / "fair" / "jobs" / slug / "history.json").exists()
