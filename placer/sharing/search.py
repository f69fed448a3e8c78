"""Concurrent placement searches sharing a pool of measurement slots (SLAQ).

Zhang et al., "SLAQ: Quality-Driven Scheduling for Distributed Machine
Learning" (SoCC 2017), applied to the RL placer of Mirhoseini et al. (ICML
2017): every search of a jobs file runs REINFORCE in its own thread; every
epoch the allocator (SLAQ or fair share) reassigns the pool's slots. A search
holding k slots samples k placements per iteration (its REINFORCE batch) and
measures them in parallel, one per slot, through the engine (threads here, or
Ray actors on several machines); each iteration reports its loss, the mean
sqrt step time of its samples (failed samples at the trainer's failing step
time, i.e. minus the mean reward), to its SLAQ JobState. A search without
slots waits. A search that raises is marked failed and its slots go back to
the pool at once.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections.abc import Callable, Hashable

import numpy as np

from graphs import local_cluster, pipeline
from placer.core.errors import InputError, one_line
from placer.rl import rl_math
from placer.rl.reinforce import Trainer
from placer.sharing import allocators
from placer.sharing import report as search_report
from placer.sharing.jobs import JobSpec, Workload
from placer.sharing.report import JobCurve
from placer.sharing.slaq import JobState

POLICIES = allocators.ALLOCATORS
BOTH = ("slaq", "fair")  # what --policy=both runs: SLAQ, then the work-conserving fair share


@dataclasses.dataclass
class Prepared:
    """A job with its graph, cluster and placement problem built (or the error that stopped it)."""

    spec: JobSpec
    graph: object = None
    cluster: object = None
    problem: object = None
    error: str = ""


def prepare(work: Workload, *, log: Callable = print) -> list[Prepared]:
    """Builds every job's cost-annotated graph and placement problem (TF for model configs).

    A job whose preparation raises anything but InputError (e.g. its model
    fails to build) is kept with its error and fails alone when it starts.

    Raises:
      InputError: a job's graph or cluster cannot be used; the message names the job.
    """
    from placer.rl import problem as problem_lib

    out = []
    for spec in work.jobs:
        try:
            cluster = local_cluster.load(spec.cluster)
            loaded = pipeline.load_graph(
                cluster, config=None if spec.graph_path else spec.config, graph_path=spec.graph_path
            )
            problem, groups = problem_lib.make_problem(loaded.graph, cluster, spec.config.placer)
        except InputError as e:
            raise InputError(f"{work.path}: job {spec.name!r}: {e}") from None
        except Exception as e:  # noqa: BLE001 (the search fails, the others run)
            log(f"{spec.name}: cannot prepare: {one_line(e)}")
            out.append(Prepared(spec, error=one_line(e)))
            continue
        log(
            f"{spec.name}: {loaded.graph.name}, {loaded.graph.num_ops} ops, {groups.num_groups} groups, "
            f"{cluster.num_devices} devices ({cluster.name}), arrives at {spec.arrival_s:g} s, {spec.steps} steps"
        )
        out.append(Prepared(spec, loaded.graph, cluster, problem))
    return out


def make_allocator(policy: str, epoch_s: float, normalise: str = "max_change", objective: str = "total"):
    """The allocator of a policy (placer.sharing.allocators.ALLOCATORS).

    Raises:
      InputError: unknown policy, normaliser or objective.
    """
    try:
        return allocators.make_allocator(policy, epoch_s=epoch_s, objective=objective, normalise=normalise)
    except ValueError as e:
        raise InputError(str(e)) from None


def assign_slots(current: dict[Hashable, list[int]], want: dict[Hashable, int], pool: list[int]) -> dict:
    """Concrete slots per job for the next epoch, moving as few as possible.

    Each job keeps up to `want` of the slots it holds (its lowest first), then
    takes free slots of the pool, lowest first, in the order of `want`.

    Args:
      current: job -> slots it holds now.
      want: job -> number of slots for the next epoch (total <= len(pool)).
      pool: the slot numbers.

    Returns:
      job -> sorted slot numbers, for every job in `want`.

    >>> assign_slots({"a": [0, 1], "b": [2]}, {"a": 1, "b": 2}, [0, 1, 2, 3])
    {'a': [0], 'b': [1, 2]}
    """
    valid = set(pool)
    out = {j: sorted(s for s in current.get(j, []) if s in valid)[: max(0, n)] for j, n in want.items()}
    taken = {s for slots in out.values() for s in slots}
    free = [s for s in sorted(pool) if s not in taken]
    for j, n in want.items():
        extra, free = free[: n - len(out[j])], free[n - len(out[j]) :]
        out[j] = sorted(out[j] + extra)
    return out


class _SlotMeasurer:
    """The trainer's measurer: the job's placements go to the engine, on the job's slots."""

    def __init__(self, engine, job_id: str):
        self.engine = engine
        self.job_id = job_id
        self.slots: list[int] = []
        self.last: list = []

    def measure(self, placements):
        self.last = self.engine.measure(self.job_id, placements, self.slots)
        return self.last


