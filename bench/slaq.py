"""Benchmarks the SLAQ allocators and writes the "slaq" section of BENCHMARKS.md.

Every comparison is against `fair`, the work-conserving fair share
(placer.sharing.allocators). Three measurements:

1. prediction error 10 iterations ahead (SLAQ, Zhang et al., SoCC 2017,
   reports under 5%) of the regime-aware fit (slaq_curves.recent_fit) on
   synthetic curves, recorded placement searches and real Keras training
   curves (bench/data/keras_trace.csv, from bench/keras_trace.py);
2. time to 90% of each job's loss reduction under each allocator, on
   workloads of 20 Poisson-arriving jobs of each family, at 16, 32 and 64 slots;
3. allocation latency against jobs and slots.

The recorded searches (bench/search_trace.py) report placer-search's default
loss signal (placer.sharing.report.DEFAULT_LOSS, chosen by bench/slaq_loss.py
in its own section): the allocators and the prediction row see that signal's
trace (bench/data/search_trace_<signal>.csv), and a search's time to 90% is
measured on its best step time so far (search_trace_best.csv), the quality a
researcher gets from it.

Each target prints met / NOT met for the scale it was measured at. SLAQ's
curve fits make a 20-job replay take about 20 s here, so the default scale
is below the targets' 15 workloads (see --seeds); the section says which.

Run: .venv/bin/python -m bench.slaq [--seeds=N] [--quick]
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import time

import numpy as np

from bench import report
from placer.sharing import slaq_curves
from placer.sharing.allocators import FairAllocator, make_allocator
from placer.sharing.replay import horizon
from placer.sharing.report import DEFAULT_LOSS, LOSSES
from placer.sharing.slaq import DEFAULT_EPOCH_S, JobState, SlaqAllocator
from placer.sharing.slaq_trace import TraceJob, load_trace, simulate_sharing
from placer.sharing.synthetic import SERIAL_FRACTION, synthetic_workload

AHEAD = 10  # iterations ahead predicted
DATA = os.path.join(report.ROOT, "bench", "data")
SEARCH_TRACE = os.path.join(DATA, "search_trace.csv")  # the mean signal, from bench/search_trace.py
KERAS_TRACE = os.path.join(DATA, "keras_trace.csv")  # from bench/keras_trace.py
MEAN_GAP_S = 15.0  # mean seconds between arrivals (SLAQ paper)
NUM_JOBS = 20  # jobs per workload
SLOTS = (16, 32, 64)  # pool sizes
MAIN_SLOTS = 32  # where the time-to-90% targets are judged
KERAS_ITERATION_S = 1.25  # median one-worker iteration (one optimizer step) of the Keras jobs after scaling
KERAS_PASS = 4  # iterations per pass over a Keras job's training set (bench/keras_trace.py)
COMPARED = ("fair-static", "slaq", "slaq-safe", "slaq-oracle")  # each against fair, at MAIN_SLOTS
TARGET_CUT = {"synthetic": 0.20, "recorded searches": 0.10, "Keras curves": 0.10}  # at MAIN_SLOTS
SAFE_LOSS = 0.02  # slaq-safe at most this much slower than fair, anywhere
PRED_MEDIAN, PRED_P90 = 0.05, 0.15  # prediction error targets, fractions of the loss
LATENCY_S = 0.050  # 4,000 jobs on 16,384 slots


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


def rearrive(jobs: list[TraceJob], seed: int, count: int | None = None) -> list[TraceJob]:
    """`count` of the jobs (all by default; drawn with replacement, renamed, when more than there
    are), shuffled, arriving as a new Poisson process (mean gap MEAN_GAP_S)."""
    rng = np.random.default_rng(seed)
    count = len(jobs) if count is None else count
    order = rng.permutation(len(jobs)) if count <= len(jobs) else rng.integers(0, len(jobs), size=count)
    gaps = np.concatenate([[0.0], np.cumsum(rng.exponential(MEAN_GAP_S, size=count - 1))])
    return [
        dataclasses.replace(jobs[i], job_id=f"{jobs[i].job_id}#{n}", arrival_s=float(t))
        for n, (i, t) in enumerate(zip(order[:count], gaps, strict=True))
    ]


def keras_jobs(jobs: list[TraceJob]) -> list[TraceJob]:
    """The Keras jobs with their seconds scaled so the median one-worker iteration takes
    KERAS_ITERATION_S (measured: milliseconds, too short for epochs of seconds); ratios kept."""
    scale = KERAS_ITERATION_S / float(np.median([j.seconds[1:, 0].mean() for j in jobs]))
    return [dataclasses.replace(j, seconds=j.seconds * scale) for j in jobs]


def prediction_error(jobs: list[TraceJob], ahead: int = AHEAD) -> dict[str, float]:
    """Error of the loss predicted `ahead` iterations ahead by slaq_curves.recent_fit, relative to
    the recorded loss, over cut points every `ahead` iterations."""
    rel, fallbacks = [], 0
    for job in jobs:
        for cut in range(ahead, job.iterations - ahead, ahead):
            fit = slaq_curves.recent_fit(np.arange(cut + 1), job.losses[: cut + 1])
            fallbacks += fit.family == slaq_curves.MEAN_CHANGE
            err = abs(slaq_curves.predict(fit, cut + ahead) - job.losses[cut + ahead])
            rel.append(err / abs(job.losses[cut + ahead]))
    return _error_stats(np.array(rel), fallbacks)


def _error_stats(rel: np.ndarray, fallbacks: int) -> dict[str, float]:
    """fits, share of fallback fits, median and p90 of relative errors."""
    return {
        "fits": rel.size,
        "fallback": fallbacks / max(rel.size, 1),
        "median": float(np.median(rel)),
        "p90": float(np.percentile(rel, 90)),
    }


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
    return _error_stats(np.array(rel), 0), per_job


class OracleAllocator:
    """SLAQ's rule (total objective) with foresight: each job's gain on s slots is read
    from its recorded future losses and iteration times instead of the fitted curve and
    runtime model, normalised the same way. What perfect prediction would give.

    Args:
      jobs: the traces of the workload.
      epoch_s: seconds per epoch.
    """

    def __init__(self, jobs: list[TraceJob], epoch_s: float):
        self.traces = {j.job_id: j for j in jobs}
        self.epoch_s = epoch_s

    def allocate(self, states: list[JobState], num_slots: int) -> dict:
        """{job_id: slots}: one each (the largest first-slot gains if too few), then the largest marginal gains."""
        gains = []
        for st in states:
            tr = self.traces[st.job_id]
            k, last = int(st.iterations[-1]), len(tr.losses) - 1
            iters = self.epoch_s / tr.seconds[min(k + 1, last), :]  # in one epoch on 1..M slots
            future = np.interp(np.minimum(k + iters, last), np.arange(last + 1), tr.losses)
            gains.append((tr.losses[k] - np.r_[tr.losses[k], future]) / (st.max_change or 1.0))
        if num_slots < len(states):  # as SlaqAllocator: the jobs with the largest first-slot gain
            chosen = set(np.argsort([-g[1] for g in gains], kind="stable")[: max(num_slots, 0)].tolist())
            return {st.job_id: int(i in chosen) for i, st in enumerate(states)}
        alloc = {st.job_id: 1 for st in states}
        marginals = [(m, i) for i, g in enumerate(gains) for m in np.minimum.accumulate(np.diff(g))[1:]]
        marginals.sort(key=lambda x: -x[0])
        for m, i in marginals[: num_slots - len(states)]:
            if m > 0:
                alloc[states[i].job_id] += 1
        return alloc


def _allocator(name: str, jobs: list[TraceJob]):
    if name == "slaq-oracle":
        return OracleAllocator(jobs, DEFAULT_EPOCH_S)
    if name == "slaq-fitted":
        return make_allocator("slaq", normalise="fitted_total")
    return make_allocator(name)


def sharing(workloads: list[list[TraceJob]], num_slots: int, names: tuple[str, ...]) -> dict[str, dict]:
    """Per allocator: the median over workloads of the mean time to 90% and of the signed change
    against fair share on the same workload (negative: sooner), with the worst workload's change."""
    t90: dict[str, list[float]] = {n: [] for n in ("fair", *names)}
    for jobs in workloads:
        for name in t90:
            r = simulate_sharing(
                jobs, _allocator(name, jobs), num_slots, epoch_s=DEFAULT_EPOCH_S, horizon_s=horizon(jobs)
            )
            t90[name].append(r.mean_time_to(0.9))
    fair = np.array(t90["fair"])
    out = {}
    for name, values in t90.items():
        change = np.array(values) / fair - 1.0
        out[name] = {"t90": float(np.median(values)), "change": float(np.median(change)), "worst": float(change.max())}
    return out


