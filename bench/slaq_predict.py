"""Prediction error of the SLAQ curve fits, for the "SLAQ allocator" section of BENCHMARKS.md.

The regime-aware fit (slaq_curves.recent_fit: the SLAQ families on the points
since the latest jump, past a concave start) predicts each curve `AHEAD`
iterations ahead from cut points every `AHEAD` iterations, from the losses up
to the cut only; the error is relative to the recorded loss.
SLAQ (Zhang et al., SoCC 2017) reports under 5% on its curves. numpy only.
"""

from __future__ import annotations

import os

import numpy as np

from bench import slaq_data, slaq_stress
from bench.slaq_synthetic import synthetic_workload
from bench.slaq_traces import TraceJob, load_trace
from placer.sharing import slaq_curves
from placer.sharing.report import DEFAULT_LOSS

AHEAD = 10  # iterations ahead predicted
PRED_MEDIAN, PRED_P90 = 0.05, 0.15  # targets, fractions of the loss
OTHER_DRAWS = (1, 2, 3, 4)  # seeds of bench/slaq_stress.py's generator besides the recorded set's (0)


def _cuts(job: TraceJob, ahead: int) -> range:
    return range(ahead, job.iterations - ahead, ahead)


def relative_errors(jobs: list[TraceJob], ahead: int = AHEAD) -> tuple[dict[str, np.ndarray], int]:
    """({job id: [cuts] |predicted - recorded| / |recorded|}, fits that fell back to the mean change)."""
    out, fallbacks = {}, 0
    for job in jobs:
        rel = []
        for cut in _cuts(job, ahead):
            fit = slaq_curves.recent_fit(np.arange(cut + 1), job.losses[: cut + 1])
            fallbacks += fit.family == slaq_curves.MEAN_CHANGE
            err = abs(slaq_curves.predict(fit, cut + ahead) - job.losses[cut + ahead])
            rel.append(err / abs(job.losses[cut + ahead]))
        out[job.job_id] = np.array(rel)
    return out, fallbacks


def error_stats(rel: np.ndarray, fallbacks: int = 0) -> dict[str, float]:
    """fits, share of fallback fits, median and p90 of relative errors."""
    return {
        "fits": rel.size,
        "fallback": fallbacks / max(rel.size, 1),
        "median": float(np.median(rel)) if rel.size else float("nan"),
        "p90": float(np.percentile(rel, 90)) if rel.size else float("nan"),
    }


def prediction_error(jobs: list[TraceJob], ahead: int = AHEAD) -> dict[str, float]:
    """`error_stats` of the predictions `ahead` iterations ahead over every cut of every job."""
    per_job, fallbacks = relative_errors(jobs, ahead)
    return error_stats(np.concatenate(list(per_job.values())), fallbacks)


def noise_floor(jobs: list[TraceJob], ahead: int = AHEAD) -> tuple[dict[str, float], dict[str, float]]:
    """How far each point that `prediction_error` predicts lies from the mean of its two recorded
    neighbours, relative to it: the point-to-point noise that no prediction of the trend removes.

    Returns:
      (the same keys as `prediction_error`, {job id: its p90}).
    """
    rel, per_job = [], {}
    for job in jobs:
        t = np.arange(2 * ahead, job.iterations, ahead)  # the points prediction_error predicts
        mine = np.abs(job.losses[t] - (job.losses[t - 1] + job.losses[t + 1]) / 2) / np.abs(job.losses[t])
        per_job[job.job_id] = float(np.percentile(mine, 90))
        rel.extend(mine)
    return error_stats(np.array(rel)), per_job


def stress_rows(jobs: list[TraceJob], drops: dict[str, list[int]], ahead: int = AHEAD) -> list[tuple]:
    """The stress set: all cuts (the target), and apart the cuts whose `ahead` iterations contain the
    start of a scheduled drop, which no fit of the past can foresee."""
    per_job, fallbacks = relative_errors(jobs, ahead)
    blind, seen = [], []
    for job in jobs:
        for cut, err in zip(_cuts(job, ahead), per_job[job.job_id], strict=True):
            (blind if any(cut < d <= cut + ahead for d in drops[job.job_id]) else seen).append(err)
    everything = np.concatenate(list(per_job.values()))
    share = len(blind) / max(everything.size, 1)
    return [
        ("stress set (bench/data/stress_trace.csv)", error_stats(everything, fallbacks), True),
        (f"stress set, the {share:.0%} of cuts with a scheduled drop ahead", error_stats(np.array(blind)), False),
        ("stress set, the other cuts", error_stats(np.array(seen)), False),
    ]


def prediction_rows() -> list[tuple[str, dict, bool]]:
    """(label, error_stats, judged against the targets) per curve set."""
    rows = stress_rows(load_trace(slaq_data.STRESS_TRACE), slaq_stress.scheduled_drops())
    rows += [
        (f"stress set drawn anew, generator seed {s}", prediction_error(slaq_stress.stress_jobs(s)), False)
        for s in OTHER_DRAWS
    ]
    rows += [
        ("synthetic, noise 0.5%", prediction_error(synthetic_workload(60, noise=0.005, iterations=(60, 300))), True),
    ]
    searches = slaq_data.recorded_searches()
    if searches is not None:
        rows.append((f"recorded searches ({DEFAULT_LOSS} signal)", prediction_error(searches), True))
    if os.path.exists(slaq_data.KERAS_TRACE):
        keras = load_trace(slaq_data.KERAS_TRACE)
        rows.append(("Keras curves", prediction_error(keras), True))
        floor, per_job = noise_floor(keras)
        noisy = ", ".join(f"{j} {v:.0%}" for j, v in sorted(per_job.items()) if v > PRED_P90) or "none"
        rows.append((f"Keras curves, noise floor (p90 over {PRED_P90:.0%}: {noisy})", floor, False))
    return rows


def prediction_lines(rows) -> list[str]:
    lines = [
        f"### Prediction {AHEAD} iterations ahead",
        "",
        "Fit: `slaq_curves.recent_fit` (the SLAQ families on the points since the latest jump, from 3 points",
        "before the steepest descent where the regime starts concave, window 100, decay 0.9; flat for two",
        f"points after a jump) at cut points every {AHEAD} iterations, from the losses up to the cut only;",
        "error relative to the recorded loss. The stress set's cuts are also split by whether a scheduled",
        f"learning-rate drop (or batch growth) starts in the {AHEAD} iterations predicted, which no fit of the",
        "past can foresee. The fit's settings were chosen on the recorded stress set; the rows drawn anew",
        "(bench/slaq_stress.py's generator with other seeds) are curves they never saw. Recorded searches:",
        f"the loss signal placer-search reports by default (`--loss={DEFAULT_LOSS}`). Keras noise floor: each",
        "predicted point against the mean of its two neighbours, which no prediction of the trend can beat.",
        f"Target: median at most {PRED_MEDIAN:.0%}, p90 at most {PRED_P90:.0%}.",
        "",
        "| curves | fits | fallback fits | median | p90 | target |",
        "|---|---|---|---|---|---|",
    ]
    for label, p, judged in rows:
        ok = ("met" if p["median"] <= PRED_MEDIAN and p["p90"] <= PRED_P90 else "NOT met") if judged else "(not judged)"
        lines.append(f"| {label} | {p['fits']} | {p['fallback']:.1%} | {p['median']:.2%} | {p['p90']:.2%} | {ok} |")
    return lines
