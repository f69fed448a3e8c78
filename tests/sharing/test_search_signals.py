"""placer-search stopped by SIGINT: every search saves its last iteration, no summary is written, --resume finishes."""

import json
import re

import pytest

from tests.inprocess import call
from tests.sharing.test_search import write_workload
from tests.signal_run import interrupt

pytestmark = pytest.mark.slow

STEPS = 4


def _iterations(out) -> dict[str, int]:
    """Iterations each search saved (its sharing_state.json), by search name."""
    got = {}
    for state in out.glob("fair/jobs/*/sharing_state.json"):
        try:
            got[state.parent.name] = len(json.loads(state.read_text())["losses"])
        except (OSError, ValueError):
            pass
    return got


def test_sigint_stops_every_search_after_its_iteration_and_resume_finishes(tmp_path, capsys):
    jobs = write_workload(tmp_path, steps=STEPS, arrivals=(0.0, 0.0, 0.0))
    out = tmp_path / "out"
    args = [f"--jobs={jobs}", "--slots=4", "--epoch_s=0.2", "--policy=fair", f"--workdir={out}"]
    status, _, err = interrupt("placer.search_main", args, lambda: sum(_iterations(out).values()) >= 2)
    assert status == 130, err
    assert "Traceback" not in err
    m = re.fullmatch(r"stopped at step (\d+); continue with --resume", err.strip().splitlines()[-1])
    assert m, err
    saved = _iterations(out)
    # The line counts the iterations of all searches, each saved with its checkpoint.
    assert int(m.group(1)) == sum(saved.values()) < 3 * STEPS
    assert not (out / "fair" / "summary.json").exists()  # a stopped run is not a finished one
    assert call("placer.search_main", *args, "--resume") == 0
    capsys.readouterr()
    summary = json.loads((out / "fair" / "summary.json").read_text())
    assert sorted(j["iterations"] for j in summary["jobs"]) == [STEPS] * 3
