"""Records placement-search loss curves as SLAQ traces, one per loss signal, in bench/data/.

Each job is one RL placement search on a paper-size graph (RNNLM, NMT,
Inception-V3) on 2 or 4 K80s, with costs from Grappler's model of the paper's
machines, measured by the simulator, S = 16 placements sampled per iteration.
Half the searches start from scratch (a uniform policy, the paper's method and
what `placer-search` runs), half are warm-started as `placer-train` does by
default (`warm_start = "all"`: the policy first imitates the fastest baseline
placement, which counts as the best at step 0); which is which alternates over
(seed, model, cluster), so every graph and cluster has both. Job names end in
`-scratch` or `-warm`. The warm start's own time (placing and measuring the
baselines, the imitation steps) comes before iteration 0 and is not in the trace.

The loss of an iteration is what a search reports to SLAQ under each
`placer-search --loss` (placer.sharing.report.search_loss, from the same
statistics placer-search passes it), one trace file per signal, the jobs,
arrivals and seconds the same in all three:

- search_trace.csv: `mean`, the mean sqrt step time of the iteration's samples
  (failed ones at `failing_step_time`);
- search_trace_best.csv: `best`, sqrt of the best step time so far;
- search_trace_baseline.csv: `baseline`, minus REINFORCE's moving-average reward baseline.

Seconds per iteration on s slots (the trace's `seconds_s` columns), from what
the search did: the policy's own time (sampling and update; the median over
the search's iterations, measured here with one TF thread per process) plus
the time to measure the S placements on s slots, dealt round-robin, each slot
measuring its share one after another. Measuring a placement on a device means
running it for MEASURE_STEPS steps (SessionMeasurer's default: 2 warm-up, 5
timed, 1 traced); a failed placement fails in its first step, charged the
median step time of the iteration's successful samples.

Jobs arrive as a Poisson process with a mean gap of 15 s (the SLAQ paper's;
bench/slaq.py draws new arrivals for each of its workloads). The searches run
in --processes worker processes, each seeded by its job, so the losses do not
depend on which process ran which job. About 25 minutes on 2 cores:

  .venv/bin/python -m bench.search_trace [--steps=80] [--processes=2]
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time

import numpy as np
from absl import app, flags

from bench import slaq_data, slaq_loss

_STEPS = flags.DEFINE_integer("steps", 80, "REINFORCE iterations per search.")
_PROCESSES = flags.DEFINE_integer("processes", 2, "Worker processes running searches (one per core).")
_JOBS = flags.DEFINE_integer("jobs", 20, "Searches recorded (the first of jobs(); fewer for a quick check).")
_OUT = flags.DEFINE_string(
    "out", slaq_loss.SIGNAL_TRACES["mean"], "Trace CSV of the mean signal; the others beside it."
)

SAMPLES = 16  # placements per iteration = the most slots a search can use
MEASURE_STEPS = 8  # device steps to measure one placement: SessionMeasurer's 2 warm-up + 5 timed + 1 traced
MODELS = ("configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py")
CLUSTERS = ("k80x2", "k80x4")
SIGNALS = slaq_loss.SIGNALS


def jobs(count: int = 20) -> list[tuple[str, str, str, int, bool]]:
    """(name, config spec, cluster, seed, warm) of the recorded searches.

    Warm iff seed + model index + cluster index is odd: of the first 20, 10 warm and 10 from scratch.
    """
    out = []
    for seed in range(4):
        for m, spec in enumerate(MODELS):
            for c, cluster in enumerate(CLUSTERS):
                warm = (seed + m + c) % 2 == 1
                name = f"{os.path.basename(spec)[:-3]}-{cluster}-s{seed}-{'warm' if warm else 'scratch'}"
                out.append((name, spec, cluster, seed, warm))
    return out[:count]


def slot_seconds(policy_s: float, device_s: np.ndarray, max_slots: int) -> np.ndarray:
    """[max_slots] seconds of one iteration on s = 1..max_slots slots.

    Args:
      policy_s: seconds of sampling and updating the policy.
      device_s: [S] seconds each placement occupies a slot, in sample order
        (dealt round-robin: placement i goes to slot i mod s).
      max_slots: largest slot count.
    """
    out = np.empty(max_slots)
    for s in range(1, max_slots + 1):
        out[s - 1] = policy_s + np.bincount(np.arange(len(device_s)) % s, weights=device_s, minlength=s).max()
    return out


def record(spec: str, cluster_name: str, seed: int, steps: int, warm: bool) -> dict:
    """Runs one search.

    Returns:
      {"losses": signal -> [steps] loss, "seconds": [steps, SAMPLES], "policy_s": seconds per
      iteration of the policy, "warm_s": seconds of the warm start (0 from scratch)}.
    """
    from graphs import pipeline  # noqa: PLC0415
    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415
    from placer.measure import registry  # noqa: PLC0415
    from placer.rl import rl_math, train_lib  # noqa: PLC0415
    from placer.rl.reinforce import Trainer, seed_everything  # noqa: PLC0415
    from placer.sharing.report import search_loss  # noqa: PLC0415

    seed_everything(seed)
    config = configs_util.load_config(spec)
    tc = config.placer.train
    tc.warm_start = "all" if warm else ""
    tc.samples_per_step = SAMPLES
    cluster = cluster_lib.load(cluster_name)
    graph = pipeline.load_graph(cluster, config=config).graph
    measurer = registry.make_measurer("sim", graph, cluster)
    quiet = lambda *_: None  # noqa: E731
    t0 = time.perf_counter()
    problem, _, best_baseline = train_lib.prepare_problem(graph, cluster, config.placer, measurer, seed, quiet)
    last: list = []

    class Recording:
        def measure(self, placements):
            last[:] = measurer.measure(placements)
            return last

    losses: dict[str, list[float]] = {s: [] for s in SIGNALS}
    device, policy = [], []
    with tempfile.TemporaryDirectory() as workdir:
        trainer = Trainer(problem, Recording(), config.placer, workdir, seed=seed)
        if best_baseline is not None:
            train_lib.apply_warm_start(trainer, problem, best_baseline, tc, quiet)
        warm_s = time.perf_counter() - t0 if warm else 0.0
        for _ in range(steps):
            t0 = time.perf_counter()
            stats = trainer.train_step()
            wall = time.perf_counter() - t0
            times = np.array([m.step_time for m in last])
            failed = np.array([not m.ok for m in last])
            # As placer.sharing.running.Search reports it.
            mean_loss = float(-np.mean(rl_math.rewards(times, failed, tc.failing_step_time)))
            for s in SIGNALS:
                losses[s].append(search_loss(s, mean_loss, float(stats["best_step_time"]), float(stats["baseline"])))
            ok_median = float(np.median(times[~failed])) if (~failed).any() else tc.failing_step_time
            device.append(np.where(failed, ok_median, MEASURE_STEPS * times))
            policy.append(wall)
    # The first iteration traces the TF functions: not the policy's own time.
    policy_s = float(np.median(policy[1:])) if steps > 1 else policy[0]
    # Trace row 0, the initial loss, is that of the first samples (before any update), as
    # placer-search reports it; row k that of the samples after k updates, taking step k's time.
    seconds = np.zeros((steps, SAMPLES))
    for k in range(1, steps):
        seconds[k] = slot_seconds(policy_s, device[k], SAMPLES)
    return {
        "losses": {s: np.array(v) for s, v in losses.items()},
        "seconds": seconds,
        "policy_s": policy_s,
        "warm_s": warm_s,
    }


def _record_job(args: tuple) -> tuple[str, dict, float]:
    """Worker: (name, spec, cluster, seed, warm, steps) -> (name, record's dict, seconds it took)."""
    name, spec, cluster, seed, warm, steps = args
    t0 = time.perf_counter()
    return name, record(spec, cluster, seed, steps, warm), time.perf_counter() - t0


def _one_thread() -> None:
    """Pool initializer: one TF thread per worker, so the workers do not share cores."""
    import tensorflow as tf  # noqa: PLC0415

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def main(argv) -> None:
    del argv
    from bench.slaq_traces import TraceJob, load_trace, save_trace  # noqa: PLC0415

    todo = [(*job, _STEPS.value) for job in jobs(_JOBS.value)]
    traces: dict[str, list] = {s: [] for s in SIGNALS}
    t0 = time.time()
    with multiprocessing.get_context("spawn").Pool(_PROCESSES.value, initializer=_one_thread) as pool:
        for name, rec, took in pool.imap(_record_job, todo):  # in job order, whichever worker ran it
            mean = rec["losses"]["mean"]
            secs = rec["seconds"]
            print(
                f"{name}: mean loss {mean[0]:.3f} -> {mean[-1]:.3f}, best {rec['losses']['best'][-1]:.3f}, "
                f"policy {rec['policy_s']:.2f} s/iteration, warm start {rec['warm_s']:.0f} s, "
                f"iteration on 1 / {SAMPLES} slots {np.median(secs[1:, 0]):.1f} / {np.median(secs[1:, -1]):.1f} s, "
                f"search {took:.0f} s ({time.time() - t0:.0f} s so far)",
                flush=True,
            )
            for s in SIGNALS:
                traces[s].append(TraceJob(name, 0.0, np.round(rec["losses"][s], 5), np.round(secs, 4)))
    os.makedirs(os.path.dirname(_OUT.value) or ".", exist_ok=True)
    for s in SIGNALS:
        path = slaq_loss.signal_path(_OUT.value, s)
        save_trace(path, slaq_data.rearrive(traces[s], seed=0))
        back = load_trace(path)  # the format reader accepts it
        print(f"wrote {path}: {len(back)} searches ({s} signal)")
    print(f"{len(todo)} searches of {_STEPS.value} iterations in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    app.run(main)
