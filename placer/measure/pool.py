"""Measurement engines: a pool of slots that measure placements in parallel.

A slot is one measurement worker (a device in a real cluster). A search of
`placer-search` holds some slots for an epoch, a search of `placer-train` all
of them; `Engine.measure` spreads one iteration's placements over the given
slots, waits for them and returns the measurements in the placements' order.
Faults lose no search: a worker that raises or dies has its placements
measured again on another slot (up to `max_retries` times; then they count as
failed with ERROR, or, with `fatal_loss`, the call raises WorkersLost), and a
worker that hangs past the time-out is replaced and its placements count as
failed with TIMEOUT. The in-process engine (threads on this machine) lives
here; the Ray engine for several machines is in `placer.measure.ray_pool`. No
TensorFlow.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import queue
import threading
import time
from collections.abc import Callable, Hashable, Sequence

from placer.core.errors import RunStopped
from placer.core.measurement import ERROR, TIMEOUT, Measurement
from placer.measure.simulator import Simulator


class WorkerDied(Exception):  # noqa: N818 (a state, not a programming error)
    """The worker measuring a chunk faulted or is gone; the chunk may be measured elsewhere."""


class WorkersLost(RunStopped):
    """Placements whose workers died on every try (with `fatal_loss`): the pool cannot measure any more."""


class MeasurerBug(Exception):  # noqa: N818 (named for what it reports)
    """The measurer raised a programming error: re-raised to the search, never retried or
    counted as a failed measurement."""


# Exceptions that are bugs in the measurer (or its inputs) rather than faults of the worker or
# device: measuring the chunk elsewhere would raise them again.
BUGS = (TypeError, AttributeError, NameError, KeyError, IndexError, AssertionError, ZeroDivisionError, ImportError)


def worker_fault(e: BaseException) -> Exception:
    """The exception a worker reports for `e` raised while measuring: MeasurerBug for BUGS, else WorkerDied."""
    text = f"{type(e).__name__}: {e}"
    return MeasurerBug(text) if isinstance(e, BUGS) else WorkerDied(text)


def simulator(graph, cluster, model: bytes | None = None) -> Simulator:
    """The default factory: the simulator of `graph` on `cluster` (a TF `model` is not needed)."""
    return Simulator(graph, cluster)


def build_measurer(factory: Callable, graph, cluster, model: bytes | None):
    """`factory(graph, cluster)`, or `factory(graph, cluster, model)` for a job with a TF model."""
    return factory(graph, cluster) if model is None else factory(graph, cluster, model)


def spread(count: int, slots: int) -> list[list[int]]:
    """Splits placement indices 0..count-1 into at most `slots` chunks, round robin.

    >>> spread(5, 2)
    [[0, 2, 4], [1, 3]]
    """
    k = max(1, min(int(slots), count))
    return [list(range(i, count, k)) for i in range(k)] if count else []


class Engine:
    """A pool of measurement slots, numbered from 0; subclasses run the workers.

    Args:
      measure_timeout_s: seconds per placement after which a chunk counts as hung.
      max_retries: times a chunk whose worker died is sent to another slot.
      measure_seconds: seconds a worker is held per placement on top of measuring
        it (emulates a real device's run time with the simulator).
      factory: `factory(graph, cluster) -> Measurer`, or `factory(graph,
        cluster, model)` for a job with a model (its serialized MetaGraphDef),
        built once per worker and job; must be picklable for Ray; default
        `simulator` (placer.measure.registry.MeasurerFactory builds the others).
      fatal_loss: placements whose worker died on every try raise WorkersLost
        instead of counting as failed (ERROR): a learner then stops rather than
        learn from a fault of the workers.
    """

    def __init__(
        self,
        *,
        measure_timeout_s: float = 60.0,
        max_retries: int = 1,
        measure_seconds: float = 0.0,
        factory: Callable | None = None,
        fatal_loss: bool = False,
    ):
        self.measure_timeout_s = float(measure_timeout_s)
        self.max_retries = int(max_retries)
        self.measure_seconds = float(measure_seconds)
        self.factory = factory if factory is not None else simulator
        self.fatal_loss = bool(fatal_loss)
        self._jobs: dict[Hashable, tuple] = {}  # job -> (graph, cluster, model bytes or None)
        self._workers: dict[int, object] = {}  # slot -> its worker (thread or actor)
        self._next = 0  # number of the next new slot
        self._lock = threading.Lock()
        self.retried = 0  # chunks sent again after their worker died
        self.timed_out = 0  # chunks given up as hung

    # ----- what subclasses provide ----------------------------------------

    def _new_worker(self):
        """Starts one worker."""
        raise NotImplementedError

    def _stop_worker(self, worker) -> None:
        """Stops a worker removed from the pool (work queued on it fails over)."""
        raise NotImplementedError

    def _submit(self, slot: int, job_id: Hashable, placements: list):
        raise NotImplementedError

    def _result(self, handle, timeout: float) -> list[Measurement]:
        """The chunk's measurements; raises WorkerDied or TimeoutError."""
        raise NotImplementedError

    def _replace(self, slot: int, handle, *, hung: bool) -> None:
        """Replaces the worker that ran `handle` (hung=True: it hangs) by a fresh one, unless already done."""
        raise NotImplementedError

    def _forget(self, job_id: Hashable) -> None:
        """Lets workers drop their measurer of a finished job."""

    # ----- shared logic --------------------------------------------------

    @property
    def num_slots(self) -> int:
        return len(self._workers)

    @property
    def slot_ids(self) -> list[int]:
        return sorted(self._workers)

    def add_slots(self, n: int) -> list[int]:
        """Starts n more workers; returns their slot numbers."""
        with self._lock:
            new = list(range(self._next, self._next + n))
            self._next += n
            for s in new:
                self._workers[s] = self._new_worker()
        return new

    def remove_slots(self, slots: Sequence[int]) -> None:
        """Stops the workers of these slots."""
        with self._lock:
            gone = [self._workers.pop(s) for s in slots if s in self._workers]
        for w in gone:
            self._stop_worker(w)

    def close(self) -> None:
        """Stops every worker."""
        self.remove_slots(list(self._workers))

    def add_job(self, job_id: Hashable, graph, cluster, model: bytes | None = None) -> None:
        """Registers the graph, cluster and (for the TF backends) serialized MetaGraphDef of a job."""
        with self._lock:
            self._jobs[job_id] = (graph, cluster, model)

    def remove_job(self, job_id: Hashable) -> None:
        with self._lock:
            self._jobs.pop(job_id, None)
        self._forget(job_id)

    def measure(self, job_id: Hashable, placements: Sequence, slots: Sequence[int]) -> list[Measurement]:
        """Measures a job's placements spread over `slots`, in parallel.

        Args:
          job_id: a job given to add_job.
          placements: the placements (of the job's graph).
          slots: the slot numbers the job holds (at least one).

        Returns:
          One Measurement per placement, in order; failed ones carry TIMEOUT
          (hung worker) or ERROR (worker died on every try).

        Raises:
          MeasurerBug: the measurer raised a programming error (see BUGS).
          WorkersLost: with `fatal_loss`, a worker died on every try.
        """
        if not slots:
            raise ValueError(f"job {job_id}: measure without slots")
        placements = list(placements)
        num_devices = self._jobs[job_id][1].num_devices
        out: list[Measurement | None] = [None] * len(placements)
        chunks = spread(len(placements), len(slots))
        rotation = itertools.cycle(range(len(slots)))
        live = []  # (chunk, slot, handle, deadline, attempt)
        for chunk in chunks:
            live.append(self._send(chunk, slots[next(rotation)], job_id, placements))
        while live:
            chunk, slot, handle, deadline, attempt = live.pop(0)
            try:
                res = self._result(handle, max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                self.timed_out += 1
                self._replace(slot, handle, hung=True)
                msg = f"slot {slot}: no result within {self.measure_timeout_s * len(chunk):g} s"
                for i in chunk:
                    out[i] = Measurement.failed(TIMEOUT, msg, num_devices)
                continue
            except WorkerDied as e:
                self._replace(slot, handle, hung=False)
                if attempt < self.max_retries:
                    self.retried += 1
                    other = slots[next(rotation)]
                    live.append(self._send(chunk, other, job_id, placements, attempt + 1))
                elif self.fatal_loss:
                    raise WorkersLost(f"{attempt + 1} measurement workers in a row died ({e})") from None
                else:
                    for i in chunk:
                        out[i] = Measurement.failed(ERROR, f"slot {slot}: worker died: {e}", num_devices)
                continue
            for i, m in zip(chunk, res, strict=True):
                out[i] = m
        return out

    def _send(self, chunk, slot, job_id, placements, attempt=0):
        handle = self._submit(slot, job_id, [placements[i] for i in chunk])
        deadline = time.monotonic() + self.measure_timeout_s * len(chunk)
        return chunk, slot, handle, deadline, attempt

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _SlotThread:
    """One in-process worker: a daemon thread measuring the chunks queued to it."""

    def __init__(self, engine: InProcessEngine, tasks: queue.Queue):
        self.engine = engine
        self.tasks = tasks
        self.retired = False
        self.measurers: dict = {}
        self.thread = threading.Thread(target=self._loop, daemon=True, name="placer-slot")
        self.thread.start()

    def _loop(self) -> None:
        while not self.retired:
            task = self.tasks.get()
            if task is None or self.retired:
                if task is not None:
                    self.tasks.put(task)  # the replacement worker takes it
                return
            job_id, placements, future = task
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(self._measure(job_id, placements))
                except Exception as e:  # noqa: BLE001 (a fault is retried elsewhere, a bug re-raised by measure)
                    future.set_exception(worker_fault(e))

    def _measure(self, job_id, placements) -> list[Measurement]:
        if job_id not in self.measurers:
            graph, cluster, model = self.engine._jobs[job_id]
            self.measurers[job_id] = build_measurer(self.engine.factory, graph, cluster, model)
        res = self.measurers[job_id].measure(placements)
        if self.engine.measure_seconds > 0:
            time.sleep(self.engine.measure_seconds * len(placements))
        return list(res)


class InProcessEngine(Engine):
    """Measurement workers as threads on this machine (the session backend's threads share its CPU devices).

    Args:
      num_slots: workers to start.
      **options: see Engine.
    """

    def __init__(self, num_slots: int, **options):
        super().__init__(**options)
        self.add_slots(num_slots)

    def _new_worker(self):
        return _SlotThread(self, queue.Queue())

    def _stop_worker(self, worker) -> None:
        worker.retired = True
        worker.tasks.put(None)

    def _submit(self, slot, job_id, placements):
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            worker = self._workers.get(slot)
        if worker is None:
            future.set_exception(WorkerDied(f"slot {slot} was removed"))
        else:
            worker.tasks.put((job_id, placements, future))
        return worker, future

    def _result(self, handle, timeout):
        return handle[1].result(timeout=timeout)

    def _replace(self, slot, handle, *, hung):
        if not hung:
            return  # the thread caught the fault and keeps serving
        with self._lock:
            old = self._workers.get(slot)
            if old is None or old is not handle[0]:
                return
            old.retired = True  # a hung thread cannot be stopped; it exits after its task
            self._workers[slot] = _SlotThread(self, old.tasks)  # takes over the queued chunks

    def _forget(self, job_id):
        for w in list(self._workers.values()):
            w.measurers.pop(job_id, None)
