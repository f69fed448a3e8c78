"""Which loss signal SLAQ predicts and allocates best with: the "slaq_loss" section of BENCHMARKS.md.

A placement search can report three losses to the allocator (`placer-search
--loss`, placer.sharing.report.search_loss): `mean` (the mean sqrt step time of
its batch), `best` (sqrt of the best step time so far) or `baseline` (REINFORCE's
moving-average baseline). bench/search_trace.py records the same searches under
all three (bench/data/search_trace.csv, search_trace_best.csv,
search_trace_baseline.csv). For each signal:

1. SLAQ's prediction error 10 iterations ahead on that signal's curves
   (bench/slaq_predict.py's prediction_error);
2. plain SLAQ and placer-search's default allocator (slaq-safe) against
   `fair` at MAIN_SLOTS slots on the workloads bench/slaq_data.py draws
   (rearrive, one per seed), each fed that signal, but the time to 90%
   always measured on the best-so-far signal (the quality a researcher gets
   from a search; TraceJob.eval_losses), so that the signals are comparable.
   `fair` does not look at losses, so its times are the same for every signal.

The winner is the signal with the lowest median change against fair under
the default allocator, ties broken by the lower median prediction error;
placer-search's default --loss cites this section.

Run: .venv/bin/python -m bench.slaq_loss [--seeds=N] [--processes=2]
"""

from __future__ import annotations

import multiprocessing
import sys
import time

import numpy as np

from bench import report, slaq_data, slaq_predict, slaq_sharing
from bench.slaq_data import SIGNAL_TRACES, signal_path, with_best_evaluation  # noqa: F401 (signal_path: bench API)
from bench.slaq_traces import TraceJob, load_trace
from placer.sharing.allocators import DEFAULT_ALLOCATOR
from placer.sharing.report import DEFAULT_LOSS, LOSSES

SIGNALS = LOSSES
MAIN_SLOTS = 32  # slots the signals are compared on
FULL_SEEDS = 15  # workloads the SLAQ targets ask for


def change_against_fair(fair_t90: np.ndarray, t90: np.ndarray) -> dict[str, float]:
    """Median and largest per-workload change (t90 / fair_t90 - 1; negative: sooner than fair).

    >>> change_against_fair(np.array([4.0, 2.0, 4.0]), np.array([3.0, 2.0, 6.0]))
    {'change': 0.0, 'worst': 0.5}
    """
    change = np.asarray(t90, dtype=float) / np.asarray(fair_t90, dtype=float) - 1.0
    return {"change": float(np.median(change)), "worst": float(change.max())}


def winner(rows: dict[str, dict], change: str = "change") -> str:
    """The signal with the lowest median change against fair (the rows' field `change`: the default
    allocator's; "slaq_change": plain SLAQ's); ties to the lower median prediction error.

    >>> winner({"a": {"change": -0.1, "pred": 0.05}, "b": {"change": -0.1, "pred": 0.01}})
    'b'
    """
    return min(rows, key=lambda s: (rows[s][change], rows[s]["pred"]))


POLICIES = ("slaq", DEFAULT_ALLOCATOR)  # each fed the signal; the winner is judged under the default


def _workload_t90(args: tuple) -> tuple[str, int, dict[str, float]]:
    """Worker: (signal, seed, jobs) -> (signal, seed, {"fair" and each of POLICIES: mean time to 90% in s})."""
    signal, seed, jobs = args
    share = slaq_sharing.sharing([slaq_data.rearrive(jobs, seed, slaq_data.NUM_JOBS)], MAIN_SLOTS, POLICIES)
    return signal, seed, {p: share[p]["t90"] for p in ("fair", *POLICIES)}


def measure(seeds: list[int], processes: int) -> dict[str, dict]:
    """Per signal: prediction error and SLAQ's time to 90% (on best so far) against fair."""
    traces = {s: load_trace(path) for s, path in SIGNAL_TRACES.items()}
    jobs = {s: with_best_evaluation(traces[s], traces["best"]) for s in SIGNALS}
    todo = [(s, seed, jobs[s]) for s in SIGNALS for seed in seeds]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        done = pool.map(_workload_t90, todo, chunksize=1)
    rows = {}
    for s in SIGNALS:
        pred = slaq_predict.prediction_error(traces[s])
        t90 = {p: np.array([t[p] for sig, _, t in done if sig == s]) for p in ("fair", *POLICIES)}
        rows[s] = {"fits": pred["fits"], "pred": pred["median"], "p90": pred["p90"]}
        rows[s].update({f"{p}_t90": float(np.median(t)) for p, t in t90.items()})
        for p in POLICIES:  # the default's change is the row's "change" (what `winner` compares)
            got = change_against_fair(t90["fair"], t90[p])
            rows[s].update(got if p == DEFAULT_ALLOCATOR else {f"{p}_{k}": v for k, v in got.items()})
    return rows


