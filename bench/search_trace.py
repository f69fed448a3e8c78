"""Records placement-search loss curves as a SLAQ trace: bench/data/search_trace.csv.

Each job is one RL placement search as `placer-search` runs it (the paper's
method: no warm start), on a paper-size graph with costs from Grappler's model
of the paper's machines, measured by the simulator, S = 16 placements sampled
per iteration. The loss of an iteration is what a search reports to SLAQ: the
mean sqrt step time of its samples (failed ones at `failing_step_time`).

Seconds per iteration on s slots (the trace's `seconds_s` columns), from what
the search did: the policy's own time (sampling and update; the median over
the search's iterations, measured here) plus the time to measure the S
placements on s slots, dealt round-robin, each slot measuring its share one
after another. Measuring a placement on a device means running it for
MEASURE_STEPS steps (SessionMeasurer's default: 2 warm-up, 5 timed, 1 traced);
a failed placement fails in its first step, charged the median step time of
the iteration's successful samples.

Jobs arrive as a Poisson process with a mean gap of 15 s (the SLAQ paper's;
bench/slaq.py draws new arrivals for each of its workloads).
About 10 minutes on 2 cores:

  .venv/bin/python -m bench.search_trace [--steps=80]
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
from absl import app, flags

from bench import report
from bench import slaq as slaq_bench

_STEPS = flags.DEFINE_integer("steps", 80, "REINFORCE iterations per search.")
_OUT = flags.DEFINE_string("out", os.path.join(report.ROOT, "bench", "data", "search_trace.csv"), "Trace CSV.")

SAMPLES = 16  # placements per iteration = the most slots a search can use
MEASURE_STEPS = 8  # device steps to measure one placement: SessionMeasurer's 2 warm-up + 5 timed + 1 traced
MODELS = ("configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py")
CLUSTERS = ("k80x2", "k80x4")


def jobs() -> list[tuple[str, str, str, int]]:
    """(name, config spec, cluster, seed) of the 20 recorded searches."""
    out = []
    for seed in range(4):
        for spec in MODELS:
            for cluster in CLUSTERS:
                name = f"{os.path.basename(spec)[:-3]}-{cluster}-s{seed}"
                out.append((name, spec, cluster, seed))
    return out[:20]


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


def record(name: str, spec: str, cluster_name: str, seed: int, steps: int):
    """Runs one search; returns (losses [steps], seconds [steps, SAMPLES], policy seconds)."""
    from graphs import pipeline  # noqa: PLC0415
    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415
    from placer.measure import registry  # noqa: PLC0415
    from placer.rl import problem as problem_lib
    from placer.rl import rl_math  # noqa: PLC0415
    from placer.rl.reinforce import Trainer  # noqa: PLC0415

    config = configs_util.load_config(spec)
    tc = config.placer.train
    tc.warm_start = ""
    tc.samples_per_step = SAMPLES
    cluster = cluster_lib.load(cluster_name)
    graph = pipeline.load_graph(cluster, config=config).graph
    problem, _ = problem_lib.make_problem(graph, cluster, config.placer)
    measurer = registry.make_measurer("sim", graph, cluster)
    last: list = []

    class Recording:
        def measure(self, placements):
            last[:] = measurer.measure(placements)
            return last

    losses, device, policy = [], [], []
    with tempfile.TemporaryDirectory() as workdir:
        trainer = Trainer(problem, Recording(), config.placer, workdir, seed=seed)
        for _ in range(steps):
            t0 = time.perf_counter()
            trainer.train_step()
            wall = time.perf_counter() - t0
            times = np.array([m.step_time for m in last])
            failed = np.array([not m.ok for m in last])
            losses.append(float(-np.mean(rl_math.rewards(times, failed, tc.failing_step_time))))
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
    return np.array(losses), seconds, policy_s


def main(argv) -> None:
    del argv
    from placer.sharing.slaq_trace import TraceJob, save_trace  # noqa: PLC0415

    out = []
    t0 = time.time()
    for name, spec, cluster, seed in jobs():
        losses, seconds, policy_s = record(name, spec, cluster, seed, _STEPS.value)
        print(
            f"{name}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, policy {policy_s:.2f} s/iteration, "
            f"iteration on 1 / {SAMPLES} slots {np.median(seconds[1:, 0]):.1f} / {np.median(seconds[1:, -1]):.1f} s "
            f"({time.time() - t0:.0f} s so far)",
            flush=True,
        )
        out.append(TraceJob(name, 0.0, np.round(losses, 5), np.round(seconds, 4)))
    os.makedirs(os.path.dirname(_OUT.value), exist_ok=True)
    save_trace(_OUT.value, slaq_bench.rearrive(out, seed=0))
    print(f"wrote {_OUT.value}: {len(out)} searches in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    app.run(main)