class _Search:
    """One running search: its trainer, thread, slots, SLAQ state and curve."""

    def __init__(
        self, prep: Prepared, engine, workdir: str, lock: threading.Condition, wake: threading.Event, loss: str = "mean"
    ):
        self.prep = prep
        self.loss_kind = loss
        self.name = prep.spec.name
        self.engine = engine
        self.workdir = workdir
        self.lock = lock
        self.wake = wake
        self.state = JobState(self.name, max_slots=prep.spec.max_slots)
        self.curve = JobCurve(self.name)
        self.slots: list[int] = []
        self.stop = False
        self.thread: threading.Thread | None = None
        self.measurer = _SlotMeasurer(engine, self.name)
        self.trainer: Trainer | None = None

    @property
    def status(self) -> str:
        return self.curve.status

    def start(self, t0: float) -> None:
        spec = self.prep.spec
        self.curve.status = "running"
        self.curve.start_s = time.monotonic() - t0
        if self.prep.error:
            self._finish(t0, "failed", self.prep.error)
            return
        try:
            self.engine.add_job(self.name, self.prep.graph, self.prep.cluster)
            self.trainer = Trainer(
                self.prep.problem,
                self.measurer,
                spec.config.placer,
                self.workdir,
                seed=spec.seed,
                metadata={"cluster": self.prep.cluster.name, "measure": "sim"},
            )
        except Exception as e:  # noqa: BLE001 (a search that raises fails alone)
            self._finish(t0, "failed", one_line(e))
            return
        self.thread = threading.Thread(target=self._loop, args=(t0,), daemon=True, name=f"search-{self.name}")
        self.thread.start()

    def _wait_slots(self) -> list[int] | None:
        with self.lock:
            while not self.slots and not self.stop:
                self.lock.wait(0.5)
            return None if self.stop else list(self.slots)

    def _loop(self, t0: float) -> None:
        tc = self.trainer.tc
        try:
            for it in range(self.prep.spec.steps):
                slots = self._wait_slots()
                if slots is None:
                    break
                tc.samples_per_step = len(slots)
                self.measurer.slots = slots
                start = time.monotonic()
                stats = self.trainer.train_step()
                secs = time.monotonic() - start
                res = self.measurer.last
                times = np.array([m.step_time for m in res], dtype=np.float64)
                failed = np.array([not m.ok for m in res])
                mean_loss = float(-np.mean(rl_math.rewards(times, failed, tc.failing_step_time)))
                loss = search_report.search_loss(
                    self.loss_kind, mean_loss, float(stats["best_step_time"]), float(stats["baseline"])
                )
                with self.lock:
                    # Iteration 0 carries the TF tracing time: no runtime observation.
                    self.state.report(it, loss, None if it == 0 else secs, len(slots))
                    c = self.curve
                    c.times.append(time.monotonic() - t0)
                    c.losses.append(loss)
                    c.best.append(float(stats["best_step_time"]))
                    c.slots.append(len(slots))
                    c.seconds.append(secs)
            self.trainer.save()
            self._finish(t0, "done")
        except Exception as e:  # noqa: BLE001 (a search that raises fails alone)
            self._finish(t0, "failed", one_line(e))

    def _finish(self, t0: float, status: str, error: str = "") -> None:
        with self.lock:
            self.curve.status = status
            self.curve.error = error
            self.curve.end_s = time.monotonic() - t0
            self.slots = []
        self.engine.remove_job(self.name)
        self.wake.set()


