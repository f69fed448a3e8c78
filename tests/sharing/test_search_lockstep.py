"""placer-search --lockstep: the same seeds give the same result, whatever the threads' timing."""

import json

import pytest

from placer.measure.pool import InProcessEngine
from placer.sharing import jobs as search_jobs
from placer.sharing import search
from tests.inprocess import call
from tests.sharing.test_search import write_workload

pytestmark = pytest.mark.slow


def _curves(workdir) -> dict:
    """Per search: its losses, best step times and slots per iteration, and its start, from curves.json."""
    curves = json.loads((workdir / "curves.json").read_text())
    return {k: (c["loss"], c["best_step_time"], c["slots"], c["start_s"]) for k, c in curves.items()}


def test_two_lockstep_runs_one_through_the_cli_flag_are_the_same_and_count_epochs(tmp_path, capsys):
    # Three searches of 4 iterations on 3 slots: s2 arrives at 0.3 s, that is at the epoch of 0.4 s (epochs of 0.2 s).
    jobs = write_workload(tmp_path, steps=4, arrivals=(0.0, 0.0, 0.3))
    prepared = search.prepare(search_jobs.load_workload(jobs), log=lambda *a: None)
    with InProcessEngine(3) as engine:
        search.run_policy(
            prepared, engine, "slaq", epoch_s=0.2, workdir=str(tmp_path / "lib"), log=lambda *a: None, lockstep=True
        )
    # The same workload through placer-search's --lockstep: its own threads and engine, the same result.
    args = [f"--jobs={jobs}", "--slots=3", "--epoch_s=0.2", "--policy=slaq", "--lockstep", f"--workdir={tmp_path}/cli"]
    assert call("placer.search_main", *args) == 0
    capsys.readouterr()
    curves = _curves(tmp_path / "lib")
    assert _curves(tmp_path / "cli" / "slaq") == curves
    assert curves["s2"][3] == pytest.approx(0.4)  # started on the epoch clock, not the wall clock
    assert all(len(c[0]) == 4 for c in curves.values())  # every search finished its 4 iterations
    summary = json.loads((tmp_path / "cli" / "slaq" / "summary.json").read_text())
    assert [(j["name"], j["best_step_time"], j["iterations"]) for j in summary["jobs"]] == [
        (name, c[1][-1], 4) for name, c in curves.items()
    ]
