"""Benchmark: loading and applying a placement, and the measured step time next to the simulator's.

For the tiny and the paper-size NMT (configs/nmt.py, 2 layers) on this
machine split into 2 logical CPU devices: an m-ETF placement is made on the
local cluster with profiled per-op costs (graphs.costs.profiled_costs),
moved where TF's placer runs resource readers (placer.apply.follow_resources)
and saved; then the steps of `placer-apply` run in this process: load,
validate, apply (timed, median of 3), train (median step time) and verify.
The simulator (placer/measure/simulator.py) predicts the step time of the
same placement from the same costs.

Writes the "apply" section of BENCHMARKS.md. Usage: .venv/bin/python bench/apply.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from graphs import local_cluster  # noqa: E402

NUM_CPUS = 2
local_cluster.configure_logical_cpus(NUM_CPUS)

import numpy as np  # noqa: E402

import models  # noqa: E402
from baselines import registry as baselines  # noqa: E402
from bench import report  # noqa: E402
from graphs import costs, extract  # noqa: E402
from placer.apply import devices as apply  # noqa: E402
from placer.apply import run as apply_run  # noqa: E402
from placer.core.configs_util import load_config  # noqa: E402
from placer.core.placement import Placement  # noqa: E402
from placer.measure.simulator import Simulator  # noqa: E402

# variant -> (timed steps, profiled steps); the paper size takes seconds a step here.
VARIANTS = {"tiny": (10, 3), "": (3, 1)}
METHOD = "m_etf"


def load_and_apply(path: str, graph, model, local) -> float:
    """Seconds for the placer-apply steps before training: load, validate, remap, set devices."""
    t0 = time.perf_counter()
    p = Placement.load(path)
    apply.validate(p, graph, local, source=path)
    p = apply.remap(p, None)
    apply.apply_to_graph_def(p, model.metagraph)
    apply.resource_followers(apply.op_devices(p), model.graph)
    return time.perf_counter() - t0


def bench_variant(variant: str, folder: str) -> dict:
    steps, prof_steps = VARIANTS[variant]
    t0 = time.perf_counter()
    model = models.build(load_config(f"configs/nmt.py:{variant}").model)
    graph = extract.extract(model.metagraph, name=model.name)
    build_s = time.perf_counter() - t0
    cluster = local_cluster.discover(NUM_CPUS)
    t0 = time.perf_counter()
    costed = costs.profiled_costs(model, graph, steps=prof_steps, warmup=1, device_types=("CPU",))
    cost_s = time.perf_counter() - t0
    placement = baselines.place(METHOD, costed, cluster, seed=0, use_cpu=True)
    placement = apply.follow_resources(placement, model.graph)
    path = os.path.join(folder, f"nmt{variant}.placement.json")
    placement.save(path)
    local = cluster.device_names
    apply_s = float(np.median([load_and_apply(path, graph, model, local) for _ in range(3)]))
    (sim,) = Simulator(costed, cluster).measure([placement])
    placed = apply.apply_to_graph_def(placement, model.metagraph)
    result = apply_run.run_placed(placed, num_cpus=NUM_CPUS, steps=steps, warmup=1)
    check = apply_run.verify(apply.op_devices(placement), result)
    used = np.bincount(placement.devices, minlength=len(local))
    return {
        "name": "tiny" if variant == "tiny" else "paper (2 layers)",
        "ops": graph.num_ops,
        "build_s": build_s,
        "cost_s": cost_s,
        "apply_s": apply_s,
        "measured": result.step_time,
        "steps": len(result.step_times),
        "simulated": sim.step_time if sim.ok else float("nan"),
        "sim_failure": sim.failure,
        "checked": check.checked,
        "moved": len(check.moved),
        "fused": len(check.fused),
        "split": "/".join(str(int(u)) for u in used),
    }


def main() -> None:
    rows, at = [], report.commit()
    with tempfile.TemporaryDirectory() as folder:
        for variant in VARIANTS:
            r = bench_variant(variant, folder)
            rows.append(r)
            print(r, flush=True)
            write(rows, at)  # each finished graph is kept even if a later one is stopped


def write(rows: list[dict], at: str) -> None:
    """Writes the rows measured so far (at commit `at`) to BENCHMARKS.md."""
    lines = [
        f"NMT on this machine split into {NUM_CPUS} logical CPU devices; {METHOD} placement on the local "
        "cluster with profiled per-op costs (`graphs.costs.profiled_costs`, CPU column), moved where TF runs "
        "resource readers (`placer.apply.follow_resources`). *Load + apply* is Placement.load, validate, "
        "remap, apply_to_graph_def and the resource-reader prediction (median of 3; target under 5 s for the "
        "paper size). Measured: median step of a tf.compat.v1.Session with Grappler on, as `placer-apply` "
        "runs it. Simulated: placer/measure/simulator.py on the same costs and placement.",
        "",
        "| graph | ops | ops per device | build + extract (s) | profile costs (s) | load + apply (s) | "
        "measured step (s) | simulated step (s) | measured / simulated | ops verified | moved | fused |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = r["measured"] / r["simulated"] if r["simulated"] > 0 else float("nan")
        lines.append(
            f"| {r['name']} | {r['ops']} | {r['split']} | {r['build_s']:.1f} | {r['cost_s']:.1f} | "
            f"{r['apply_s']:.3f} | {r['measured']:.4f} (median of {r['steps']}) | {r['simulated']:.4f} | "
            f"{ratio:.2f} | {r['checked']} | {r['moved']} | {r['fused']} |"
        )
    lines += [
        "",
        "*Moved*: ops TF ran elsewhere than placed (beyond the predicted resource readers); *fused*: ops "
        "Grappler fused into an op on another device (a BiasAdd into the MatMul before it). The logical "
        "CPU devices share this machine's cores, so the measured step also pays for contention the "
        "simulator does not model.",
    ]
    report.update_section("apply", "Applying placements (placer-apply)", "\n".join(lines), "bench/apply.py", at)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
