"""Replays a recorded SLAQ trace under any allocator, without TensorFlow.

The jobs of a trace CSV (docs/formats.md, "SLAQ trace") run in simulated
time through `bench.slaq_traces.simulate_sharing`, and each allocator's run
writes the outputs a live `placer-search` run writes (curves/<job>.csv,
curves.json, allocations.csv, summary.json, under workdir/<allocator>/),
with the same tables and the same comparison against the work-conserving
fair share. A trace's losses are taken as recorded: no smoothing.

Run:
  .venv/bin/python -m bench.slaq_replay --trace=bench/data/stress_trace.csv --slots=16 --policy=all --workdir=runs/replay

A bad trace, flag or workdir is one error line and exit status 2, as with
the project's binaries; SIGINT or SIGTERM ends the run between allocators,
and `--resume` reads back the allocators a stopped run finished.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable

import numpy as np
from absl import flags

from bench.slaq_traces import SharingResult, horizon, load_trace, simulate_sharing
from placer import cli, cli_flags
from placer.core import names, resume_check, stop
from placer.core.errors import InputError
from placer.sharing import allocators
from placer.sharing import report as search_report
from placer.sharing.report import JobCurve
from placer.sharing.slaq import DEFAULT_EPOCH_S, NORMALISERS


def to_curves(result: SharingResult) -> list[JobCurve]:
    """The replayed jobs as the JobCurves of a live run: best = running minimum loss,
    slots = the job's slots in the epoch each point ended in, seconds = time since the previous point."""
    per_job: dict[str, tuple[list, list]] = {}
    for t, job, s in result.allocations:
        per_job.setdefault(job, ([], []))
        per_job[job][0].append(t)
        per_job[job][1].append(s)
    out = []
    for job, arrival in zip(result.job_ids, result.arrivals, strict=True):
        times, losses = result.curves[job]
        epochs, slots = per_job.get(job, ([arrival], [0]))
        idx = np.clip(np.searchsorted(epochs, times, side="left") - 1, 0, len(slots) - 1)
        reached = len(times) > 1
        out.append(
            JobCurve(
                job,
                status="done" if reached else "not started",
                start_s=float(arrival),
                end_s=float(times[-1]) if reached else math.nan,
                times=[float(x) for x in times],
                losses=[float(x) for x in losses],
                best=np.minimum.accumulate(losses).tolist(),
                slots=[int(slots[i]) for i in idx],
                seconds=np.diff(times, prepend=arrival).tolist(),
            )
        )
    return out


def replay(
    trace_path: str,
    *,
    slots: int,
    epoch_s: float,
    policies: list[str],
    workdir: str,
    normalise: str = "max_change",
    objective: str = "total",
    log: Callable = print,
    resume: bool | str = False,
    overwrite: bool = False,
) -> dict[str, dict]:
    """Replays a trace under each allocator and writes workdir/<allocator>/.

    A replay of one allocator is not checkpointed (it takes seconds): with
    `resume`, the allocators whose summary a stopped or killed run wrote are
    read back and the others are replayed from their start. A stop signal
    ends the run between allocators (placer.core.stop).

    Args:
      trace_path: the SLAQ trace CSV.
      slots: slots in the pool (> 0).
      epoch_s: seconds between reallocations (> 0).
      policies: allocator names (allocators.ALLOCATORS).
      workdir: output folder.
      normalise: SLAQ's normaliser.
      objective: SLAQ's objective, "total" or "maxmin".
      log: where the tables go.
      resume: continue a stopped run in `workdir` (same trace, slots and epoch; placer/core/resume_check.py),
        or "restart": continue it only if those are unchanged, else start over.
      overwrite: replace files in workdir/<allocator>/ that this run did not write
        (without it, a fresh run refuses before any work if one of its outputs exists).

    Returns:
      allocator -> summary.

    Raises:
      InputError: a bad trace (naming file, row and column), slots, epoch or allocator, a used workdir
        (unless resuming), or a resumed one replayed with another trace, slots or epoch.
      placer.core.stop.Stopped: a signal stopped the run between allocators.
    """
    if slots <= 0:
        raise InputError(f"--slots must be positive, got {slots}")
    if not epoch_s > 0:
        raise InputError(f"--epoch_s must be positive, got {epoch_s}")
    made = {}
    for p in policies:
        try:
            made[p] = allocators.make_allocator(p, epoch_s=epoch_s, objective=objective, normalise=normalise)
        except ValueError as e:
            raise InputError(str(e)) from None
        if not resume and os.path.exists(os.path.join(workdir, p, "summary.json")):
            raise InputError(
                f"{os.path.join(workdir, p)}: holds an earlier run; pass --resume to continue it or pick another --workdir"
            )
    jobs = load_trace(trace_path)
    made_from = {
        "trace": resume_check.file_digest(trace_path),
        **{k: str(v) for k, v in (("slots", slots), ("epoch_s", epoch_s), ("normalise", normalise))},
        "objective": objective,
    }
    if resume and not resume_check.check(workdir, made_from, resume, log):
        resume_check.clear(workdir, [*allocators.ALLOCATORS, resume_check.RECORD])
        resume = False
    out = _finished(workdir, list(made), trace_path, slots, epoch_s) if resume else {}
    for p in made:  # job names are data: slugs, inside the workdir, nothing of another's replaced
        files = search_report.output_files(os.path.join(workdir, p), [j.job_id for j in jobs])
        if not (resume or overwrite):
            names.refuse_foreign(files)
    if not resume:
        resume_check.record(workdir, made_from)
    if resume:
        left = [p for p in made if p not in out]
        log(
            f"resuming the replay: {', '.join(out) or 'no allocator'} read back; "
            f"{', '.join(left) or 'none'} replayed from the start (an allocator's replay restarts)"
        )
    for p, allocator in made.items():
        if p in out:
            continue
        request = stop.current()
        if request is not None and request.signum is not None:
            raise stop.Stopped(len(out), request.exit_code)
        result = simulate_sharing(jobs, allocator, slots, epoch_s=epoch_s, horizon_s=horizon(jobs))
        curves = to_curves(result)
        summary = search_report.summarise(
            p, curves, result.quality_times, slots=slots, epoch_s=epoch_s, wall_s=result.horizon_s, window=1
        )
        summary["trace"] = os.path.abspath(trace_path)
        summary["normalise"] = normalise if p.startswith("slaq") else None
        summary["objective"] = objective if p.startswith("slaq") else None
        search_report.write_outputs(os.path.join(workdir, p), summary, curves, result.allocations, window=1)
        out[p] = summary
        log("")
        log(search_report.format_table(summary))
    out = {p: out[p] for p in made}
    if "fair" in out and len(out) > 1:
        log("")
        log(search_report.compare_to_fair(out))
    return out


