"""Search speed on op-level NMT: the simulator's compiled kernel per placement,
annealing's placements per second, and the seq2seq policy's own time per placement.

  .venv/bin/python -m bench.search_speed [--repeats=5] [--budget=16000] [--policy_steps=5]

Graph: paper-size NMT (configs/nmt.py, 2 layers) on k80x4, costs from
`graphs.costs.grappler_costs` through graphs.pipeline's cache. Writes the
"search_speed" section of BENCHMARKS.md. Targets: annealing (local_search, the
settings placer-compare uses) at least 300 op-level placements per second,
and the policy at most 20 ms per placement (sampling plus update, not
measuring) on grouped NMT, a step of 16 samples.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np
from absl import app, flags

from bench import report
from placer.core import clocks

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed runs of each figure; medians are reported.")
_BATCH = flags.DEFINE_integer("batch", 64, "Placements per simulator call in the side-by-side timing.")
_BUDGET = flags.DEFINE_integer("budget", 16000, "Placements per annealing run.")
_SEARCH_REPEATS = flags.DEFINE_integer("search_repeats", 3, "Annealing runs (seeds 0, 1, ...).")
_POLICY_STEPS = flags.DEFINE_integer("policy_steps", 5, "Timed policy steps (after one untimed).")
_SKIP_POLICY = flags.DEFINE_bool("skip_policy", False, "Skip the policy timing (it imports TensorFlow).")

TARGET_RATE = 300.0  # annealing, op-level NMT placements per second
TARGET_POLICY_MS = 20.0  # policy sampling plus update per placement, grouped NMT


def _load():
    from graphs import pipeline  # noqa: PLC0415
    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415

    config = configs_util.load_config("configs/nmt.py")
    cluster = cluster_lib.load("k80x4")
    return pipeline.load_graph(cluster, config=config).graph, cluster, config


def bench_simulator(graph, cluster, repeats: int, batch: int) -> tuple[list[str], dict]:
    """Op-level placements per second of the compiled kernel, `batch` placements per call and one."""
    from baselines import space as space_lib  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    sim = Simulator(graph, cluster)
    space = space_lib.Space(graph, cluster, None, 256)
    dev = space.devices(space.random(np.random.default_rng(0), batch))
    sim.run(dev[:2])  # compile
    rows, fig = [], {}
    for k in (batch, 1):
        wall, cpu = clocks.median_clocks(lambda k=k: sim.run(dev[:k]), repeats)
        fig[k] = cpu / k
        rows.append(f"| {k} | {wall / k * 1e3:.2f} | {cpu / k * 1e3:.2f} |")
    return [
        f"Op-level NMT ({graph.num_ops:,} ops, {graph.num_edges:,} edges) on `{cluster.name}`: {batch} random "
        "placements of annealing's tie classes, legalised as annealing's candidates are; medians of "
        f"{repeats}.",
        "",
        "| placements per call | wall ms per placement | CPU ms per placement |",
        "|---|---|---|",
        *rows,
        "",
        f"One placement per call: {fig[1] * 1e3:.2f} ms of CPU time "
        f"({'under' if fig[1] < 1e-3 else 'NOT under'} 1 ms).",
    ], fig


def bench_annealing(graph, cluster, budget: int, repeats: int) -> tuple[list[str], float]:
    """Annealing placements per second (device arrays, compiled simulation)."""
    from baselines import registry  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    def run(measurer, n, seed):
        t0, c0 = time.perf_counter(), time.process_time()
        p = registry.place("local_search", graph, cluster, seed=seed, measurer=measurer, budget=n)
        return time.perf_counter() - t0, time.process_time() - c0, p.metadata["step_time"]

    sim = Simulator(graph, cluster)
    run(sim, 32, 0)  # compile
    new = [run(sim, budget, s) for s in range(repeats)]
    new_s = statistics.median(w for w, _, _ in new)
    new_c = statistics.median(c for _, c, _ in new)
    rate, cpu_rate = budget / new_s, budget / new_c
    lines = [
        "Annealing (`local_search`, placer-compare's settings: batch 16, t_start 0.02, t_end 0.0005, "
        "256 target groups) on op-level NMT, wall time of the whole call (grouping included):",
        "",
        "| budget | runs | median wall s | placements per wall s | per CPU s | best step time (s) per run |",
        "|---|---|---|---|---|---|",
        f"| {budget:,} | {repeats} | {new_s:.1f} | {rate:,.0f} | {cpu_rate:,.0f} | "
        f"{', '.join(f'{t:.4f}' for _, _, t in new)} |",
        "",
        f"Target: at least {TARGET_RATE:.0f} placements per second: {'met' if rate >= TARGET_RATE else 'NOT met'} "
        f"in wall time ({rate:,.0f}/s), {'met' if cpu_rate >= TARGET_RATE else 'NOT met'} in CPU time "
        f"({cpu_rate:,.0f}/s).",
    ]
    return lines, rate


def _time_policy(graph, cluster, config, steps: int) -> tuple[tuple[float, ...], int]:
    """((sampling wall, update wall, sampling CPU, update CPU) ms per placement, medians of `steps` steps; groups)."""
    from placer.measure.simulator import Simulator  # noqa: PLC0415
    from placer.rl import problem as problem_lib  # noqa: PLC0415
    from placer.rl import reinforce  # noqa: PLC0415
    from placer.rl.run_files import seed_everything  # noqa: PLC0415

    seed_everything(0)  # deterministic kernels, as placer-train runs them
    problem, _ = problem_lib.make_problem(graph, cluster, config.placer)
    sim = Simulator(graph, cluster)
    trainer = reinforce.Trainer(problem, sim, config.placer, tempfile.mkdtemp(prefix="search_speed_"))
    k = int(config.placer.train.samples_per_step)
    samples, updates = [], []
    for step in range(steps + 1):
        c0 = time.process_time()
        t0 = time.perf_counter()
        actions = trainer.policy.sample(
            problem.type_ids,
            problem.features,
            k,
            seed=(0, step),
            mask_bias=trainer.mask_bias,
            leader=problem.leader,
        )
        t1, c1 = time.perf_counter(), time.process_time()
        times = np.array([m.step_time for m in sim.measure_devices(actions[:, problem.op_group])])
        r = -np.sqrt(np.where(np.isfinite(times), times, 10.0))
        t2, c2 = time.perf_counter(), time.process_time()
        trainer._learn(actions, r, np.ones(k, bool), float(r.mean()), 0.0)
        t3, c3 = time.perf_counter(), time.process_time()
        if step:  # the first step traces and compiles
            samples.append((t1 - t0, c1 - c0))
            updates.append((t3 - t2, c3 - c2))
    figures = tuple(statistics.median(x[i] for x in rows) / k * 1e3 for i in (0, 1) for rows in (samples, updates))
    return figures, problem.num_groups


def bench_policy(graph, cluster, config, steps: int) -> tuple[list[str], float]:
    """The seq2seq policy's sampling plus update per placement (measurement excluded).

    Timed with the config's PPO epochs per batch (the target's setting) and, for comparison, with one.
    """
    tc = config.placer.train
    epochs = int(tc.get("epochs_per_batch", 1))
    rows, totals = [], {}
    for e in (epochs, 1) if epochs != 1 else (epochs,):
        run = config.copy_and_resolve_references()
        run.placer.train.epochs_per_batch = e
        (sample_ms, update_ms, sample_cpu, update_cpu), groups = _time_policy(graph, cluster, run, steps)
        totals[e] = (sample_ms + update_ms, sample_cpu + update_cpu)
        label = f"{e}" + (" (config)" if e == epochs else " (comparison)")
        rows += [
            f"| {label} | wall | {sample_ms:.1f} | {update_ms:.1f} | {totals[e][0]:.1f} |",
            f"| {label} | CPU | {sample_cpu:.1f} | {update_cpu:.1f} | {totals[e][1]:.1f} |",
        ]
    total, total_cpu = totals[epochs]
    k = int(tc.samples_per_step)
    return [
        f"Seq2seq policy (configs/nmt.py: {groups} groups, hidden size {config.placer.policy.hidden_size}, "
        f"{tc.algorithm}), {k} samples per step, "
        f"medians of {steps} steps after one untimed, TF op determinism on (as placer-train runs):",
        "",
        "| epochs per batch | time | sampling ms per placement | update ms per placement | policy ms per placement |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Target (config's {epochs} epochs per batch): at most {TARGET_POLICY_MS:.0f} ms per placement: "
        f"{'met' if total <= TARGET_POLICY_MS else 'NOT met'} in wall time ({total:.1f} ms), "
        f"{'met' if total_cpu <= TARGET_POLICY_MS else 'NOT met'} in CPU time ({total_cpu:.1f} ms).",
    ], total


def main(argv):
    del argv
    graph, cluster, config = _load()
    lines, _ = bench_simulator(graph, cluster, _REPEATS.value, _BATCH.value)
    lines += [""]
    ann, _ = bench_annealing(graph, cluster, _BUDGET.value, _SEARCH_REPEATS.value)
    lines += ann
    if not _SKIP_POLICY.value:
        pol, _ = bench_policy(graph, cluster, config, _POLICY_STEPS.value)
        lines += ["", *pol]
    lines += [
        "",
        f"Commit {report.commit()}; load average during the run {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
        f"the process pinned to {len(os.sched_getaffinity(0))} of them "
        "(wall times on a shared machine; the CPU times are the steadier figures).",
    ]
    body = "\n".join(lines)
    print(body)
    report.update_section(
        "search_speed", "Search speed: compiled simulation, annealing, policy", body, "bench/search_speed.py"
    )


if __name__ == "__main__":
    app.run(main)
