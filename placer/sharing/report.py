"""Curves, sharing metrics and tables of `placer-search` runs (no TensorFlow).

The metrics are SLAQ's (Zhang et al., SoCC 2017), the same on recorded
traces (bench/slaq_traces.py): a job's normalised quality is the share
of its total reduction L0 - L_N its lowest loss so far has won, in [0, 1]
(`normalised_quality`, the one definition); reported are
the seconds from a job's start until it reached 80%, 90% and 95% of its total
reduction, and the mean quality of the running jobs over time. A placement
search's loss (mean sqrt step time of one iteration's samples) is noisy, more
so with few samples, so L is a trailing mean over `SMOOTH` iterations.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os

import numpy as np
import tabulate

from placer.core import atomic, fmt, names

TARGETS = (0.8, 0.9, 0.95)  # fractions of a job's total loss reduction whose time to reach is reported
SMOOTH = 5  # iterations in the trailing mean of the loss (our choice)
CURVE_COLUMNS = ("time_s", "iteration", "loss", "smoothed_loss", "best_step_time", "slots", "seconds")


@dataclasses.dataclass
class JobCurve:
    """One search's record.

    Attributes:
      name: the job.
      status: "done", "failed" or "not started".
      start_s: seconds from the run start at which it started (nan if never).
      end_s: seconds at which it finished or failed (nan if it never started).
      times: [n] seconds from the run start at which iteration i finished.
      losses: [n] loss of iteration i (mean sqrt step time of its samples, s^0.5).
      best: [n] best step time found up to iteration i (seconds; inf while none ran).
      slots: [n] slots held during iteration i.
      seconds: [n] wall seconds iteration i took.
      error: one line for a failed search.
    """

    name: str
    status: str = "not started"
    start_s: float = math.nan
    end_s: float = math.nan
    times: list = dataclasses.field(default_factory=list)
    losses: list = dataclasses.field(default_factory=list)
    best: list = dataclasses.field(default_factory=list)
    slots: list = dataclasses.field(default_factory=list)
    seconds: list = dataclasses.field(default_factory=list)
    error: str = ""


LOSSES = ("mean", "best", "baseline")  # what a search reports to its allocator as its loss
# The default of placer-search --loss. bench/slaq_loss.py measures each signal under placer-search's default
# allocator (and plain SLAQ) and says in BENCHMARKS.md ("SLAQ: which loss signal") whether this one allocates best.
DEFAULT_LOSS = "mean"


def search_loss(kind: str, mean_loss: float, best_step_time: float, baseline: float | None) -> float:
    """A search iteration's loss for the allocator, in sqrt seconds (lower is better).

    Args:
      kind: "mean": mean sqrt step time of the iteration's samples (failed ones at the
        failing step time); "best": sqrt of the best step time so far; "baseline": minus
        the REINFORCE moving-average reward baseline (a smoothed mean sqrt step time).
      mean_loss: the iteration's mean sqrt step time, s^0.5.
      best_step_time: best step time so far, seconds (inf while none ran).
      baseline: the trainer's reward baseline (a negative sqrt step time), or None before it exists.

    Returns:
      The loss; "best" and "baseline" fall back to mean_loss while they are undefined.

    >>> search_loss("best", 3.0, 4.0, -2.5), search_loss("baseline", 3.0, 4.0, -2.5)
    (2.0, 2.5)
    """
    if kind == "best" and math.isfinite(best_step_time):
        return math.sqrt(best_step_time)
    if kind == "baseline" and baseline is not None and math.isfinite(baseline) and baseline < 0:
        return -baseline
    if kind not in LOSSES:
        raise ValueError(f"unknown loss {kind!r} (valid: {', '.join(LOSSES)})")
    return mean_loss


def smooth(losses, window: int = SMOOTH) -> np.ndarray:
    """[n] trailing mean of the last `window` losses (fewer at the start).

    >>> smooth([4.0, 2.0, 0.0], 2).tolist()
    [4.0, 3.0, 1.0]
    """
    x = np.asarray(losses, dtype=np.float64)
    if x.size == 0:
        return x
    c = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(1, x.size + 1)
    lo = np.maximum(0, i - window)
    return (c[i] - c[lo]) / (i - lo)


def time_to_fraction(times, losses, start_s: float, fraction: float, total: float | None = None) -> float:
    """Seconds from `start_s` until the loss first fell by `fraction` of the total reduction.

    The one definition of "time to X%" (SLAQ's measure) behind placer-search
    reports and trace replays (bench/slaq_traces.py).

    Args:
      times: [n] seconds at which each loss was observed.
      losses: [n] the losses (index 0: the initial loss).
      start_s: the job's start, seconds.
      fraction: e.g. 0.9.
      total: the total reduction L0 - L_N; default losses[0] - losses[-1].

    Returns:
      Seconds; inf if never reached, nan if the total reduction is not positive.

    >>> time_to_fraction([0.0, 1.0, 2.0, 3.0], [10.0, 5.0, 2.0, 0.0], 0.0, 0.8)
    2.0
    """
    losses = np.asarray(losses, dtype=float)
    if total is None:
        total = float(losses[0] - losses[-1]) if losses.size >= 2 else 0.0
    if not total > 0:
        return math.nan
    hit = np.flatnonzero(losses[0] - losses >= fraction * total - 1e-12 * abs(total))
    return float(times[hit[0]] - start_s) if hit.size else math.inf


def normalised_quality(first: float, best: float, total: float) -> float:
    """A job's normalised quality: the share of its total loss reduction its best loss so far has won.

    The one definition behind placer-search reports and trace replays
    (SLAQ's measure, Zhang et al., SoCC 2017, taken on the best loss so far):
    q = (L0 - min_{i<=k} L_i) / (L0 - L_N), held within [0, 1]. With the
    `total` of `time_to_fraction`, q >= f exactly from the time the job
    reached f of its reduction on. A loss that rises above L0, or dips below
    the final L_N on the way (a noisy curve), cannot take q out of [0, 1].

    Args:
      first: L0, the job's initial loss.
      best: the lowest loss it has reported so far (L0 before any iteration).
      total: L0 - L_N, its total reduction.

    Returns:
      q in [0, 1]; 1 for a job whose loss never went down (total <= 0).

    >>> normalised_quality(10.0, 6.0, 8.0), normalised_quality(10.0, 1.0, 8.0), normalised_quality(3.0, 3.0, 0.0)
    (0.5, 1.0, 1.0)
    """
    if not total > 0:
        return 1.0
    return float(min(1.0, max(0.0, (first - best) / total)))


def time_to(curve: JobCurve, fraction: float, window: int = SMOOTH) -> float:
    """Seconds from the job's start until its smoothed loss first came within
    (1 - fraction) of its total reduction; inf if never, nan without a reduction
    (`time_to_fraction` on the smoothed curve)."""
    s = smooth(curve.losses, window)
    if s.size < 2:
        return math.nan
    return time_to_fraction(curve.times, s, curve.start_s, fraction)


def quality_at(curve: JobCurve, t: float, window: int = SMOOTH) -> float:
    """Normalised quality of the job at time t (seconds from the run start), in [0, 1].

    `normalised_quality` on the smoothed loss: the share of the
    total reduction L0 - L_N won by the lowest smoothed loss up to t; 1 for
    a job whose loss did not go down; 0 before its first iteration.
    """
    s = smooth(curve.losses, window)
    if s.size == 0:
        return 0.0
    k = int(np.searchsorted(np.asarray(curve.times), t, side="right")) - 1
    return 0.0 if k < 0 else normalised_quality(s[0], float(s[: k + 1].min()), s[0] - s[-1])


def mean_quality(curves: list[JobCurve], times, window: int = SMOOTH) -> np.ndarray:
    """[T] mean quality of the jobs running at each time (started, not ended); nan when none."""
    out = []
    for t in times:
        run = [c for c in curves if c.start_s <= t < c.end_s and c.status == "done"]
        out.append(float(np.mean([quality_at(c, t, window) for c in run])) if run else math.nan)
    return np.asarray(out)


def summarise(
    policy: str, curves: list[JobCurve], epoch_times, *, slots: int, epoch_s: float, wall_s: float, window: int = SMOOTH
) -> dict:
    """The run's summary (what summary.json holds).

    Args:
      policy: "slaq" or "fair".
      curves: one per job.
      epoch_times: seconds from the run start at which slots were reassigned.
      slots: slots in the pool.
      epoch_s: seconds per epoch.
      wall_s: seconds the run took.
      window: smoothing window (iterations).
    """
    jobs = []
    for c in curves:
        jobs.append(
            {
                "name": c.name,
                "status": c.status,
                "error": c.error,
                "iterations": len(c.losses),
                "start_s": _finite(c.start_s),
                "seconds": _finite(c.end_s - c.start_s),
                "first_loss": c.losses[0] if c.losses else None,
                "last_loss": float(smooth(c.losses, window)[-1]) if c.losses else None,
                "best_step_time": _finite(c.best[-1]) if c.best else None,
                "time_to": {f"{int(f * 100)}%": _finite(time_to(c, f, window)) for f in TARGETS},
            }
        )
    q = mean_quality(curves, epoch_times, window)
    done = [c for c in curves if c.status == "done"]
    mean_to = {}
    for f in TARGETS:
        t = [time_to(c, f, window) for c in done]
        t = [x for x in t if math.isfinite(x)]
        mean_to[f"{int(f * 100)}%"] = float(np.mean(t)) if t else None
    finite_q = q[np.isfinite(q)]
    return {
        "policy": policy,
        "slots": slots,
        "epoch_s": epoch_s,
        "wall_s": wall_s,
        "smooth_iterations": window,
        "jobs": jobs,
        "mean_time_to": mean_to,
        "quality_times": [float(t) for t in epoch_times],
        "mean_quality": [_finite(x) for x in q],
        "average_quality": float(finite_q.mean()) if finite_q.size else None,
    }


def _finite(x) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _fmt(x, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def format_table(summary: dict) -> str:
    """A text table of one run: per job its status, iterations, best so far and times to 80/90/95%.

    A live run's best is its best step time (seconds); a replayed trace's
    (summary "trace") is its lowest recorded loss, in the trace's units.
    """
    keys = [f"{int(f * 100)}%" for f in TARGETS]
    best_cell = (lambda x: _fmt(x, ".4g")) if summary.get("trace") else fmt.step_time
    rows = [
        [j["name"], j["status"], j["iterations"], best_cell(j["best_step_time"])]
        + [fmt.seconds(j["time_to"][k]) for k in keys]
        for j in summary["jobs"]
    ]
    rows.append(["mean", "", "", ""] + [fmt.seconds(summary["mean_time_to"][k]) for k in keys])
    best = "lowest loss" if summary.get("trace") else "best step time"
    table = tabulate.tabulate(
        rows, headers=["job", "status", "iters", best] + [f"t{k}" for k in keys], disable_numparse=True
    )
    window = summary.get("smooth_iterations", SMOOTH)
    loss = f"trailing mean over {window} iterations of its loss" if window > 1 else "loss as recorded"
    lines = [
        f"policy {summary['policy']}: {len(summary['jobs'])} jobs on {summary['slots']} slots, "
        f"epoch {summary['epoch_s']:g} s, {fmt.seconds(summary['wall_s'])} in all",
        table,
        f"t80%..t95%: time from a job's start until its {loss} first fell by 80/90/95% of its total "
        "reduction; '-' when it did not fall",
        f"average normalised quality: {_fmt(summary['average_quality'], '.3f')}",
    ]
    lines += [f"{j['name']} failed: {j['error']}" for j in summary["jobs"] if j["status"] == "failed"]
    return "\n".join(lines)


def _direction(ratio: float, up: str, down: str, digits: int = 1) -> str:
    """'9.8% slower' style words for a ratio - 1 (up: the word for a rise), `digits` decimals."""
    if ratio == 0:
        return "the same as"
    return f"{abs(ratio):.{digits}%} {up if ratio > 0 else down} than"


def compare_to_fair(summaries: dict[str, dict]) -> str:
    """One line per allocator against the work-conserving fair share, both SLAQ metrics in words.

    The mean time to 90% is taken over the same jobs for both: those that
    reached 90% of their reduction under both allocators (a job that never
    did has no time to average). Average normalised quality is the run's own.
    """
    fair = summaries["fair"]
    fair90 = {j["name"]: j["time_to"]["90%"] for j in fair["jobs"]}
    lines = []
    for name, s in summaries.items():
        if name == "fair":
            continue
        mine = {j["name"]: j["time_to"]["90%"] for j in s["jobs"]}
        both = [n for n in mine if mine[n] is not None and fair90.get(n) is not None]
        t, f = (float(np.mean([d[n] for n in both])) if both else None for d in (mine, fair90))
        # 2 decimals: slaq-safe promises at most 1% slower, and 1.04% must not print as 1.0%
        delay = f"{_direction(t / f - 1, 'slower', 'sooner', 2)} fair ({fmt.seconds(f)})" if both and f else "-"
        q, fq = s["average_quality"], fair["average_quality"]
        quality = f"{_direction(q / fq - 1, 'higher', 'lower')} fair ({fq:.3f})" if q is not None and fq else "-"
        lines.append(
            f"{name}: mean time to 90% {fmt.seconds(t)}, {delay}, over the {len(both)} jobs that reached 90% "
            f"under both; average normalised quality {_fmt(q, '.3f')}, {quality}"
        )
    return "\n".join(lines)


def output_files(folder: str, job_names: list[str]) -> list[str]:
    """The files `write_outputs` writes into `folder` for jobs named `job_names` (checked to stay inside it).

    A job's curve file is curves/<slug>.csv (placer.core.names.slug): a job's
    name is data, never a path.

    Raises:
      InputError: two job names that would share a file.
    """
    fixed = [names.inside(folder, f) for f in ("curves.json", "allocations.csv", "summary.json")]
    per_job = [names.inside(folder, "curves", f"{s}.csv") for s in names.slugs(job_names, "job name").values()]
    return per_job + fixed


def write_outputs(
    folder: str, summary: dict, curves: list[JobCurve], allocations: list[tuple], window: int = SMOOTH
) -> None:
    """Writes curves/<job slug>.csv, curves.json, allocations.csv and summary.json into `folder` (atomically)."""
    files = output_files(folder, [c.name for c in curves])
    os.makedirs(os.path.join(folder, "curves"), exist_ok=True)
    for c, path in zip(curves, files, strict=False):
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(CURVE_COLUMNS)
        s = smooth(c.losses, window)
        for i in range(len(c.losses)):
            t, loss, smoothed, best, seconds = (repr(float(x[i])) for x in (c.times, c.losses, s, c.best, c.seconds))
            w.writerow([t, i, loss, smoothed, best, c.slots[i], seconds])
        atomic.write_text(path, out.getvalue())
    data = {
        c.name: {
            "start_s": _finite(c.start_s),
            "end_s": _finite(c.end_s),
            "status": c.status,
            "time_s": list(map(float, c.times)),
            "loss": list(map(float, c.losses)),
            "best_step_time": [_finite(b) for b in c.best],
            "slots": list(map(int, c.slots)),
        }
        for c in curves
    }
    atomic.write_text(os.path.join(folder, "curves.json"), json.dumps(data))
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["time_s", "job", "slots"])
    for t, job, n in allocations:
        w.writerow([repr(float(t)), job, n])
    atomic.write_text(os.path.join(folder, "allocations.csv"), out.getvalue())
    atomic.write_text(os.path.join(folder, "summary.json"), json.dumps(summary, indent=1))
