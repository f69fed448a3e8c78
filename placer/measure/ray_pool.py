"""Measurement workers as Ray actors, one per slot: the Ray engine of `placer-search`,
`placer-train` and `placer-pretrain`.

Each actor holds one unit of the custom resource `placer_slot` (so a cluster
offers as many slots as its nodes declare, e.g. `ray start
--resources='{"placer_slot": 4}'` on a machine with 4 devices) and no CPU.
Every job's graph, cluster and (for the TF backends) serialized MetaGraphDef
go into the object store once (`ray.put`); an actor fetches them the first
time it measures for that job and builds its measurer in its own process
(with `registry.MeasurerFactory("session")`, a real TF session on the logical CPUs it
sets up first), so later calls carry only the device indices of the placements. The
allocator of `placer-search` moves slots between searches by sending their
placements to other actors; nothing restarts. `RayMeasurer` gives one graph
every slot behind the `Measurer` protocol, for the learners. A dead actor
(e.g. after `ray.kill`) is replaced by a fresh one and its placements are
measured again elsewhere. Ray is imported only when this engine is used
(setup.py extra "ray").
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import weakref
from collections.abc import Hashable, Sequence

import numpy as np

from placer.core.errors import InputError
from placer.core.measurement import Measurement
from placer.core.placement import Placement
from placer.measure.pool import BUGS, Engine, MeasurerBug, WorkerDied, build_measurer

RESOURCE = "placer_slot"  # custom Ray resource: one per measurement slot
INSTALL = "pip install 'placer-toolkit[ray]' (in a checkout: pip install -e '.[ray]')"


def import_ray():
    """The `ray` module.

    Raises:
      InputError: Ray is not installed; the message gives the install command.
    """
    try:
        import ray  # noqa: PLC0415 (an optional extra, imported only when asked for)
    except ImportError:
        raise InputError(f"--engine=ray needs Ray, an optional extra: {INSTALL}") from None
    return ray


class SlotWorker:
    """The body of one Ray actor: measures placements of the jobs it was sent.

    Args:
      factory: `factory(graph, cluster[, model]) -> Measurer` (see Engine).
      measure_seconds: seconds held per placement on top of measuring it.
      omp_threads: OMP_NUM_THREADS of the process that started the actor, or
        None. Ray sets it to 1 in an actor that holds no CPU; measurements run
        with the threads a training process would have instead.
    """

    def __init__(self, factory, measure_seconds: float = 0.0, omp_threads: str | None = None):
        if omp_threads is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = omp_threads
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
      flag: the command-line flag that gave `num_slots`, for messages.
      **options: see Engine (factory must be picklable).

    Raises:
      InputError: Ray is not installed, cannot connect, or offers too few slots.
    """

    def __init__(self, num_slots: int, *, address: str | None = None, flag: str = "--slots", **options):
        super().__init__(**options)
        ray = import_ray()
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            try:
                if address:
                    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
                else:
                    ray.init(
                        resources={RESOURCE: num_slots},
                        log_to_driver=False,
                        include_dashboard=False,
                        logging_level=logging.ERROR,  # not Ray's start-up lines among the run's own
                    )
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise InputError(f"--ray_address={address}: cannot start or reach Ray ({e})") from None
            self._started = True
        have = int(ray.cluster_resources().get(RESOURCE, 0))
        if have < num_slots:
            raise InputError(
                f"the Ray cluster offers {have} {RESOURCE!r} resources, fewer than {flag}={num_slots} "
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
        return self._actor_cls.options(resources={RESOURCE: 1}, num_cpus=0).remote(
            self.factory, self.measure_seconds, os.environ.get("OMP_NUM_THREADS")
        )

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


class RayMeasurer:
    """The `Measurer` protocol for one graph over every slot of a RayEngine.

    A call's placements are spread round robin over the slots and come back in
    their order, so a search seeded alike takes the same steps as with an
    in-process measurer of the same kind (step times as the backend gives
    them: the simulator's exactly, a session's with its run-to-run noise).

    Args:
      engine: the actors; several RayMeasurers (one per graph) may share it.
      graph: the OpGraph the placements place.
      cluster: its Cluster (for "session": the devices each actor sets up).
      model: the serialized MetaGraphDef for the TF backends, else None.
      owns_engine: close the engine with this measurer.
    """

    _ids = itertools.count()

    def __init__(self, engine: RayEngine, graph, cluster, model: bytes | None = None, *, owns_engine: bool = False):
        self.engine = engine
        self.job = ("measurer", next(RayMeasurer._ids))
        engine.add_job(self.job, graph, cluster, model)
        # Stops the actors when the measurer is dropped without close() (an error before the search ended).
        self._finalizer = weakref.finalize(self, _release, engine, self.job, owns_engine)

    def measure(self, placements: Sequence[Placement]) -> list[Measurement]:
        """One Measurement per placement, in order, measured in parallel on the engine's slots.

        Raises:
          WorkersLost: with the engine's `fatal_loss`, some placements' workers died on every try.
        """
        placements = list(placements)
        return self.engine.measure(self.job, placements, self.engine.slot_ids) if placements else []

    def close(self) -> None:
        """Forgets the graph on every actor, and stops the engine if this measurer owns it."""
        self._finalizer()


def _release(engine: RayEngine, job, owns_engine: bool) -> None:
    engine.remove_job(job)
    if owns_engine:
        engine.close()
