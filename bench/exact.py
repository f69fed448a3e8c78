"""The exact placer against annealing and its own proven bound; writes BENCHMARKS.md's "Exact placements" section.

Part "dags" (default): seeded generated layered DAGs of 300 ops
(`placer.core.generated`, seeds 0, 1, 2) on k80x4, grouped as the searches
group them. Per seed: annealing (baselines.search.place_local_search) at
4,000 placements; then exact (placer.measure.exact.place, group level) for
`--seconds` of wall time in all, started from annealing at `--hint_budget`
placements (its time counted) and single_gpu. Reported: the simulated step
time of exact's placement, its model makespan, the proven (group-level)
bound, the op-level bound of placer.measure.bounds, the gaps and the status;
medians over the seeds; the targets met or NOT met.

Part "paper" (its own section): the paper graphs (configs/rnnlm.py, nmt.py, inception_v3.py,
TensorFlow and Grappler costs) at group level for `--paper_seconds` each:
the proven bound, the best placement and every baseline's certified gap
(step time over the op-level bound).

Usage: python -m bench.exact [--part=dags|paper|both] [--seeds=0,1,2] [--seconds=60] [--workers=2]
       [--target_groups=256] (another target writes its own section)
"""

from __future__ import annotations

import statistics
import time

import numpy as np  # noqa: E402, I001
from absl import app, flags

from baselines import registry, search  # noqa: E402
from bench import report  # noqa: E402
from placer.core import cluster as cluster_lib  # noqa: E402
from placer.core import fmt, generated  # noqa: E402
from placer.measure import (
    bounds,  # noqa: E402
    exact,  # before TensorFlow (see placer/measure/exact.py)
)
from placer.measure.simulator import Simulator  # noqa: E402

_PART = flags.DEFINE_enum("part", "dags", ["dags", "paper", "both"], "Which benchmark to run.")
_SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the generated DAGs (and of the solver).")
_OPS = flags.DEFINE_integer("ops", 300, "Ops per generated DAG.")
_SECONDS = flags.DEFINE_float("seconds", 60.0, "Wall seconds of exact per DAG, its hint's annealing included.")
_HINT = flags.DEFINE_integer("hint_budget", 4000, "Placements of the annealing run exact starts from.")
_WORKERS = flags.DEFINE_integer("workers", 2, "CP-SAT threads.")
_PAPER_SECONDS = flags.DEFINE_float("paper_seconds", 600.0, "Seconds of exact per paper graph.")
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset.")
_TARGET_GROUPS = flags.DEFINE_integer("target_groups", 256, "Groups the DAGs are coarsened to (the searches' 256).")
_WRITE = flags.DEFINE_bool("write", True, "Write the section into BENCHMARKS.md.")

TARGET_GAP = 1.02  # exact's simulated step time over its proven bound, median (the target)
TARGET_MODEL = 0.05  # every returned placement's simulated step time within 5% of its model makespan


def _dag_row(seed: int, cluster) -> dict:
    """One DAG: annealing at 4,000 placements, then exact from annealing at --hint_budget."""
    graph = generated.generate("layered", _OPS.value, seed)
    groups = search.Space(graph, cluster, None, _TARGET_GROUPS.value).groups
    sim = Simulator(graph, cluster, op_group=groups.op_group)
    t0 = time.perf_counter()
    annealed = search.place_local_search(graph, cluster, seed=seed, measurer=sim, budget=4000, groups=groups)
    anneal_s = time.perf_counter() - t0
    anneal_t = sim.measure([annealed])[0].step_time
    t0 = time.perf_counter()
    hint = search.place_local_search(graph, cluster, seed=seed, measurer=sim, budget=_HINT.value, groups=groups)
    single = registry.place("single_gpu", graph, cluster)
    hint_t = sim.measure([hint])[0].step_time
    left = max(_SECONDS.value - (time.perf_counter() - t0), 1.0)
    _, r = exact.place(
        graph,
        cluster,
        seed=seed,
        op_group=groups.op_group,
        hints=[np.asarray(hint.devices), np.asarray(single.devices)],
        time_limit=left,
        workers=_WORKERS.value,
    )
    b = bounds.bound(graph, cluster)
    return {
        "seed": seed,
        "ops": graph.num_ops,
        "groups": groups.num_groups,
        "annealing_4000": anneal_t,
        "annealing_seconds": anneal_s,
        "hint": hint_t,
        "exact": r.step_time,
        "makespan": r.makespan,
        "proven": r.proven_bound,
        "bound": b,
        "status": r.status,
        "wall": time.perf_counter() - t0,
        "solutions": len(r.solutions),
        "model_diffs": [abs(s - m) / m for _, m, s in r.solutions if np.isfinite(s) and m > 0],
    }