def _jobs_pool(count: int, seed: int = 0) -> list[JobState]:
    """`count` fitted jobs: 100 distinct histories, copied (fits are cached per job)."""
    rng = np.random.default_rng(seed)
    base = []
    for trace in synthetic_workload(100, seed=seed, noise=0.005, iterations=(20, 120)):
        j = JobState(trace.job_id, max_slots=None)
        cut = int(rng.integers(10, trace.iterations))
        j.report(0, trace.losses[0])
        for k in range(1, cut + 1):
            s = int(rng.integers(1, 9))
            j.report(k, trace.losses[k], float(trace.seconds[k, 0]) / s * (1.0 + 0.1 * s), s)
        j.curve()
        j.runtime()
        base.append(j)
    jobs = []
    for i in range(count):
        j = copy.deepcopy(base[i % len(base)])
        j.job_id = i
        jobs.append(j)
    return jobs


def latency(job_counts: list[int], slot_counts: list[int], repeats: int) -> dict[tuple[str, int, int], float]:
    """Median seconds of allocate() per (allocator, jobs, slots); curve fits are cached, as after reports."""
    pool = _jobs_pool(max(job_counts))
    out = {}
    for n in job_counts:
        jobs = pool[:n]
        for slots in slot_counts:
            for name, allocator in (
                ("total", SlaqAllocator("total")),
                ("min", SlaqAllocator("min")),
                ("fair", FairAllocator()),
            ):
                times = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    alloc = allocator.allocate(jobs, slots)
                    times.append(time.perf_counter() - t)
                    assert sum(alloc.values()) <= slots
                out[(name, n, slots)] = float(np.median(times))
    return out


