"""The Ray engine of `placer-search`: measurement workers as Ray actors, one per slot.

Each actor holds one unit of the custom resource `placer_slot` (so a cluster
offers as many slots as its nodes declare, e.g. `ray start
--resources='{"placer_slot": 4}'` on a machine with 4 devices) and no CPU.
Every job's graph, cluster and (for the TF backends) serialized MetaGraphDef
go into the object store once (`ray.put`); an actor fetches them the first
time it measures for that job and builds its measurer in its own process
(with `MeasurerFactory("session")`, a real TF session on the logical CPUs it
sets up first), so later calls carry only the device indices of the placements. The
allocator moves slots between searches by sending their placements to other
actors; nothing restarts. A dead actor (e.g. after `ray.kill`) is replaced by
a fresh one and its placements are measured again elsewhere. Ray is imported
only when this engine is used (setup.py extra "ray").
"""

from __future__ import annotations

import time
from collections.abc import Hashable

import numpy as np

from placer.core.errors import InputError
from placer.core.placement import Placement
from placer.sharing.engines import BUGS, Engine, MeasurerBug, WorkerDied, build_measurer

RESOURCE = "placer_slot"  # custom Ray resource: one per measurement slot


class SlotWorker:
    """The body of one Ray actor: measures placements of the jobs it was sent.

    Args:
      factory: `factory(graph, cluster[, model]) -> Measurer` (see Engine).
      measure_seconds: seconds held per placement on top of measuring it.
    """

    def __init__(self, factory, measure_seconds: float = 0.0):
        self.factory = factory
        self.measure_seconds = float(measure_seconds)
        self.jobs: dict = {}

    def measure(self, job_id, payload: list, rows: list) -> list:
        """Measures placements given as (devices [n_ops], groups [n_ops] or None) rows.

        Args:
          job_id: the job.
          payload: [ObjectRef of (graph, cluster, model)], wrapped in a list so
            Ray resolves it only here, on the first call for the job; model is
            the serialized MetaGraphDef (bytes) of the TF backends, or None.
          rows: one (devices, groups) per placement.
        """
        import ray  # noqa: PLC0415

        if job_id not in self.jobs:
            graph, cluster, model = ray.get(payload[0])
            measurer = build_measurer(self.factory, graph, cluster, model)
            self.jobs[job_id] = (graph, cluster, graph.fingerprint(), tuple(graph.names), measurer)
        graph, cluster, fingerprint, names, measurer = self.jobs[job_id]
        placements = [
            Placement(
                np.asarray(d, np.int32).copy(),
                cluster.device_names,
                None if g is None else np.asarray(g, np.int32).copy(),
                graph.name,
                fingerprint,
                names,
            )
            for d, g in rows
        ]
        res = measurer.measure(placements)
        if self.measure_seconds > 0:
            time.sleep(self.measure_seconds * len(placements))
        return list(res)

    def forget(self, job_id) -> None:
        self.jobs.pop(job_id, None)

    def ping(self) -> bool:
        return True


class RayEngine(Engine):
    """Measurement slots as Ray actors.

    Args:
      num_slots: actors to start; the cluster must offer that many `placer_slot` resources.
      address: Ray cluster address (`ray.init(address=...)`); None starts a
        local Ray with `num_slots` slot resources, unless Ray is already initialised.
      **options: see Engine (factory must be picklable).

    Raises:
      InputError: Ray is not installed, cannot connect, or offers too few slots.
    """

    def __init__(self, num_slots: int, *, address: str | None = None, **options):
        super().__init__(**options)
        try:
            import ray  # noqa: PLC0415
        except ImportError:
            raise InputError("--engine=ray needs Ray: pip install -e '.[ray]'") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            try:
                if address:
                    ray.init(address=address, log_to_driver=False)
                else:
                    ray.init(resources={RESOURCE: num_slots}, log_to_driver=False, include_dashboard=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise InputError(f"--ray_address={address}: cannot start or reach Ray ({e})") from None
            self._started = True
        have = int(ray.cluster_resources().get(RESOURCE, 0))
        if have < num_slots:
            raise InputError(
                f"the Ray cluster offers {have} {RESOURCE!r} resources, fewer than --slots={num_slots} "
                f"(start its nodes with --resources='{{\"{RESOURCE}\": N}}')"
            )
        self._actor_cls = ray.remote(SlotWorker)
        self._refs: dict[Hashable, object] = {}
        self.add_slots(num_slots)

    @property
    def actors(self) -> dict[int, object]:
        """slot -> its actor."""
        return self._workers

    def _new_worker(self):
        return self._actor_cls.options(resources={RESOURCE: 1}, num_cpus=0).remote(self.factory, self.measure_seconds)

    def _stop_worker(self, worker) -> None:
        self._kill(worker)

    def add_job(self, job_id, graph, cluster, model=None) -> None:
        super().add_job(job_id, graph, cluster, model)
        self._refs[job_id] = self._ray.put((graph, cluster, model))

    def _forget(self, job_id) -> None:
        self._refs.pop(job_id, None)
        for a in list(self.actors.values()):
            a.forget.remote(job_id)

    def _submit(self, slot, job_id, placements):
        with self._lock:
            actor = self.actors.get(slot)
        if actor is None:
            return None, WorkerDied(f"slot {slot} was removed")
        rows = [(p.devices, p.groups) for p in placements]
        return actor, actor.measure.remote(job_id, [self._refs[job_id]], rows)

    def _result(self, handle, timeout):
        ray = self._ray
        if isinstance(handle[1], WorkerDied):
            raise handle[1]
        try:
            return ray.get(handle[1], timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise TimeoutError from None
        except ray.exceptions.RayTaskError as e:  # the measurer raised inside a live actor
            text = f"{type(e.cause).__name__}: {e.cause}" if e.cause is not None else " ".join(str(e).split())[:200]
            if isinstance(e.cause, BUGS):
                raise MeasurerBug(text) from None
            raise WorkerDied(text) from None
        except ray.exceptions.RayError as e:  # actor died or its worker process crashed
            raise WorkerDied(" ".join(str(e).split())[:200]) from None

    def _replace(self, slot, handle, *, hung):
        with self._lock:
            old = self.actors.get(slot)
            if old is None or old is not handle[0]:
                return  # removed, or already replaced after another search's call failed
            self.actors[slot] = self._new_worker()
        self._kill(old)

    def _kill(self, actor) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except (ValueError, self._ray.exceptions.RayError):
            pass  # the actor is already gone: nothing left to stop

    def close(self) -> None:
        super().close()
        if self._started:
            self._ray.shutdown()
