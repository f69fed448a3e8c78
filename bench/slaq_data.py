"""The SLAQ benchmarks' workloads: the stress set, the recorded searches and the Keras curves.

The stress set (bench/data/stress_trace.csv, from bench/slaq_stress.py) is
replayed with its jobs drawn anew for each seed and bursty arrivals; the
recorded searches (bench/search_trace.py) report placer-search's default
loss signal (placer.sharing.report.DEFAULT_LOSS) to the allocators and are
measured on their best step time so far; the Keras curves come from
bench/keras_trace.py. numpy only.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from bench import report, slaq_stress
from bench.slaq_traces import TraceJob, load_trace
from placer.sharing.report import DEFAULT_LOSS, LOSSES

DATA = os.path.join(report.ROOT, "bench", "data")
SEARCH_TRACE = os.path.join(DATA, "search_trace.csv")  # the mean signal, from bench/search_trace.py
KERAS_TRACE = os.path.join(DATA, "keras_trace.csv")  # from bench/keras_trace.py
STRESS_TRACE = slaq_stress.OUT  # from bench/slaq_stress.py
MEAN_GAP_S = 15.0  # mean seconds between arrivals (SLAQ paper)
NUM_JOBS = 20  # jobs per workload
KERAS_ITERATION_S = 1.25  # median one-worker iteration (one optimizer step) of the Keras jobs after scaling
KERAS_PASS = 4  # iterations per pass over a Keras job's training set (bench/keras_trace.py)


def signal_path(out: str, signal: str) -> str:
    """The trace file of `signal` beside the mean signal's `out` (search_trace.csv -> search_trace_best.csv)."""
    root, ext = os.path.splitext(out)
    return out if signal == "mean" else f"{root}_{signal}{ext}"


SIGNAL_TRACES = {s: signal_path(SEARCH_TRACE, s) for s in LOSSES}  # loss signal -> recorded searches


def with_best_evaluation(signal_jobs: list[TraceJob], best_jobs: list[TraceJob]) -> list[TraceJob]:
    """The jobs of one signal, each evaluated on the same job's best-so-far curve.

    Raises:
      ValueError: the traces do not hold the same jobs with the same iterations and seconds.
    """
    best = {j.job_id: j for j in best_jobs}
    out = []
    for j in signal_jobs:
        b = best.get(j.job_id)
        if b is None or b.iterations != j.iterations or not np.array_equal(b.seconds[1:], j.seconds[1:]):
            raise ValueError(f"job {j.job_id}: not the same search in the best-so-far trace")
        out.append(dataclasses.replace(j, eval_losses=b.losses))
    if len(out) != len(best):
        raise ValueError("the traces hold different jobs")
    return out


def recorded_searches(signal: str = DEFAULT_LOSS) -> list[TraceJob] | None:
    """The recorded searches reporting `signal`, evaluated on their best-so-far curves; None if
    either trace is missing."""
    paths = (SIGNAL_TRACES[signal], SIGNAL_TRACES["best"])
    if not all(os.path.exists(p) for p in paths):
        return None
    return with_best_evaluation(load_trace(paths[0]), load_trace(paths[1]))


def _draw(jobs: list[TraceJob], rng: np.random.Generator, count: int) -> np.ndarray:
    """Indices of `count` of the jobs: shuffled, or drawn with replacement when more than there are."""
    return rng.permutation(len(jobs))[:count] if count <= len(jobs) else rng.integers(0, len(jobs), size=count)


def _renamed(jobs: list[TraceJob], order, arrivals) -> list[TraceJob]:
    return [
        dataclasses.replace(jobs[i], job_id=f"{jobs[i].job_id}#{n}", arrival_s=float(t))
        for n, (i, t) in enumerate(zip(order, arrivals, strict=True))
    ]


def rearrive(jobs: list[TraceJob], seed: int, count: int | None = None) -> list[TraceJob]:
    """`count` of the jobs (all by default; drawn with replacement, renamed, when more than there
    are), shuffled, arriving as a new Poisson process (mean gap MEAN_GAP_S)."""
    rng = np.random.default_rng(seed)
    count = len(jobs) if count is None else count
    order = _draw(jobs, rng, count)
    gaps = np.concatenate([[0.0], np.cumsum(rng.exponential(MEAN_GAP_S, size=count - 1))])
    return _renamed(jobs, order, gaps)


def stress_workload(jobs: list[TraceJob], seed: int, count: int = NUM_JOBS) -> list[TraceJob]:
    """`count` of the stress set's jobs, drawn by `seed`, arriving in bursts (slaq_stress.bursty_arrivals)."""
    rng = np.random.default_rng(seed)
    order = _draw(jobs, rng, count)
    return _renamed(jobs, order, slaq_stress.bursty_arrivals(count, rng))


def keras_jobs(jobs: list[TraceJob]) -> list[TraceJob]:
    """The Keras jobs with their seconds scaled so the median one-worker iteration takes
    KERAS_ITERATION_S (measured: milliseconds, too short for epochs of seconds); ratios kept."""
    scale = KERAS_ITERATION_S / float(np.median([j.seconds[1:, 0].mean() for j in jobs]))
    return [dataclasses.replace(j, seconds=j.seconds * scale) for j in jobs]
