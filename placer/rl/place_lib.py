"""Placement with a pretrained graph policy: the library behind `placer-place`.

Two ways, both measured by the simulator: `search` runs a learned method
started from the policy for a budget of measured placements (by default
`ce_or_annealing`, measured best at 1,000 placements on held-out graphs in
BENCHMARKS.md, "Learned search at equal budgets (earlier methods)"); `place`
is zero-shot: the policy's greedy placement and N sampled ones, measured
together. The fastest is written out and shown beside the baselines measured
by the same backend.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time

import numpy as np
import tabulate

from baselines import registry as baseline_registry
from graphs import local_cluster
from placer.core import fmt
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure import registry as measure_registry
from placer.rl import graph_policy, train_lib, transfer_lib

CHUNK = 64  # samples drawn and measured together


def place(
    policy,
    graph: OpGraph,
    cluster: Cluster,
    placer_config,
    *,
    samples: int | None,
    seed: int,
    source: str,
    max_seconds: float | None = None,
):
    """Places `graph` on `cluster` zero-shot: greedy plus the best of `samples` samples, by the simulator.

    The samples are drawn and measured in chunks of `CHUNK`; with `max_seconds`, no new chunk starts
    once the wall time since the call, plus the last chunk's, would pass it (the greedy placement
    is always measured). Chunk i is drawn with seed (seed, 1 + i), so a run that is not cut short
    gives the same result on any machine. `samples` None with `max_seconds` samples until the
    time is spent.

    Returns:
      dict with the best Placement ("placement"), its step time ("step_time", s),
      the greedy one's ("greedy_step_time", s, inf when it failed), how many samples were
      measured besides it ("samples"), the policy's wall time including measuring ("seconds"),
      the task and the measurer.

    Raises:
      InputError: the graph's feature layout cannot be read, or nothing ran.
    """
    t0 = time.time()
    measurer = measure_registry.make_measurer("sim", graph, cluster)
    task = transfer_lib.make_task(graph, cluster, placer_config, measurer, source)
    leader = task.problem.leader
    actions = [graph_policy.sample_numpy(policy, task.ctx, task.mask_bias, leader, 1, (seed, 0), greedy=True)]
    results = task.problem.measure(measurer, actions[0])
    if samples is None and max_seconds is None:
        raise InputError("give a number of samples or a time budget (max_seconds)")
    limit = np.inf if samples is None else samples
    drawn, chunk_seconds = 0, 0.0
    while drawn < limit:
        if max_seconds is not None and time.time() - t0 + chunk_seconds > max_seconds:
            break
        t_chunk = time.time()
        n = int(min(CHUNK, limit - drawn))
        actions.append(graph_policy.sample_numpy(policy, task.ctx, task.mask_bias, leader, n, (seed, len(actions))))
        results += task.problem.measure(measurer, actions[-1])
        drawn += n
        chunk_seconds = time.time() - t_chunk
    actions = np.concatenate(actions)
    times = np.array([m.step_time if m.ok else np.inf for m in results])
    k = int(np.argmin(times))
    if not np.isfinite(times[k]):
        raise InputError(f"{source}: every placement of the policy failed ({results[0].failure})")
    level = measurer.level(task.problem.placement(actions[k]))
    placement = task.problem.placement(
        actions[k],
        method="pretrained_gnn",
        step_time=float(times[k]),
        cluster=cluster.name,
        measure="sim",
        samples=drawn + 1,  # placements measured: the greedy one and the samples (placer-compare reads it)
        level=level,
    )
    return {
        "placement": placement,
        "step_time": float(times[k]),
        "greedy_step_time": float(times[0]),
        "samples": drawn,
        "seconds": time.time() - t0,
        "task": task,
        "measurer": measurer,
    }


def search(
    policy_dir: str,
    graph: OpGraph,
    cluster_spec: str,
    config,
    *,
    method: str,
    budget: int,
    seed: int,
    max_seconds: float | None = None,
    progress: bool = True,
    log=print,
):
    """Searches `budget` measured placements of `graph` with `method` started from the policy in `policy_dir`.

    The search is placer-train's (placer.rl.train_lib.run with `init_from`) in a scratch folder that is
    removed afterwards; every placement it measures counts, and the best one records how many.

    Returns:
      dict with the best Placement ("placement"), its step time ("step_time", s), the placements measured
      ("placements"), the wall time ("seconds") and a simulator of the graph ("measurer").
    """
    t0 = time.time()
    config = copy.deepcopy(config)
    config.cluster, config.measure = cluster_spec, "sim"
    config.placer.train.method = method
    with tempfile.TemporaryDirectory(prefix="placer-place-") as workdir:
        summary = train_lib.run(
            config, workdir=workdir, steps=0, seed=seed, progress=progress, log=log, max_seconds=max_seconds or 0.0,
            init_from=policy_dir, max_placements=budget, graph=graph,
        )  # fmt: skip
        if summary["best_step_time"] is None:
            raise InputError(f"{graph.name}: every placement {method} measured failed")
        placement = Placement.load(os.path.join(workdir, "best_placement.json"))
    cluster = local_cluster.load(cluster_spec)
    return {
        "placement": placement,
        "step_time": float(summary["best_step_time"]),
        "placements": int(summary["placements"]),
        "seconds": time.time() - t0,
        "measurer": measure_registry.make_measurer("sim", graph, cluster),
        "label": f"pretrained + {method} ({int(summary['placements']):,} placements)",
    }


def baseline_times(graph: OpGraph, cluster: Cluster, measurer, seed: int = 0) -> dict[str, float]:
    """Step time (s) of every registered baseline that does not search by measuring; inf when it failed."""
    out = {}
    for name in baseline_registry.names():
        if name in baseline_registry.MEASURED:
            continue
        try:
            p = baseline_registry.get(name)(graph, cluster, seed=seed)
        except InputError:
            continue  # e.g. a GPU baseline on a cluster without a GPU
        m = measurer.measure([p])[0]
        out[name] = m.step_time if m.ok else float("inf")
    return out


def table(result: dict, baselines: dict[str, float]) -> str:
    """The policy's placement beside the baselines: step time and each one's against the policy's, in words."""
    mine = result["step_time"]
    rows = [[result.get("label", "pretrained (best of greedy + samples)"), fmt.step_time(mine), "-"]]
    if "greedy_step_time" in result:  # zero-shot
        greedy = result["greedy_step_time"]
        rows.append(["pretrained (greedy)", fmt.step_time(greedy), fmt.change(greedy, mine, name="the policy's best")])
    for name, t in sorted(baselines.items(), key=lambda x: x[1]):
        rows.append(
            [name, fmt.step_time(t) if np.isfinite(t) else "failed", fmt.change(t, mine, name="the policy's best")]
        )
    return tabulate.tabulate(rows, headers=["method", "step time", "against the policy's best"], tablefmt="github")
