"""placer-search on Ray with --measure=session: slots are actors running the placed graphs in real TF
sessions on their own logical CPUs; killing one mid-run loses no search."""

import json
import math
import os

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e .[ray]")

from bench.testing.workloads import write_workload  # noqa: E402
from placer.measure.ray_pool import RayEngine  # noqa: E402
from placer.measure.registry import MeasurerFactory  # noqa: E402
from placer.sharing import jobs as search_jobs  # noqa: E402
from placer.sharing import search  # noqa: E402
from tests import binaries  # noqa: E402
from tests.sharing.test_search_ray import run_fair_killing_slot_0  # noqa: E402

# One worker runs every test of a Ray cluster (tests/conftest.py, local_ray): the cluster starts once.
pytestmark = pytest.mark.xdist_group("ray")

DEMO = "configs/searches/demo.py:session"  # tiny RNNLM and NMT on "local:2", 4 iterations each


def _actor_cpus(actor) -> int:
    """The CPU devices TF set up in an actor's process."""

    def logical_cpus(worker):
        import tensorflow as tf  # noqa: PLC0415 (runs inside the actor)

        return len(tf.config.list_logical_devices("CPU"))

    return ray.get(actor.__ray_call__.remote(logical_cpus), timeout=120)


@pytest.mark.slow
def test_session_slots_survive_a_killed_actor(local_ray, tmp_path):
    work = search_jobs.load_workload(DEMO)
    prepared = search.prepare(work, measure="session", log=lambda *a: None)
    assert all(p.model and p.cluster.num_devices == 2 for p in prepared)
    factory = MeasurerFactory("session", warmup=work.session_warmup, steps=work.session_steps, timeout_s=60.0)
    options = {"measure_timeout_s": work.measure_timeout_s, "max_retries": work.max_retries}
    workdir = tmp_path / "fair"
    with RayEngine(2, factory=factory, **options) as engine:
        # Fair share gives the two searches one slot each, so slot 0 is always in use: kill its actor
        # (with the measurers it built) once a search has finished an iteration (its curve is written).
        def ran(slots):
            jobs = workdir / "jobs"
            return len(slots) == 2 and any(os.path.exists(jobs / n / "sharing_state.json") for n in ("rnnlm", "nmt"))

        summary = run_fair_killing_slot_0(engine, prepared, str(workdir), epoch_s=0.5, ready=ran)
        # Each slot's process, the one started in place of the killed actor too, set up the job cluster's
        # 2 logical CPUs before TF started.
        assert [_actor_cpus(engine.actors[s]) for s in (0, 1)] == [2, 2]
    assert [(j["name"], j["status"], j["iterations"]) for j in summary["jobs"]] == [
        ("rnnlm", "done", 4),
        ("nmt", "done", 4),
    ]
    assert os.path.exists(workdir / "summary.json")
    for name in ("rnnlm", "nmt"):
        folder = workdir / "jobs" / name
        with open(folder / "history.json") as f:
            history = json.load(f)
        assert len(history) == 4
        # Every sample ran: real session step times (seconds even on a loaded machine, where a failed sample
        # would count 100 s), none failed (the killed actor's were retried).
        assert all(0 < h["min_step_time"] < 10 and math.isfinite(h["mean_step_time"]) for h in history)
        assert all(h["failed_fraction"] == 0 for h in history)
        with open(folder / "best_placement.json") as f:
            best = json.load(f)
        assert best["metadata"]["measure"] == "session"
        assert set(best["devices"]) == {"/device:CPU:0", "/device:CPU:1"}


def test_graph_file_job_with_session_measure_is_an_input_error(tmp_path):
    jobs = write_workload(tmp_path)
    p = binaries.run(
        "placer.search_main", f"--jobs={jobs}", "--measure=session", "--engine=ray", f"--workdir={tmp_path / 'out'}"
    )
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [p.stderr.strip()]
    assert "job 's0': --measure=session runs the job's TF model" in p.stderr
    assert not os.path.exists(tmp_path / "out")