def lines(rows: dict[str, dict], seeds: list[int], jobs: list[TraceJob]) -> list[str]:
    warm = sum("-warm" in j.job_id for j in jobs)
    scale = (
        "at full scale"
        if len(seeds) >= FULL_SEEDS
        else f"NOT at full scale ({len(seeds)} workloads per signal; the SLAQ targets ask for {FULL_SEEDS})"
    )
    best = winner(rows)
    out = [
        f"The recorded searches ({len(jobs)}: {len(jobs) - warm} from scratch, {warm} warm-started;",
        f"{jobs[0].iterations} iterations each) under each `--loss` signal. Prediction: `slaq_curves.recent_fit`",
        f"{slaq_predict.AHEAD} iterations ahead on the signal's own curves, error relative to the recorded loss.",
        f"Sharing: {slaq_data.NUM_JOBS} jobs per workload drawn anew per seed, Poisson arrivals (mean",
        f"{slaq_data.MEAN_GAP_S:g} s), {MAIN_SLOTS} slots, epochs of 5 s, medians over {len(seeds)} workloads",
        f"(seeds {seeds[0]}..{seeds[-1]}), {scale}. Plain `slaq` and placer-search's default allocator",
        f"(`{DEFAULT_ALLOCATOR}`) are fed the signal; the time to 90% is always measured on the best-so-far",
        "signal (sqrt of the best step time), whatever the allocator saw; jobs whose best never improved",
        "are left out of the mean. Change = median over workloads of (the allocator's mean time to 90%) /",
        "(fair's on the same workload) - 1: negative is sooner than fair; in brackets the worst workload.",
        "",
        f"| signal | fits | prediction median | prediction p90 | fair: time to 90% (s) | slaq vs fair "
        f"| {DEFAULT_ALLOCATOR} vs fair |",
        "|---|---|---|---|---|---|---|",
    ]
    for s, r in rows.items():
        out.append(
            f"| {s} | {r['fits']} | {r['pred']:.2%} | {r['p90']:.2%} | {r['fair_t90']:.1f} "
            f"| {r['slaq_change']:+.1%} ({r['slaq_worst']:+.1%}) | {r['change']:+.1%} ({r['worst']:+.1%}) |"
        )
    now = "the same" if best == DEFAULT_LOSS else "NOT the same"
    plain = winner(rows, "slaq_change")
    out += [
        "",
        f"Winner under `{DEFAULT_ALLOCATOR}` (lowest median change against fair, ties to the lower prediction "
        f"error): `{best}` ({rows[best]['change']:+.1%} against fair). `placer-search --loss` defaults to "
        f"`{DEFAULT_LOSS}`: {now}. Under plain `slaq` the best signal is `{plain}` "
        f"({rows[plain]['slaq_change']:+.1%}).",
    ]
    return out


def main(seeds: list[int], processes: int) -> None:
    started = time.time()
    rows = measure(seeds, processes)
    body = lines(rows, seeds, load_trace(SIGNAL_TRACES["mean"]))
    body += [
        "",
        f"Whole benchmark: {time.time() - started:.0f} s, commit {report.commit()}, --seeds={len(seeds)}, "
        f"{processes} processes.",
    ]
    text = "\n".join(body)
    print(text)
    report.update_section("slaq_loss", "SLAQ: which loss signal", text, "bench/slaq_loss.py")


def _flag(argv: list[str], name: str, default: int) -> int:
    for a in argv:
        if a.startswith(f"--{name}="):
            return int(a.split("=", 1)[1])
    return default


if __name__ == "__main__":
    main(list(range(_flag(sys.argv[1:], "seeds", FULL_SEEDS))), _flag(sys.argv[1:], "processes", 2))
