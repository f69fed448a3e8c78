"""Simulator speed: evaluations per second on the grouped NMT graph, and time per
placement against Grappler's virtual cluster on the full-op Inception-V3 graph.

  .venv/bin/python -m bench.simulator [--repeats=5] [--batch=1024] [--skip_grappler]

Costs: graphs.costs.grappler_costs for the k80x4 preset (Grappler's analytical
model of the paper's K80 and Haswell devices), through placer.pipeline's
cache. Writes the "simulator" section of BENCHMARKS.md.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from absl import app, flags

from bench import report

_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed runs; medians are reported.")
_BATCH = flags.DEFINE_integer("batch", 1024, "Placements per batched call.")
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset.")
_SKIP_GRAPPLER = flags.DEFINE_bool("skip_grappler", False, "Skip the Inception-V3 comparison with Grappler.")

TARGET_RATE = 1000.0  # placements per second, batched, grouped NMT
TARGET_SPEEDUP = 100.0  # simulator vs Grappler per placement, full-op Inception-V3


def _load(spec: str, cluster, need_model=False):
    from placer import configs_util, pipeline  # noqa: PLC0415

    return pipeline.load_graph(cluster, config=configs_util.load_config(spec), need_model=need_model)


def _random_group_placements(graph, op_group, num_groups, cluster, k, rng) -> np.ndarray:
    """[k, G] random devices, each group on a device type all its ops have kernels for."""
    from placer import pipeline  # noqa: PLC0415

    ok = pipeline.op_device_ok(graph, cluster)
    allowed = np.ones((num_groups, cluster.num_devices), dtype=bool)
    np.logical_and.at(allowed, op_group, ok)
    allowed[~allowed.any(1)] = True
    choice = rng.random((k, num_groups, cluster.num_devices)) * allowed
    return choice.argmax(2)


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_nmt(cluster, repeats: int, batch: int) -> tuple[list[str], dict]:
    from graphs import grouping  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    loaded = _load("configs/nmt.py", cluster)
    graph = loaded.graph
    groups = grouping.group(graph)
    t0 = time.perf_counter()
    sim = Simulator(graph, cluster, op_group=groups.op_group)
    init_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    placements = _random_group_placements(graph, groups.op_group, groups.num_groups, cluster, batch, rng)
    sim.measure_devices(placements[:8])  # warm caches
    rows = []
    figures = {}
    for k in (batch, 64, 4, 1):
        t = _median_time(lambda k=k: sim.measure_devices(placements[:k]), repeats)
        rows.append(f"| {k} | {t * 1e3:.1f} | {k / t:,.0f} |")
        figures[k] = k / t
    ms = sim.measure_devices(placements[:batch])
    ok = sum(m.ok for m in ms)
    lines = [
        f"Grouped NMT (paper size, 2 layers: {graph.num_ops:,} ops, {graph.num_edges:,} edges, "
        f"{groups.num_groups} groups) on `{cluster.name}`; costs from `graphs.costs.grappler_costs`"
        f"{' (cached)' if loaded.cached else ''}. Random placements, each group on a device that has kernels "
        f"for all its ops ({ok} of {batch} fit in memory and run). Simulator set-up: {init_s:.2f} s.",
        "",
        "| placements per call | median time per call (ms) | placements per second |",
        "|---|---|---|",
        *rows,
        "",
        f"Target: at least {TARGET_RATE:,.0f} placements per second batched: "
        f"{'met' if figures[batch] >= TARGET_RATE else 'NOT met'} ({figures[batch]:,.0f}/s at {batch} per call).",
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
    sim_s = _median_time(lambda: sim.measure([placement]), repeats)
    t0 = time.perf_counter()
    grappler = GrapplerMeasurer(loaded.model.metagraph, graph, cluster)
    ginit_s = time.perf_counter() - t0
    g_s = _median_time(lambda: grappler.measure([placement]), max(2, repeats // 2))
    sm = sim.measure([placement])[0]
    gm = grappler.measure([placement])[0]
    ratio = g_s / sim_s
    return [
        f"Full-op Inception-V3 (paper size: {graph.num_ops:,} ops, {graph.num_edges:,} edges) on `{cluster.name}`, "
        "the single-GPU placement, measured side by side in one run (medians):",
        "",
        "| backend | set-up (s) | time per placement (s) | step time it reports (s) |",
        "|---|---|---|---|",
        f"| simulator (op level) | {init_s:.2f} | {sim_s:.3f} | {sm.step_time:.4f} |",
        f"| GrapplerMeasurer | {ginit_s:.2f} | {g_s:.3f} | {gm.step_time:.4f} |",
        "",
        f"Simulator / Grappler speed ratio: {ratio:,.0f}x (target at least {TARGET_SPEEDUP:.0f}x: "
        f"{'met' if ratio >= TARGET_SPEEDUP else 'NOT met'}).",
    ]


def main(argv):
    del argv
    from placer import cluster as cluster_lib  # noqa: PLC0415

    cluster = cluster_lib.load(_CLUSTER.value)
    lines, _ = bench_nmt(cluster, _REPEATS.value, _BATCH.value)
    if not _SKIP_GRAPPLER.value:
        lines += ["", *bench_inception(cluster, _REPEATS.value)]
    body = "\n".join(lines)
    print(body)
    report.update_section("simulator", "Simulator speed", body, "bench/simulator.py")


if __name__ == "__main__":
    app.run(main)
