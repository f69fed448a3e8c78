"""placer-search on Ray: slots as actors on a local Ray cluster; killing one mid-run loses nothing."""

import threading

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e .[ray]")

from bench.testing.workloads import write_workload  # noqa: E402
from placer.measure.ray_pool import RayEngine  # noqa: E402
from placer.sharing import jobs as search_jobs  # noqa: E402
from placer.sharing import search  # noqa: E402

# One worker runs every test of a Ray cluster (tests/conftest.py, local_ray): the cluster starts once.
pytestmark = pytest.mark.xdist_group("ray")


def run_fair_killing_slot_0(engine, prepared, workdir: str, epoch_s: float, ready) -> dict:
    """Runs the searches under `fair` on `engine`, killing slot 0's actor once at the first epoch
    whose allocation `ready(slots)` accepts; checks that the slot got a fresh actor and that the
    dead actor's placements were measured elsewhere. Returns the run's summary."""
    killed = []
    lock = threading.Lock()

    def on_epoch(now, slots):
        # The searches' next calls on the killed actor fail over.
        with lock:
            if not killed and ready(slots):
                killed.append(engine.actors[0])
                ray.kill(engine.actors[0])

    summary = search.run_policy(
        prepared, engine, "fair", epoch_s=epoch_s, workdir=workdir, log=lambda *a: None, on_epoch=on_epoch
    )
    assert killed and engine.actors[0] is not killed[0]  # slot 0 got a fresh actor
    assert engine.retried >= 1  # the dead actor's placements were measured elsewhere
    return summary


@pytest.mark.slow
def test_killing_a_slot_actor_mid_run_does_not_stop_the_run(local_ray, tmp_path):
    work = search_jobs.load_workload(write_workload(tmp_path, steps=4, arrivals=(0.0, 0.0, 0.0)))
    prepared = search.prepare(work, log=lambda *a: None)
    with RayEngine(4) as engine:
        assert engine.num_slots == 4
        # With all three searches running, fair share hands out all 4 slots, so slot 0 is in use.
        summary = run_fair_killing_slot_0(
            engine, prepared, str(tmp_path / "fair"), epoch_s=0.3, ready=lambda slots: len(slots) == 3
        )
    assert [(j["status"], j["iterations"]) for j in summary["jobs"]] == [("done", 4)] * 3
    # Every sample of every iteration was measured: no failure leaked into the best step times.
    assert all(j["best_step_time"] is not None for j in summary["jobs"])


@pytest.mark.slow
def test_too_few_slot_resources_is_an_input_error(local_ray):
    from placer.core.errors import InputError

    with pytest.raises(InputError, match="offers 4 'placer_slot' resources, fewer than --slots=5"):
        RayEngine(5)
