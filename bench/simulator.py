"""Simulator speed: evaluations per second on the grouped NMT graph, and time per
placement against Grappler's virtual cluster on the full-op Inception-V3 graph.

  .venv/bin/python -m bench.simulator [--repeats=5] [--batch=1024] [--skip_grappler]

Costs: graphs.costs.grappler_costs for the k80x4 preset (Grappler's analytical
model of the paper's K80 and Haswell devices), through graphs.pipeline's
cache. Writes the "simulator" section of BENCHMARKS.md.
"""

from __future__ import annotations

import collections
import os
import time

import numpy as np
from absl import app, flags

from bench import report
from placer.core import clocks

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed runs; medians are reported.")
_BATCH = flags.DEFINE_integer("batch", 1024, "Placements per batched call.")
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset.")
_SKIP_GRAPPLER = flags.DEFINE_bool("skip_grappler", False, "Skip the Inception-V3 comparison with Grappler.")

TARGET_RATE = 1000.0  # placements per second, batched, grouped NMT
TARGET_SPEEDUP = 100.0  # simulator vs Grappler per placement, full-op Inception-V3


def _load(spec: str, cluster, need_model=False):
    from graphs import pipeline  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415

    return pipeline.load_graph(cluster, config=configs_util.load_config(spec), need_model=need_model)


def bench_nmt(cluster, repeats: int, batch: int) -> tuple[list[str], dict]:
    from baselines import space  # noqa: PLC0415
    from placer.core import (
        configs_util,  # noqa: PLC0415
        grouping,  # noqa: PLC0415
    )
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    loaded = _load("configs/nmt.py", cluster)
    graph = loaded.graph
    options = dict(configs_util.load_config("configs/nmt.py").placer.grouping)
    groups = grouping.group(graph, **options)
    t0 = time.perf_counter()
    sim = Simulator(graph, cluster, op_group=groups.op_group)
    init_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    placements = space.random_group_devices(graph, cluster, groups, batch, rng)
    sim.measure_devices(placements[:8])  # warm caches
    rows = []
    figures = {}
    for k in (batch, 64, 4, 1):
        t, c = clocks.median_clocks(lambda k=k: sim.measure_devices(placements[:k]), repeats)
        rows.append(f"| {k} | {t * 1e3:.1f} | {k / t:,.0f} | {k / c:,.0f} |")
        figures[k] = (k / t, k / c)
    ms = sim.measure_devices(placements[:batch])
    ok = sum(m.ok for m in ms)
    fails = dict(collections.Counter(m.failure for m in ms if not m.ok))
    lines = [
        f"Grouped NMT (paper size, 2 layers: {graph.num_ops:,} ops, {graph.num_edges:,} edges, "
        f"{groups.num_groups} groups, grouping options {options}) on `{cluster.name}`; costs from `graphs.costs.grappler_costs`"
        f"{' (cached)' if loaded.cached else ''}. Random placements, each tie class of groups on one device that "
        f"has kernels for all its ops ({ok} of {batch} run; failures: {fails or 'none'}). "
        f"Simulator set-up: {init_s:.2f} s.",
        "",
        "| placements per call | median wall time per call (ms) | placements per wall second "
        "| placements per CPU second |",
        "|---|---|---|---|",
        *rows,
        "",
        f"Target: at least {TARGET_RATE:,.0f} placements per second batched: "
        f"{'met' if figures[batch][0] >= TARGET_RATE else 'NOT met'} in wall time "
        f"({figures[batch][0]:,.0f}/s at {batch} per call), "
        f"{'met' if figures[batch][1] >= TARGET_RATE else 'NOT met'} in CPU time ({figures[batch][1]:,.0f}/s); "
        f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
    ]
    return lines, figures


def bench_inception(cluster, repeats: int) -> list[str]:
    from baselines import registry as baselines  # noqa: PLC0415
    from placer.measure.grappler import GrapplerMeasurer  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    loaded = _load("configs/inception_v3.py", cluster, need_model=True)
    graph = loaded.graph
    placement = baselines.get("single_gpu")(graph, cluster)
    t0 = time.perf_counter()
    sim = Simulator(graph, cluster)
    init_s = time.perf_counter() - t0
    sim_s, sim_c = clocks.median_clocks(lambda: sim.measure([placement]), repeats)
    t0 = time.perf_counter()
    grappler = GrapplerMeasurer(loaded.model.metagraph, graph, cluster)
    ginit_s = time.perf_counter() - t0
    g_s, g_c = clocks.median_clocks(lambda: grappler.measure([placement]), max(2, repeats // 2))
    sm = sim.measure([placement])[0]
    gm = grappler.measure([placement])[0]
    ratio = g_s / sim_s
    return [
        f"Full-op Inception-V3 (paper size: {graph.num_ops:,} ops, {graph.num_edges:,} edges) on `{cluster.name}`, "
        "the single-GPU placement, measured side by side in one run (medians):",
        "",
        "| backend | set-up (s) | wall time per placement (s) | CPU time per placement (s) | step time it reports (s) |",
        "|---|---|---|---|---|",
        f"| simulator (op level) | {init_s:.2f} | {sim_s:.4f} | {sim_c:.4f} | {sm.step_time:.4f} |",
        f"| GrapplerMeasurer | {ginit_s:.2f} | {g_s:.3f} | {g_c:.3f} | {gm.step_time:.4f} |",
        "",
        f"Simulator / Grappler speed ratio: {ratio:,.0f}x in wall time, {g_c / sim_c:,.0f}x in CPU time "
        f"(target at least {TARGET_SPEEDUP:.0f}x: {'met' if ratio >= TARGET_SPEEDUP else 'NOT met'} in wall time).",
    ]


def main(argv):
    del argv
    from placer.core import cluster as cluster_lib  # noqa: PLC0415

    at = report.commit()
    cluster = cluster_lib.load(_CLUSTER.value)
    lines, _ = bench_nmt(cluster, _REPEATS.value, _BATCH.value)
    if not _SKIP_GRAPPLER.value:
        lines += ["", *bench_inception(cluster, _REPEATS.value)]
    body = "\n".join(lines)
    print(body)
    report.update_section("simulator", "Simulator speed", body, "bench/simulator.py", at)


if __name__ == "__main__":
    app.run(main)