def run_policy(
    prepared: list[Prepared],
    engine,
    policy: str,
    *,
    epoch_s: float,
    workdir: str,
    normalise: str = "max_change",
    objective: str = "total",
    loss: str = "mean",
    log: Callable = print,
    on_epoch: Callable | None = None,
) -> dict:
    """Runs every search of the workload under one allocation policy until all end.

    Args:
      prepared: the jobs (from `prepare`), in arrival order.
      engine: the measurement engine (its slots are the pool).
      policy: an allocator name (placer.sharing.allocators.ALLOCATORS).
      epoch_s: seconds between reallocations (also on every arrival and end).
      workdir: output folder of this run (per-job trainer folders under jobs/,
        curves, allocations.csv and summary.json).
      normalise: SLAQ's normaliser ("max_change" or "fitted_total", see placer.sharing.slaq).
      objective: SLAQ's objective, "total" or "maxmin".
      loss: what each search reports as its loss (report.LOSSES, see report.search_loss).
      log: where progress lines go.
      on_epoch: optional callback(run_seconds, {job: slots}) after each reallocation.

    Returns:
      The summary (also written to workdir/summary.json).
    """
    allocator = make_allocator(policy, epoch_s, normalise, objective)
    lock = threading.Condition()
    wake = threading.Event()
    searches = [_Search(p, engine, os.path.join(workdir, "jobs", p.spec.name), lock, wake, loss) for p in prepared]
    allocations: list[tuple] = []
    epochs: list[float] = []
    t0 = time.monotonic()
    last_print = -math.inf
    try:
        while True:
            now = time.monotonic() - t0
            for s in searches:
                if s.status == "not started" and s.prep.spec.arrival_s <= now:
                    s.start(t0)
            if all(s.status in ("done", "failed") for s in searches):
                break
            pool = list(engine.slot_ids)
            with lock:
                active = [s for s in searches if s.status == "running"]
                want = allocator.allocate([s.state for s in active], len(pool)) if active else {}
                given = assign_slots({s.name: s.slots for s in active}, want, pool)
                for s in active:
                    s.slots = given[s.name]
                lock.notify_all()
            epochs.append(now)
            allocations.extend((now, s.name, len(s.slots)) for s in active)
            if on_epoch is not None:
                on_epoch(now, {s.name: len(s.slots) for s in active})
            if now - last_print >= 10 * epoch_s:
                last_print = now
                log(
                    f"[{policy} {now:6.1f} s] "
                    + ", ".join(f"{s.name}: {len(s.slots)} slots, it {len(s.curve.losses)}" for s in active)
                )
            arrivals = [s.prep.spec.arrival_s - now for s in searches if s.status == "not started"]
            wake.wait(max(0.0, min([epoch_s, *arrivals])))
            wake.clear()
    finally:
        with lock:
            for s in searches:
                s.stop = True
            lock.notify_all()
        for s in searches:
            if s.thread is not None:
                s.thread.join()
    wall = time.monotonic() - t0
    curves = [s.curve for s in searches]
    summary = search_report.summarise(policy, curves, epochs, slots=engine.num_slots, epoch_s=epoch_s, wall_s=wall)
    summary["engine"] = {"retried_chunks": engine.retried, "timed_out_chunks": engine.timed_out}
    summary["normalise"] = normalise if policy.startswith("slaq") else None
    summary["objective"] = objective if policy.startswith("slaq") else None
    summary["loss"] = loss
    search_report.write_outputs(workdir, summary, curves, allocations)
    return summary


def check_workdir(workdir: str, policies: list[str]) -> None:
    """Refuses to write over an earlier run's outputs."""
    for p in policies:
        if os.path.exists(os.path.join(workdir, p, "summary.json")) or os.path.exists(os.path.join(workdir, p, "jobs")):
            raise InputError(f"{os.path.join(workdir, p)}: holds an earlier run; pick another --workdir")


def run_search(
    work: Workload,
    *,
    slots: int,
    epoch_s: float,
    policy: str | list[str],
    workdir: str,
    engine_factory: Callable,
    normalise: str = "max_change",
    objective: str = "total",
    loss: str = "mean",
    log: Callable = print,
) -> dict[str, dict]:
    """Runs a jobs file under one policy or both ("both": SLAQ, then fair share, on the same workload).

    Args:
      work: the checked jobs file.
      slots: slots in the pool (> 0).
      epoch_s: seconds between reallocations (> 0).
      policy: an allocator name (placer.sharing.allocators.ALLOCATORS), a list of them, or "both".
      workdir: output folder; each policy writes into workdir/<policy>/.
      engine_factory: engine_factory(slots) -> Engine; a fresh engine per policy.
      normalise: SLAQ's normaliser ("max_change" or "fitted_total", see placer.sharing.slaq).
      objective: SLAQ's objective, "total" or "maxmin".
      loss: what each search reports as its loss (report.LOSSES).
      log: where progress lines and the tables go.

    Returns:
      policy -> summary.

    Raises:
      InputError: bad slots, epoch or policy, a used workdir, or a job that cannot be prepared.
    """
    if slots <= 0:
        raise InputError(f"--slots must be positive, got {slots}")
    if not epoch_s > 0:
        raise InputError(f"--epoch_s must be positive, got {epoch_s}")
    if loss not in search_report.LOSSES:
        raise InputError(f"unknown loss {loss!r} (valid: {', '.join(search_report.LOSSES)})")
    policies = list(BOTH) if policy == "both" else ([policy] if isinstance(policy, str) else list(policy))
    for p in policies:
        make_allocator(p, epoch_s, normalise, objective)
    check_workdir(workdir, policies)
    prepared = prepare(work, log=log)
    out = {}
    for p in policies:
        with engine_factory(slots) as engine:
            out[p] = run_policy(
                prepared,
                engine,
                p,
                epoch_s=epoch_s,
                workdir=os.path.join(workdir, p),
                normalise=normalise,
                objective=objective,
                loss=loss,
                log=log,
            )
        log("")
        log(search_report.format_table(out[p]))
    if "fair" in out and len(out) > 1:
        log("")
        log(search_report.compare_to_fair(out))
    return out
