"""placer-search on Ray: slots as actors on a local Ray cluster; killing one mid-run loses nothing."""

import threading

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e .[ray]")

from placer.sharing import jobs as search_jobs  # noqa: E402
from placer.sharing import search  # noqa: E402
from placer.sharing.ray_engine import RayEngine  # noqa: E402
from tests.sharing.test_search import write_workload  # noqa: E402


@pytest.fixture
def local_ray():
    ray.init(num_cpus=2, resources={"placer_slot": 4}, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_killing_a_slot_actor_mid_run_does_not_stop_the_run(local_ray, tmp_path):
    work = search_jobs.load_workload(write_workload(tmp_path, steps=4, arrivals=(0.0, 0.0, 0.0)))
    prepared = search.prepare(work, log=lambda *a: None)
    killed = []
    lock = threading.Lock()
    with RayEngine(4) as engine:
        assert engine.num_slots == 4

        def on_epoch(now, slots):
            # With all three searches running, fair share hands out all 4 slots, so slot 0 is in use:
            # kill its actor once; the searches' next calls on it fail over.
            with lock:
                if not killed and len(slots) == 3:
                    killed.append(engine.actors[0])
                    ray.kill(engine.actors[0])

        summary = search.run_policy(
            prepared,
            engine,
            "fair",
            epoch_s=0.3,
            workdir=str(tmp_path / "fair"),
            log=lambda *a: None,
            on_epoch=on_epoch,
        )
        assert killed and engine.actors[0] is not killed[0]  # slot 0 got a fresh actor
        assert engine.retried >= 1  # the dead actor's placements were measured elsewhere
    assert [(j["status"], j["iterations"]) for j in summary["jobs"]] == [("done", 4)] * 3
    # Every sample of every iteration was measured: no failure leaked into the best step times.
    assert all(j["best_step_time"] is not None for j in summary["jobs"])


def test_too_few_slot_resources_is_an_input_error(local_ray):
    from placer.core.errors import InputError

    with pytest.raises(InputError, match="offers 4 'placer_slot' resources, fewer than --slots=5"):
        RayEngine(5)
