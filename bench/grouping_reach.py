"""What the groups can express: writes BENCHMARKS.md "grouping_reach".

A search over groups can only find placements that put every group (every tie
class) on one device. For each paper-size graph, with grouping step 2 (gradients
join their forward op) off and on, and for each scope depth, this bench groups
the graph as `placer-train` does from scratch (placer.rl.problem), then:

- projects every non-search baseline's op placement onto the groups (each tie
  class on the device that holds most of its compute, baselines.space.class_devices)
  and measures it: how much of the baseline survives the grouping;
- runs simulated annealing (from single_gpu) and random search on the groups,
  each with the same number of measured placements.

Usage: python -m bench.grouping_reach [--budget=3200] [--models=configs/nmt.py,...] [--depths=0,2]
       [--colocate_gradients=false,true]
"""

from __future__ import annotations

import itertools
import time

import numpy as np
from absl import app, flags
from tabulate import tabulate

_BUDGET = flags.DEFINE_integer("budget", 3200, "Measured placements per search (200 RL steps of 16 samples).")
_MODELS = flags.DEFINE_list(
    "models", ["configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py"], "Model configs."
)
_DEPTHS = flags.DEFINE_list("depths", ["0", "2"], "grouping.scope_depth values to compare (0 = names not read).")
_COLOCATE = flags.DEFINE_list(
    "colocate_gradients", ["false", "true"], "grouping.colocate_gradients values to compare (grouping step 2)."
)
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset.")
_PROJECTED = ("expert", "metis", "m_etf", "m_sct")
_SEARCHES = ("local_search", "random_search")


def _rows(spec: str, colocate: list[bool], depths: list[int], budget: int) -> list[list]:
    from baselines import registry, space
    from graphs import pipeline
    from placer.core import cluster as cluster_lib
    from placer.core import configs_util
    from placer.measure.simulator import Simulator
    from placer.rl import problem as problem_lib

    config = configs_util.load_config(spec)
    config.cluster, config.measure = _CLUSTER.value, "sim"
    cluster = cluster_lib.load(_CLUSTER.value)
    graph = pipeline.load_graph(cluster, config=config).graph
    sim = Simulator(graph, cluster)
    weight = np.nan_to_num(graph.cost_for(cluster.devices[-1].type))  # a GPU's compute seconds
    placed = {n: registry.get(n)(graph, cluster, seed=0) for n in _PROJECTED}
    rows = [
        [graph.name, "ops (no grouping)", graph.num_ops, None]
        + [sim.measure([placed[n]])[0].step_time for n in _PROJECTED]
        + [None, None]
    ]
    gc = config.placer.grouping
    configured = (gc.colocate_gradients, gc.scope_depth)
    for step2, depth in itertools.product(colocate, depths):
        gc.colocate_gradients, gc.scope_depth = step2, depth
        problem, groups = problem_lib.make_problem(graph, cluster, config.placer)
        label = f"step 2 {'on' if step2 else 'off'}, scope_depth={depth}"
        row = [
            graph.name,
            label + (" (config)" if (step2, depth) == configured else ""),
            groups.num_groups,
            groups.num_leaders,
        ]
        for name in _PROJECTED:
            op_class = problem.leader[problem.op_group]
            target = space.class_devices(placed[name].devices, op_class, problem.allowed, weight + 1e-9)[problem.leader]
            row.append(sim.measure([problem.placement(target)])[0].step_time)
        for name in _SEARCHES:
            t0 = time.time()
            p = registry.place(name, graph, cluster, seed=0, measurer=sim, budget=budget, groups=groups)
            row.append(p.metadata["step_time"])
            print(f"  {graph.name} {label}: {name} {row[-1]:.4f} s in {time.time() - t0:.0f} s", flush=True)
        rows.append(row)
        print("  " + " | ".join(map(str, row)), flush=True)
    return rows


def _bool(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise app.UsageError(f"--colocate_gradients: {value!r} is not true or false")
    return value.lower() == "true"


def main(argv):
    del argv
    from bench import report

    commit = report.commit()
    start = time.time()
    rows = []
    for spec in _MODELS.value:
        rows += _rows(spec, [_bool(v) for v in _COLOCATE.value], [int(d) for d in _DEPTHS.value], _BUDGET.value)
    head = ["graph", "grouping", "groups", "tie classes", *(f"{n} (s)" for n in _PROJECTED)]
    head += [f"annealing, {_BUDGET.value} (s)", f"random, {_BUDGET.value} (s)"]
    body = [
        f"Simulated `{_CLUSTER.value}`, Grappler costs, commit {commit}, {time.time() - start:.0f} s in all. "
        'Row "ops": each baseline as placed, op by op. Other rows: the graph grouped as `placer-train` groups it '
        "from scratch (target 256 groups) with grouping step 2 (`grouping.colocate_gradients`: gradient ops "
        "join their forward op) off or on and the given `grouping.scope_depth`; each baseline projected onto "
        "the groups (every tie class on the device holding most of its GPU compute) and measured; then "
        f"simulated annealing from single_gpu and random search, {_BUDGET.value} measured placements each, seed 0. "
        "A projected time far above the baseline's own means the groups cannot express that placement.",
        "",
        tabulate(rows, head, tablefmt="github", floatfmt=".4f", missingval="-"),
    ]
    print("\n".join(body))
    report.update_section("grouping_reach", "What the groups can express", "\n".join(body), "bench/grouping_reach.py")


if __name__ == "__main__":
    app.run(main)
