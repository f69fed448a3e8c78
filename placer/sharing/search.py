"""Concurrent placement searches sharing a pool of measurement slots (SLAQ).

Zhang et al., "SLAQ: Quality-Driven Scheduling for Distributed Machine
Learning" (SoCC 2017), applied to placement searches: every search of a jobs
file runs its method (placer.rl.methods: placer-train's default unless the
job names one, e.g. `"method": "seq2seq"`) in its own thread; every
epoch the allocator (SLAQ or fair share) reassigns the pool's slots. A search
holding k slots measures k placements per iteration in parallel, one per
slot, through the engine (threads here, or Ray actors on several machines);
each iteration reports its loss (by default REINFORCE's moving-average
baseline, a smoothed mean sqrt step time, and for the other methods the mean
sqrt step time of the iteration; see report.search_loss and
report.DEFAULT_LOSS) to its SLAQ JobState. A search without
slots waits. A search that raises is marked failed and its slots go back to
the pool at once.
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
import time
from collections.abc import Callable, Hashable

from placer.core import fmt, heartbeat, names, resume_check, stop
from placer.core.errors import InputError
from placer.sharing import allocators, running
from placer.sharing import report as search_report
from placer.sharing.jobs import Workload
from placer.sharing.prepare import Prepared, prepare  # noqa: F401 (search.prepare: the jobs made ready)
from placer.sharing.running import Search


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


def run_policy(
    prepared: list[Prepared],
    engine,
    policy: str,
    *,
    epoch_s: float,
    workdir: str,
    normalise: str = "max_change",
    objective: str = "total",
    loss: str = search_report.DEFAULT_LOSS,
    log: Callable = print,
    on_epoch: Callable | None = None,
    resume: bool = False,
    lockstep: bool = False,
) -> dict:
    """Runs every search of the workload under one allocation policy until all end.

    In lockstep the run's clock counts epochs instead of wall time: each
    epoch every search holding slots takes exactly one iteration, the epoch
    ends when all have, and each epoch (and iteration) counts `epoch_s`
    seconds, arrivals included. Nothing then depends on thread timing, so the
    same seeds give the same result.

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
      resume: continue a killed run in `workdir`: its clock, allocations and
        every search from its last checkpoint (see placer.sharing.running).
      lockstep: one iteration per search and epoch, on a clock of epochs (above).

    Returns:
      The summary (also written to workdir/summary.json).
    """
    allocator = make_allocator(policy, epoch_s, normalise, objective)
    lock = threading.Condition()
    wake = threading.Event()
    folders = names.slugs([p.spec.name for p in prepared], "job name")
    searches = [
        Search(p, engine, names.inside(workdir, "jobs", folders[p.spec.name]), lock, wake, loss, resume)
        for p in prepared
    ]
    elapsed, epochs, allocations, records = running.load_run(workdir) if resume else (0.0, [], [], None)
    if lockstep and resume:  # from the end of the last whole epoch (none: from the start)
        records = records or {}
        for s in searches:
            s.resume_at = records.get(s.name, {"iterations": 0, "start_s": None, "status": "not started"})
            if s.resume_at["status"] == "not started":
                s.resume_at = {**s.resume_at, "iterations": 0}
    t0 = time.monotonic() - elapsed
    clock = [elapsed]  # lockstep: the run's seconds, epoch_s per epoch
    if lockstep:
        for s in searches:
            s.lockstep_s = epoch_s
    run_t0 = (lambda: clock[0]) if lockstep else t0  # what the searches read the run's time from
    beat = heartbeat.Heartbeat(min(10 * epoch_s, heartbeat.EVERY_S), log=log)  # on wall time, whatever the clock
    beat.last = -math.inf  # the first epoch prints at once
    try:
        while True:
            now = clock[0] if lockstep else time.monotonic() - t0
            for s in searches:
                if s.status == "not started" and s.prep.spec.arrival_s <= now:
                    s.start(run_t0)
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
            if not lockstep:  # on wall time: the epoch's start (lockstep saves each whole epoch's end)
                running.save_run(workdir, now, epochs, allocations)
            if on_epoch is not None:
                on_epoch(now, {s.name: len(s.slots) for s in active})
            line = functools.partial(_progress_line, policy, now, active)
            beat(line)
            if lockstep:
                if _take_turns(active, lock, clock, now + epoch_s, functools.partial(beat, line)):
                    break
                running.save_run(workdir, clock[0], epochs, allocations, {s.name: s.record() for s in searches})
                continue
            arrivals = [s.prep.spec.arrival_s - now for s in searches if s.status == "not started"]
            if _wait(wake, max(0.0, min([epoch_s, *arrivals]))):
                break
            wake.clear()
    finally:
        with lock:
            for s in searches:
                s.stop = True
            lock.notify_all()
        for s in searches:
            if s.thread is not None:
                s.thread.join()
    request = stop.current()
    if request is not None and request.signum is not None:  # each search saved its last iteration
        raise stop.Stopped(sum(len(s.curve.losses) for s in searches), request.exit_code)
    wall = clock[0] if lockstep else time.monotonic() - t0
    curves = [s.curve for s in searches]
    summary = search_report.summarise(policy, curves, epochs, slots=engine.num_slots, epoch_s=epoch_s, wall_s=wall)
    summary["engine"] = {"retried_chunks": engine.retried, "timed_out_chunks": engine.timed_out}
    slaq = policy.startswith("slaq")
    summary.update(normalise=normalise if slaq else None, objective=objective if slaq else None, loss=loss)
    search_report.write_outputs(workdir, summary, curves, allocations)
    return summary


def _progress_line(policy: str, now: float, active: list[Search]) -> str:
    its = ", ".join(f"{s.name}: {len(s.slots)} slots, it {len(s.curve.losses)}" for s in active)
    return f"[{policy} {fmt.seconds(now):>8}] {its}"


def _take_turns(
    active: list[Search], lock: threading.Condition, clock: list[float], end: float, tick: Callable[[], object]
) -> bool:
    """One lockstep epoch: each search holding slots takes one iteration; the clock then reads `end`.

    `tick()` is called while the iterations run, so that an epoch longer than
    the heartbeat's interval still prints progress lines.

    Returns:
      True when SIGINT or SIGTERM asked the run to stop (the iterations under way finish first).
    """
    with lock:
        clock[0] = end  # the iterations of this epoch end with it
        granted = [s for s in active if s.slots]
        for s in granted:
            s.turns = 1
        lock.notify_all()
        while any(s.turns > 0 and s.status == "running" for s in granted):
            if stop.requested():
                return True
            lock.wait(0.2)
            tick()
    return stop.requested()


def _wait(wake: threading.Event, seconds: float) -> bool:
    """Waits until `wake` is set or `seconds` pass; True when SIGINT or SIGTERM asked the run to stop.

    Waits in short slices: the signal handler only records the signal (it
    cannot safely set the event the main thread may be holding).
    """
    end = time.monotonic() + seconds
    while not stop.requested():
        left = end - time.monotonic()
        if left <= 0 or wake.wait(min(left, 0.2)):
            return False
    return True


def check_workdir(workdir: str, policies: list[str], job_names: list[str] = (), *, overwrite: bool = False) -> None:
    """Refuses to write over an earlier run's outputs, or (without `overwrite`) over a file this run would write.

    Raises:
      InputError: a policy folder holds an earlier run, one of the outputs
        exists (naming it), or two job names would share a file.
    """
    for p in policies:
        if os.path.exists(os.path.join(workdir, p, "summary.json")) or os.path.exists(os.path.join(workdir, p, "jobs")):
            raise InputError(f"{os.path.join(workdir, p)}: holds an earlier run; pick another --workdir")
        files = search_report.output_files(os.path.join(workdir, p), list(job_names))
        if not overwrite:
            names.refuse_foreign(files)


def run_inputs(work: Workload, settings: dict) -> dict[str, str]:
    """What a run's checkpoints are made from (placer/core/resume_check.py): the jobs file, every job's
    graph or model config and cluster, and the run's settings."""
    specs = [(j.graph_path or j.config_spec, j.cluster) for j in work.jobs]
    return {
        "jobs file": resume_check.spec_digest(work.path),
        "graphs": resume_check.digest([resume_check.spec_digest(g) for g, _ in specs]),
        "clusters": resume_check.digest([resume_check.spec_digest(c) for _, c in specs]),
        **{k: str(v) for k, v in settings.items()},
    }


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
    loss: str = search_report.DEFAULT_LOSS,
    log: Callable = print,
    resume: bool | str = False,
    measure: str = "sim",
    lockstep: bool = False,
    overwrite: bool = False,
) -> dict[str, dict]:
    """Runs a jobs file under one policy or several ("both": SLAQ, then fair share; "all": every allocator).

    Args:
      work: the checked jobs file.
      slots: slots in the pool (> 0).
      epoch_s: seconds between reallocations (> 0).
      policy: an allocator name (placer.sharing.allocators.ALLOCATORS), a list of them, "both" or "all".
      workdir: output folder; each policy writes into workdir/<policy>/.
      engine_factory: engine_factory(slots) -> Engine; a fresh engine per policy.
      normalise: SLAQ's normaliser ("max_change" or "fitted_total", see placer.sharing.slaq).
      objective: SLAQ's objective, "total" or "maxmin".
      loss: what each search reports as its loss (report.LOSSES).
      log: where progress lines and the tables go.
      resume: continue a killed run in `workdir` (same jobs and flags): policies
        that finished are read back, the others continue where they were (from
        the start when the run was killed before it wrote anything).
      measure: the backend the engines' workers measure with ("sim",
        "grappler", "session"; the engines' factory must build the same kind).
      lockstep: run every policy in lockstep (see `run_policy`): the same seeds give the same result.
      overwrite: replace output files of a fresh run that exist already (written by something else).

    Returns:
      policy -> summary.

    Raises:
      InputError: bad slots, epoch or policy, a used workdir (unless
        resuming), or a job that cannot be prepared.
    """
    if slots <= 0:
        raise InputError(f"--slots must be positive, got {slots}")
    if not epoch_s > 0:
        raise InputError(f"--epoch_s must be positive, got {epoch_s}")
    if loss not in search_report.LOSSES:
        raise InputError(f"unknown loss {loss!r} (valid: {', '.join(search_report.LOSSES)})")
    if isinstance(policy, str):  # "both": SLAQ, then the work-conserving fair share
        policy = {"both": ["slaq", "fair"], "all": list(allocators.ALLOCATORS)}.get(policy, [policy])
    policies = list(policy)
    for p in policies:
        make_allocator(p, epoch_s, normalise, objective)
    settings = dict(slots=slots, epoch_s=epoch_s, normalise=normalise, objective=objective, loss=loss, measure=measure)
    made_from = run_inputs(work, {**settings, "lockstep": lockstep})
    if resume and not resume_check.check(workdir, made_from, resume, log):
        resume_check.clear(workdir, [*allocators.ALLOCATORS, running.RUN_FILE, resume_check.RECORD])
        resume = False
    if not resume:
        check_workdir(workdir, policies, [j.name for j in work.jobs], overwrite=overwrite)
    elif not os.path.isdir(workdir):  # killed before it wrote anything: nothing to continue
        log(f"{workdir}: nothing to resume (no such folder); starting over")
    prepared = prepare(work, measure=measure, log=log)
    if not resume:
        resume_check.record(workdir, made_from)
    out = {}
    for p in policies:
        done = os.path.join(workdir, p, "summary.json")
        if resume and os.path.exists(done):
            with open(done) as f:
                out[p] = json.load(f)
            continue
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
                resume=resume,
                lockstep=lockstep,
            )
        log("")
        log(search_report.format_table(out[p]))
    if "fair" in out and len(out) > 1:
        log("")
        log(search_report.compare_to_fair(out))
    return out