def families(seeds: list[int]) -> dict[str, list[list[TraceJob]]]:
    """Workloads of each family, one per seed."""
    out = {"synthetic": [synthetic_workload(NUM_JOBS, seed=seed) for seed in seeds]}
    searches = recorded_searches()
    if searches is not None:
        out["recorded searches"] = [rearrive(searches, seed, NUM_JOBS) for seed in seeds]
    if os.path.exists(KERAS_TRACE):
        curves = keras_jobs(load_trace(KERAS_TRACE))
        out["Keras curves"] = [rearrive(curves, seed, NUM_JOBS) for seed in seeds]
    return out


def curve_sets() -> list[tuple[str, list[TraceJob]]]:
    sets = [
        ("synthetic, noise 0.5%", synthetic_workload(60, noise=0.005, iterations=(60, 300))),
        ("synthetic, noiseless", synthetic_workload(30, seed=1, iterations=(60, 300))),
    ]
    searches = recorded_searches()
    if searches is not None:
        sets.append((f"recorded searches ({DEFAULT_LOSS} signal)", searches))
    if os.path.exists(KERAS_TRACE):
        sets.append(("Keras curves", load_trace(KERAS_TRACE)))
    return sets


def prediction_rows() -> list[tuple[str, dict, bool]]:
    """(label, prediction_error, judged against the targets) per curve set, plus the Keras curves
    10 passes ahead, a coarser horizon shown beside the target's."""
    rows = [(label, prediction_error(jobs), True) for label, jobs in curve_sets()]
    if os.path.exists(KERAS_TRACE):
        keras = load_trace(KERAS_TRACE)
        far = prediction_error(keras, ahead=10 * KERAS_PASS)
        rows.append((f"Keras curves, {10 * KERAS_PASS} iterations (10 passes) ahead", far, False))
        floor, per_job = noise_floor(keras)
        noisy = ", ".join(f"{j} {v:.0%}" for j, v in sorted(per_job.items()) if v > PRED_P90) or "none"
        rows.append(
            (
                f"Keras curves, noise floor: each point against its neighbours' mean (p90 over {PRED_P90:.0%}: {noisy})",
                floor,
                False,
            )
        )
    return rows


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def prediction_lines(pred) -> list[str]:
    lines = [
        "### Prediction 10 iterations ahead",
        "",
        "Fit: `slaq_curves.recent_fit` (the SLAQ families on the points since the latest jump, window 100, decay",
        "0.9) at cut points every 10 iterations; error relative to the recorded loss. Recorded searches: the",
        f"loss signal placer-search reports by default (`--loss={DEFAULT_LOSS}`, bench/slaq_loss.py's choice).",
        f"Keras curves: an iteration is one optimizer step, {KERAS_PASS} per pass over the training set",
        "(bench/keras_trace.py); the next row predicts 10 passes ahead from cut points every 10 passes, and the",
        "noise floor measures each predicted point against the mean of the points just before and after it,",
        "which no prediction of the trend can beat on a curve that jumps from one iteration to the next.",
        f"Target: median at most {PRED_MEDIAN:.0%}, p90 at most {PRED_P90:.0%}, on every family.",
        "",
        "| curves | fits | fallback fits | median | p90 | target |",
        "|---|---|---|---|---|---|",
    ]
    for label, p, judged in pred:
        ok = verdict(p["median"] <= PRED_MEDIAN and p["p90"] <= PRED_P90) if judged else "(not a target)"
        lines.append(f"| {label} | {p['fits']} | {p['fallback']:.1%} | {p['median']:.2%} | {p['p90']:.2%} | {ok} |")
    return lines


