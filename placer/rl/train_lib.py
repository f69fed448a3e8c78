"""One RL placement search, end to end: load, group, train, report.

The library behind `placer-train`, the demo and the benchmarks.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from baselines import registry as baseline_registry
from graphs import local_cluster, pipeline
from placer.core import atomic
from placer.core.errors import InputError
from placer.measure import bounds
from placer.measure import registry as measure_registry
from placer.rl import problem as problem_lib
from placer.rl.reinforce import Trainer


def check_fresh_workdir(workdir: str, resume: bool) -> None:
    """Refuses to start over a workdir that holds a search, unless resuming."""
    has_run = os.path.exists(os.path.join(workdir, "run.json"))
    if has_run and not resume:
        raise InputError(f"{workdir}: holds an earlier search; pass --resume to continue it or pick another --workdir")


def run(
    config,
    *,
    workdir: str,
    steps: int,
    seed: int = 0,
    resume: bool = False,
    graph_path: str | None = None,
    progress: bool = True,
    log=print,
    max_seconds: float = 0.0,
) -> dict:
    """Trains the RL placer and writes best_placement.json and summary.json.

    Args:
      config: a model config with `placer`, `cluster` and `measure` fields
        (the model section is ignored when `graph_path` is given).
      workdir: output folder (checkpoints, TensorBoard events, results).
      steps: total policy-gradient steps (counting resumed ones); positive.
      seed: seeds the policy weights and the sampling.
      resume: continue the search saved in `workdir`.
      graph_path: a graph JSON file to place instead of the config's model.
      progress: show a progress line.
      log: where to print the summary lines.
      max_seconds: stop training after this much wall time (0 = no limit).

    Returns:
      The summary dict that is also written to summary.json.

    Raises:
      InputError: bad steps, cluster, measure kind, or a checkpoint that does not match.
    """
    if steps <= 0:
        raise InputError(f"--steps must be positive, got {steps}")
    check_fresh_workdir(workdir, resume)
    t0 = time.time()
    cluster = local_cluster.load(config.cluster)
    kind = config.measure
    loaded = pipeline.load_graph(
        cluster, config=None if graph_path else config, graph_path=graph_path, need_model=kind != "sim"
    )
    graph = loaded.graph
    log(f"{graph.name}: {graph.num_ops} ops loaded in {time.time() - t0:.1f} s")
    measurer = measure_registry.make_measurer(kind, graph, cluster, model=loaded.model)
    tc = config.placer.train
    warm = None
    if tc.warm_start:  # deterministic, so a resumed search gets the same groups
        log(f"warm start: placing and measuring {tc.warm_start}")
        warm = best_baseline(graph, cluster, measurer, tc.warm_start, seed, log)
    log(f"grouping {graph.num_ops} ops (target {config.placer.grouping.get('target_groups', 0)} groups)")
    problem, groups = problem_lib.make_problem(
        graph, cluster, config.placer, op_colors=None if warm is None else warm[1].devices
    )
    log(
        f"{graph.name}: {graph.num_ops} ops, {groups.num_groups} groups ({groups.num_leaders} placed, the rest "
        f"tied), {cluster.num_devices} devices ({cluster.name}), measure={kind}; prepared in {time.time() - t0:.1f} s"
    )
    trainer = Trainer(
        problem, measurer, config.placer, workdir, seed=seed, metadata={"cluster": cluster.name, "measure": kind}
    )
    start = trainer.restore() if resume else 0
    if resume:
        log(f"resumed at step {start}, best so far {float(trainer.best_time.numpy()):.4f} s")
    elif warm is not None:
        target = np.zeros(problem.num_groups, np.int32)
        np.maximum.at(target, problem.op_group, warm[1].devices)
        nll = trainer.warm_start(target[problem.leader], tc.warm_start_steps, tc.warm_start_learning_rate)
        log(
            f"warm start: imitated {warm[1].metadata.get('method')} ({warm[0]:.4f} s) for "
            f"{tc.warm_start_steps} steps, final NLL {nll:.3f}"
        )
    t_train = time.time()
    reached: list[tuple[int, float, float]] = []  # (step, seconds, best) whenever best improved

    def on_step(stats):
        if not reached or stats["best_step_time"] < reached[-1][2]:
            reached.append((stats["step"], time.time() - t_train, stats["best_step_time"]))

    last = trainer.train(steps, progress=progress, on_step=on_step, max_seconds=max_seconds)
    trainer.save()
    wall = time.time() - t_train
    lb = bounds.lower_bound(graph, cluster)
    best = float(trainer.best_time.numpy())
    summary = {
        "graph": graph.name,
        "fingerprint": graph.fingerprint(),
        "ops": graph.num_ops,
        "groups": groups.num_groups,
        "cluster": cluster.name,
        "measure": kind,
        "steps": int(trainer.step.numpy()),
        "seed": seed,
        "best_step_time": best if np.isfinite(best) else None,
        "lower_bound": lb,
        "ratio_to_lower_bound": best / lb if np.isfinite(best) and lb > 0 else None,
        "train_seconds": wall,
        "seconds_to_within_5pct": _time_to_within(reached, best, 0.05),
        "steps_per_second": (int(trainer.step.numpy()) - start) / max(wall, 1e-9),
        "samples_per_step": int(tc.samples_per_step),
        "warm_start": None if warm is None else {"method": warm[1].metadata.get("method"), "step_time": warm[0]},
        "last_step": last,
    }
    atomic.write_text(os.path.join(workdir, "summary.json"), json.dumps(summary, indent=1, default=str))
    if np.isfinite(best):
        log(
            f"best step time {best:.4f} s, {best / lb:.2f}x the lower bound ({lb:.4f} s); "
            f"{summary['steps']} steps in {wall:.1f} s"
        )
    else:
        log(
            f"no placement ran: every sample failed ({', '.join(last.get('failures', [])) or 'unknown'}); "
            f"{summary['steps']} steps in {wall:.1f} s"
        )
    return summary


def best_baseline(graph, cluster, measurer, methods: str, seed: int, log=print):
    """The fastest of the named baselines (comma-separated) as measured by `measurer`.

    Returns:
      (step time in seconds, Placement), or None when none of them ran.
    """
    placements = []
    for name in [n.strip() for n in methods.split(",") if n.strip()]:
        try:
            placements.append(baseline_registry.get(name)(graph, cluster, seed=seed))
        except InputError as e:
            log(f"warm start: skipping {name} ({e})")
    results = measurer.measure(placements) if placements else []
    ok = [(m.step_time, p) for m, p in zip(results, placements, strict=True) if m.ok]
    if not ok:
        log("warm start: no baseline placement ran; starting from a uniform policy")
        return None
    return min(ok, key=lambda x: x[0])


def _time_to_within(reached, best: float, tol: float) -> float | None:
    """Seconds until the best step time first came within `tol` of the final best."""
    for _, seconds, t in reached:
        if t <= best * (1 + tol):
            return seconds
    return None