def _dag_section(rows: list[dict]) -> str:
    lines = [
        f"Generated layered DAGs of {_OPS.value} ops (`placer.core.generated`, seeds {', '.join(_SEEDS.value)}) on "
        f"{_CLUSTER.value}, grouped as the searches group them (target {_TARGET_GROUPS.value} groups; group level). "
        "Annealing: "
        "`baselines.search.place_local_search` at 4,000 placements. Exact: `placer.measure.exact.place` "
        f"with {_WORKERS.value} CP-SAT workers, {_SECONDS.value:g} s of wall time in all, started from annealing at "
        f"{_HINT.value} placements (same seed; its time counted) and single_gpu. Proven: CP-SAT's bound at group "
        "level; bound: the op-level bound of `placer.measure.bounds` (its binding term). Step times "
        "to 4 significant figures.",
        "",
        "| seed | ops / groups | bound (binds) | proven | annealing 4000 | hint | exact (simulated) | model makespan | "
        "exact / proven | exact / bound | status | solutions | exact wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["bound"]
        lines.append(
            f"| {r['seed']} | {r['ops']} / {r['groups']} | {fmt.step_time(b.value)} ({b.binds}) | {fmt.step_time(r['proven'])} | "
            f"{fmt.step_time(r['annealing_4000'])} | {fmt.step_time(r['hint'])} | {fmt.step_time(r['exact'])} | "
            f"{fmt.step_time(r['makespan'])} | {r['exact'] / r['proven']:.4f} | {r['exact'] / b.value:.4f} | "
            f"{r['status']} | {r['solutions']} | {r['wall']:.0f} |"
        )
    med = {k: statistics.median(r[k] for r in rows) for k in ("exact", "annealing_4000")}
    gap = statistics.median(r["exact"] / r["proven"] for r in rows)
    under = statistics.median(r["exact"] / r["annealing_4000"] for r in rows)
    worst = max(abs(r["exact"] - r["makespan"]) / r["makespan"] for r in rows)
    worst_any = max((d for r in rows for d in r["model_diffs"]), default=0.0)
    lines += [
        "",
        f"Medians: exact {fmt.step_time(med['exact'])}, annealing at 4,000 {fmt.step_time(med['annealing_4000'])}; "
        f"exact over its proven bound {gap:.4f}x; exact over annealing {under:.4f}x.",
        "",
        "Targets:",
        "",
        f"- exact's simulated step time at most {TARGET_GAP:.2f}x its proven bound (median): {gap:.4f}x: "
        + ("met" if gap <= TARGET_GAP else "NOT met"),
        f"- exact under annealing's best at 4,000 placements (median): {under:.4f}x: "
        + ("met" if under < 1.0 else "NOT met")
        + (
            " (exact starts from that same annealing run, so it is never above it; the target asks the solver to "
            "improve on it)"
            if _HINT.value == 4000
            else ""
        ),
        f"- every returned placement's simulated step time within {100 * TARGET_MODEL:.0f}% of its model makespan: "
        f"largest difference {100 * worst:.2f}%: "
        + ("met" if worst <= TARGET_MODEL else "NOT met")
        + f" (over every improving solution the solver found, kept or not: {100 * worst_any:.2f}%)",
    ]
    return "\n".join(lines)


def _paper_section(cluster) -> str:
    from graphs import pipeline  # noqa: PLC0415 (TensorFlow, after OR-Tools)
    from placer.core import configs_util  # noqa: PLC0415

    lines = [
        f"Paper graphs on {_CLUSTER.value} at group level, {_PAPER_SECONDS.value:g} s each, from annealing at "
        f"{_HINT.value} placements and every baseline. Certified gap: step time over the op-level bound.",
        "",
        "| graph | bound (binds) | proven (group) | exact | method: step time (certified gap) |",
        "|---|---|---|---|---|",
    ]
    for spec in ("configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py"):
        graph = pipeline.load_graph(cluster, config=configs_util.load_config(spec)).graph
        groups = search.Space(graph, cluster, None, 256).groups
        sim = Simulator(graph, cluster, op_group=groups.op_group)
        placed = {}
        for name in registry.names():
            extra = {"measurer": sim, "budget": _HINT.value} if name in registry.MEASURED else {}
            try:
                placed[name] = registry.place(name, graph, cluster, seed=0, **extra)
            except Exception:  # noqa: BLE001 (a baseline that cannot place this graph is left out)
                continue
        _, r = exact.place(
            graph, cluster, op_group=groups.op_group, hints=[np.asarray(p.devices) for p in placed.values()],
            time_limit=_PAPER_SECONDS.value, workers=_WORKERS.value,
        )  # fmt: skip
        b = bounds.bound(graph, cluster)
        steps = {n: m.step_time for n, m in zip(placed, sim.measure(list(placed.values())), strict=True) if m.ok}
        steps["exact"] = r.step_time
        cells = "; ".join(
            f"{n}: {fmt.step_time(t)} ({t / b.value:.3f}x)" for n, t in sorted(steps.items(), key=lambda x: x[1])
        )
        lines.append(
            f"| {spec} | {fmt.step_time(b.value)} ({b.binds}) | {fmt.step_time(r.proven_bound)} | "
            f"{fmt.step_time(r.step_time)} ({r.status}) | {cells} |"
        )
    return "\n".join(lines)


def main(argv) -> None:
    del argv
    global _COMMIT
    _COMMIT = report.commit()  # the code the runs use: a commit made while they run does not change it
    cluster = cluster_lib.load(_CLUSTER.value)
    if _PART.value in ("dags", "both"):
        rows = []
        for s in _SEEDS.value:
            rows.append(_dag_row(int(s), cluster))
            print(f"seed {s}: exact {rows[-1]['exact']:.6g} s, proven {rows[-1]['proven']:.6g} s, "
                  f"annealing {rows[-1]['annealing_4000']:.6g} s", flush=True)  # fmt: skip
        if _TARGET_GROUPS.value == 256:
            _write("exact", "Exact placements and certified gaps (CP-SAT)", _dag_section(rows))
        else:
            title = f"Exact placements and certified gaps (CP-SAT), DAGs at {_TARGET_GROUPS.value} groups"
            _write(f"exact-groups{_TARGET_GROUPS.value}", title, _dag_section(rows))
    if _PART.value in ("paper", "both"):
        _write("exact-paper", "Exact placements of the paper graphs (CP-SAT, group level)", _paper_section(cluster))


def _write(name: str, title: str, text: str) -> None:
    body = f"Commit {_COMMIT}.\n\n{text}"
    print(body, flush=True)
    if _WRITE.value:
        report.update_section(name, title, body, "bench/exact.py")


if __name__ == "__main__":
    app.run(main)