def sharing_lines(shares, seeds, full: bool) -> list[str]:
    scale = "at full scale" if full else f"NOT at full scale ({len(seeds)} workloads per cell; the targets ask for 15)"
    lines = [
        "",
        "### Time to 90% against the work-conserving fair share",
        "",
        f"{NUM_JOBS} jobs per workload, Poisson arrivals (mean {MEAN_GAP_S:g} s), epochs of {DEFAULT_EPOCH_S:g} s,",
        f"medians over {len(seeds)} workloads (seeds {seeds[0]}..{seeds[-1]}), {scale}. Change = median over",
        "workloads of (mean time to 90% under the allocator) / (under `fair` on the same workload) - 1:",
        "negative is sooner than fair, positive slower; `worst` is the largest change of any workload.",
        f"Synthetic: the SLAQ families, iteration time a/s + b with b/a ~ U{SERIAL_FRACTION}. Recorded",
        "searches and Keras curves: the trace's jobs drawn anew per seed, each with its measured seconds",
        f"per slot count (Keras seconds scaled so the median one-worker iteration takes {KERAS_ITERATION_S:g} s).",
        f"Recorded searches report placer-search's default loss signal (`--loss={DEFAULT_LOSS}`) to the",
        "allocators; their time to 90% is measured on the best step time so far, whatever the allocator saw.",
        "Every job is capped at its fastest measured slot count, under every allocator.",
        "",
        "| workload | slots | fair: time to 90% (s) | " + " | ".join(COMPARED) + " |",
        "|---|---|---|" + "---|" * len(COMPARED),
    ]
    for (label, n), share in shares.items():
        cells = [f"{share[a]['change']:+.1%} (worst {share[a]['worst']:+.1%})" if a in share else "-" for a in COMPARED]
        lines.append(f"| {label} | {n} | {share['fair']['t90']:.1f} | " + " | ".join(cells) + " |")
    lines += ["", "Targets (time to 90%, median change against fair):", ""]
    for label, cut in TARGET_CUT.items():
        if (label, MAIN_SLOTS) in shares:
            got = shares[(label, MAIN_SLOTS)]["slaq"]["change"]
            lines.append(
                f"- {label}, {MAIN_SLOTS} slots: slaq {got:+.1%}, target -{cut:.0%} or better: {verdict(got <= -cut)}"
            )
    worst = max((s["slaq-safe"]["worst"], k) for k, s in shares.items() if "slaq-safe" in s)
    lines.append(
        f"- slaq-safe at most {SAFE_LOSS:.0%} slower than fair on every workload: worst {worst[0]:+.1%} "
        f"({worst[1][0]}, {worst[1][1]} slots): {verdict(worst[0] <= SAFE_LOSS)}"
    )
    return lines