def _finished(workdir: str, policies: list[str], trace_path: str, slots: int, epoch_s: float) -> dict[str, dict]:
    """The summaries an earlier replay in `workdir` wrote, checked to come from the same trace and settings.

    Raises:
      InputError: a summary that cannot be read, or one of another trace, slot count or epoch.
    """
    out = {}
    for p in policies:
        path = os.path.join(workdir, p, "summary.json")
        if not os.path.exists(path):
            continue
        try:
            with open(path) as f:
                summary = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: cannot resume from it ({e})") from None
        mine = {"trace": os.path.abspath(trace_path), "slots": slots, "epoch_s": epoch_s}
        for key, value in mine.items():
            if summary.get(key) != value:
                raise InputError(f"{path}: replayed with {key}={summary.get(key)!r}, this run has {value!r}")
        out[p] = summary
    return out


_TRACE = flags.DEFINE_string("trace", None, "SLAQ trace CSV to replay (docs/formats.md).", required=True)
_SLOTS = flags.DEFINE_integer("slots", 4, "Measurement slots in the pool.")
_EPOCH = flags.DEFINE_float("epoch_s", DEFAULT_EPOCH_S, "Seconds between reallocations of the slots.")
_POLICY = flags.DEFINE_enum(
    "policy",
    "slaq-safe",
    [*allocators.ALLOCATORS, "both", "all"],
    "Slot allocator (both: slaq and fair; all: every one).",
)
_OBJECTIVE = flags.DEFINE_enum(
    "objective",
    "total",
    list(allocators.OBJECTIVES),
    "SLAQ's objective: summed loss reduction, or the worst job first.",
)
_NORMALISE = flags.DEFINE_enum(
    "normalise",
    "max_change",
    list(NORMALISERS),
    "SLAQ's normaliser of loss reductions: the largest change so far (SLAQ paper) or the fitted total reduction.",
)
# The module --help lists flags under: this file's path when run as a script (absl's own choice then).
_MODULE = sys.argv[0] if __name__ == "__main__" else __name__
(_WORKDIR,) = cli_flags.define_flags(_MODULE, "workdir", required=["workdir"])
_RESUME = cli_flags.define_resume(
    "Continue a stopped or killed replay in --workdir (same trace and flags): the allocators already "
    "replayed are read back and the others replayed from their start.",
    _MODULE,
)
_OVERWRITE = flags.DEFINE_bool(
    "overwrite",
    False,
    "Replace output files in --workdir that this run did not write (a fresh run refuses them otherwise).",
)

WRITES = ("inputs.json", *allocators.ALLOCATORS)  # what --workdir receives: a folder per allocator


def main(argv):
    del argv
    from placer.core import configs_util, locks  # noqa: PLC0415

    locks.claim_workdir(_WORKDIR.value, inputs={"trace": _TRACE.value}, owned=WRITES)
    policies = {"both": ["slaq", "fair"], "all": list(allocators.ALLOCATORS)}.get(_POLICY.value, [_POLICY.value])
    with stop.on_signals():  # SIGINT/SIGTERM: the replay ends after the current allocator
        replay(
            configs_util.resolve(_TRACE.value),  # bench/data/... from any folder
            slots=_SLOTS.value,
            epoch_s=_EPOCH.value,
            policies=policies,
            workdir=_WORKDIR.value,
            normalise=_NORMALISE.value,
            objective=_OBJECTIVE.value,
            resume=_RESUME.value,
            overwrite=_OVERWRITE.value,
        )


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