def latency_lines(lat, jobs_axis, slots_axis) -> list[str]:
    lines = [
        "",
        "### Allocation latency",
        "",
        "Median seconds of one `allocate()` call (curve fits cached, as they are after each report), in ms.",
        "",
        "| jobs | " + " | ".join(f"{s} slots (total / min / fair)" for s in slots_axis) + " |",
        "|---|" + "---|" * len(slots_axis),
    ]
    for n in jobs_axis:
        cells = [
            f"{lat[('total', n, s)] * 1e3:.1f} / {lat[('min', n, s)] * 1e3:.1f} / {lat[('fair', n, s)] * 1e3:.2f}"
            for s in slots_axis
        ]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines.append("")
    for name, label in (("total", "SLAQ's total objective"), ("min", "max-min objective")):
        got = lat[(name, 4000, 16384)]
        lines.append(
            f"- {label}, 4,000 jobs on 16,384 slots under {LATENCY_S * 1e3:.0f} ms: {got * 1e3:.1f} ms: "
            f"{verdict(got < LATENCY_S)}"
        )
    return lines


def main(seeds: list[int], quick: bool = False) -> None:
    started = time.time()
    pred = prediction_rows()
    shares = {}
    for label, workloads in families(seeds).items():
        for n in SLOTS:
            names = COMPARED if n == MAIN_SLOTS else ("fair-static", "slaq-safe")
            shares[(label, n)] = sharing(workloads, n, names)
            print(f"{label}, {n} slots: {time.time() - started:.0f} s", flush=True)
    jobs_axis, slots_axis = [500, 1000, 2000, 4000], [1024, 4096, 16384]
    lat = latency(jobs_axis, slots_axis, 3 if quick else 7)
    lines = (
        prediction_lines(pred)
        + sharing_lines(shares, seeds, len(seeds) >= 15)
        + latency_lines(lat, jobs_axis, slots_axis)
    )
    lines += [
        "",
        f"Whole benchmark: {time.time() - started:.0f} s, commit {report.commit()}, --seeds={len(seeds)}.",
    ]
    body = "\n".join(lines)
    print(body)
    report.update_section("slaq", "SLAQ allocator", body, "bench/slaq.py")


def _seeds(argv: list[str]) -> list[int]:
    for a in argv:
        if a.startswith("--seeds="):
            return list(range(int(a.split("=", 1)[1])))
    return [0, 1] if "--quick" in argv else list(range(15))


if __name__ == "__main__":
    main(_seeds(sys.argv[1:]), quick="--quick" in sys.argv[1:])
