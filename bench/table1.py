"""The shape of Mirhoseini et al. (ICML 2017) Table 1 under the simulator; writes BENCHMARKS.md.

Rows: RNNLM, NMT and Inception-V3 at the paper's sizes on the paper's
machine with 2 and 4 K80 GPUs (configs/clusters/k80x2.json, k80x4.json).
Columns: the paper's (Single-CPU, Single-GPU, Scotch, MinCut, Expert, RL, and
the speedup of RL over the best of those five), then the extra baselines
(metis, tf_default, m_topo, m_etf, m_sct), then the seconds each baseline
took to place and the RL search's steps and wall time. The RL column is a
short search (--rl_minutes of wall time, warm-started from the fastest
baseline, configs/common.py) on a 2-core CPU, not the paper's hours on real
GPUs, and every step time is simulated, so only the shape of the table (which
method wins, which runs out of memory) is comparable with the paper's.

Run: .venv/bin/python -m bench.table1 [--rl_minutes 2] [--clusters k80x2,k80x4]
     [--models configs/rnnlm.py,configs/nmt.py,configs/inception_v3.py]
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time

from bench import report
from graphs import pipeline
from placer.compare import compare_lib, tables
from placer.core import cluster as cluster_lib
from placer.core import configs_util

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER_COLUMNS = ("single_cpu", "single_gpu", "scotch", "mincut", "expert")
HEADINGS = {
    "single_cpu": "Single-CPU",
    "single_gpu": "Single-GPU",
    "scotch": "Scotch",
    "mincut": "MinCut",
    "expert": "Expert",
}
EXTRA_COLUMNS = ("metis", "tf_default", "m_topo", "m_etf", "m_sct")
DEFAULT_MODELS = "configs/rnnlm.py,configs/nmt.py,configs/inception_v3.py"
# RL search per row: a wall-time budget on a shared 2-core CPU (six rows
# make the table); the step cap only bounds it on faster machines.
DEFAULT_RL_STEPS = 100000
DEFAULT_RL_MINUTES = 2.0

# Mirhoseini et al. 2017, Table 1: seconds per step measured on real hardware
# (Haswell CPU + K80 GPUs), as printed in the paper, by (model, #GPUs):
# Single-CPU, Single-GPU, Scotch, MinCut, Expert, RL-based, speedup of RL
# over the best of the others. None = "OOM".
PAPER_TABLE1 = {
    ("rnnlm", 2): (6.89, 1.57, 13.43, 11.94, 3.81, 1.57, "0.0%"),
    ("rnnlm", 4): (6.89, 1.57, 11.52, 10.44, 4.46, 1.57, "0.0%"),
    ("nmt", 2): (10.72, None, 14.19, 11.54, 4.99, 4.04, "23.5%"),
    ("nmt", 4): (10.72, None, 11.23, 11.78, 4.73, 3.92, "20.6%"),
    ("inception_v3", 2): (26.21, 4.60, 25.24, 22.88, 11.22, 4.60, "0.0%"),
    ("inception_v3", 4): (26.21, 4.60, 23.41, 24.52, 10.65, 3.85, "19.0%"),
}
NAMES = {"rnnlm": "RNNLM (batch 64)", "nmt": "NMT (batch 64)", "inception_v3": "Inception-V3 (batch 32)"}


def rl_speedup(rows: dict, columns=PAPER_COLUMNS) -> float | None:
    """Speedup of RL over the fastest of `columns` that ran, as the paper defines it: best / RL - 1."""
    rl = rows.get("rl")
    others = [rows[c].step_time for c in columns if c in rows and rows[c].ok]
    if rl is None or not rl.ok or not others:
        return None
    return min(others) / rl.step_time - 1.0


def one_row(spec: str, preset: str, rl_steps: int, log, rl_minutes: float = DEFAULT_RL_MINUTES) -> dict:
    """Places and measures one model on one cluster; returns what the tables need."""
    from placer.core.placement import Placement  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415
    from placer.rl import train_lib  # noqa: PLC0415

    cluster = cluster_lib.load(preset)
    config = configs_util.load_config(spec)
    config.cluster, config.measure = preset, "sim"
    config.placer.train.method = "seq2seq"  # the paper's RL, whatever placer-train's default
    t0 = time.time()
    graph = pipeline.load_graph(cluster, config=config).graph
    load_s = time.time() - t0
    extra, labels, rl = [], [], {}
    if rl_steps > 0:
        with tempfile.TemporaryDirectory(prefix="table1-") as workdir:
            summary = train_lib.run(
                config, workdir=workdir, steps=rl_steps, seed=0, progress=False, log=log, max_seconds=60 * rl_minutes
            )
            path = os.path.join(workdir, "best_placement.json")
            if os.path.exists(path):
                extra, labels = [Placement.load(path)], ["rl"]
        rl = {"steps": summary["steps"], "seconds": summary["train_seconds"], "groups": summary["groups"]}
    methods = list(PAPER_COLUMNS + EXTRA_COLUMNS)
    rows = compare_lib.compare(graph, cluster, Simulator(graph, cluster), methods, extra, strict=False, labels=labels)
    from placer.measure import bounds  # noqa: PLC0415

    return {
        "model": config.model.name,
        "layers": config.model.get("num_layers"),
        "gpus": len(cluster.indices_of_type("GPU")),
        "ops": graph.num_ops,
        "rows": {r.method: r for r in rows},
        "rl": rl,
        "load_s": load_s,
        "lower_bound": bounds.lower_bound(graph, cluster),
    }


def _t(row) -> str:
    if row is None:
        return "-"
    return f"{row.step_time:.3f}" if row.ok else tables.status(row)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _model_name(r: dict) -> str:
    name = NAMES.get(r["model"], r["model"])
    return f"{name}, {r['layers']} layers" if r["layers"] else name


def ours_table(results: list[dict]) -> str:
    head = [
        "Model",
        "#GPUs",
        *(HEADINGS[c] for c in PAPER_COLUMNS),
        "RL",
        "Speedup",
        *EXTRA_COLUMNS,
        "Speedup (all)",
        "lower bound",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        rows = r["rows"]
        cells = [
            _model_name(r),
            str(r["gpus"]),
            *(_t(rows.get(c)) for c in PAPER_COLUMNS),
            _t(rows.get("rl")),
            _pct(rl_speedup(rows)),
            *(_t(rows.get(c)) for c in EXTRA_COLUMNS),
            _pct(rl_speedup(rows, PAPER_COLUMNS + EXTRA_COLUMNS)),
            f"{r['lower_bound']:.3f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def place_time_table(results: list[dict]) -> str:
    methods = PAPER_COLUMNS + EXTRA_COLUMNS
    head = ["Model", "#GPUs", "ops", *methods, "RL steps", "RL groups", "RL wall (s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        rows, rl = r["rows"], r["rl"]
        times = [
            ("-" if rows.get(m) is None or rows[m].place_seconds is None else f"{rows[m].place_seconds:.2f}")
            for m in methods
        ]
        lines.append(
            "| "
            + " | ".join(
                [
                    _model_name(r),
                    str(r["gpus"]),
                    str(r["ops"]),
                    *times,
                    str(rl.get("steps", "-")),
                    str(rl.get("groups", "-")),
                    f"{rl['seconds']:.0f}" if rl else "-",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def paper_table() -> str:
    head = ["Model", "#GPUs", *(HEADINGS[c] for c in PAPER_COLUMNS), "RL", "Speedup"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, gpus), vals in PAPER_TABLE1.items():
        cells = ["OOM" if v is None else f"{v:.2f}" for v in vals[:6]]
        lines.append("| " + " | ".join([NAMES[model], str(gpus), *cells, vals[6]]) + " |")
    return "\n".join(lines)


def notes(results: list[dict]) -> str:
    """The rows that failed or were skipped, one line each."""
    out = []
    for r in results:
        for row in r["rows"].values():
            if row.message:
                out.append(f"- {_model_name(r)}, {r['gpus']} GPUs, {row.method}: {' '.join(row.message.split())}")
    return "\n".join(out)


def levels(results: list[dict]) -> str:
    """The simulator's model level (group or op) of the step times: one sentence when every row shares it."""
    seen = {row.level for r in results for row in r["rows"].values() if getattr(row, "level", "")}
    if len(seen) == 1:
        return f"Every step time above is simulated at {seen.pop()} level."
    return "\n".join(
        f"- {_model_name(r)}, {r['gpus']} GPUs, simulated {n}"
        for r in results
        for n in tables.level_note(r["rows"].values())
    )


@functools.cache
def _commit() -> str:
    """The commit at the start of the run (bench.report.commit), kept while the run writes its files."""
    return report.commit()


def warm_start_methods() -> str:
    """The baselines the RL search imitates the fastest of, as configs/common.py sets them."""
    from configs import common  # noqa: PLC0415

    names = [m.strip() for m in common.placer_config().train.warm_start.split(",") if m.strip()]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else (names[0] if names else "none")


def single_gpu_peak(spec: str, preset: str) -> tuple[float, float]:
    """(peak bytes of the single-GPU placement of `spec`, the GPU's memory bytes) under the simulator."""
    from baselines import registry  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    cluster = cluster_lib.load(preset)
    graph = pipeline.load_graph(cluster, config=configs_util.load_config(spec)).graph
    p = registry.place("single_gpu", graph, cluster)
    gpu = cluster.indices_of_type("GPU")[0]
    return float(Simulator(graph, cluster).simulate(p.devices).peak_memory[gpu]), float(
        cluster.devices[gpu].memory_bytes
    )


def nmt_memory_note(spec: str = "configs/nmt.py", preset: str = "k80x2", max_batch: int = 4096) -> str:
    """Where our NMT runs out of one GPU's memory: batch doubled from the config's until the peak passes it.

    Returns:
      A paragraph with the measured peaks; every number in it comes from this call.
    """
    base = configs_util.load_config(spec).model.batch_size
    batch, seen = base, []
    while batch <= max_batch:
        peak, memory = single_gpu_peak(f"{spec}{',' if ':' in spec else ':'}batch={batch}", preset)
        seen.append((batch, peak))
        if peak > memory:
            break
        batch *= 2
    gib = 2.0**30
    fits = [f"batch {b}: {p / gib:.1f} GiB" for b, p in seen]
    last_b, last_p = seen[-1]
    end = (
        f"it first runs out of memory at batch {last_b}"
        if last_p > memory
        else f"it still fits at batch {last_b}, the largest tried"
    )
    return (
        f"The paper reports NMT out of memory on one 12 GB K80; ours, at the sizes of {spec} (its vocabulary "
        f"and unrolled lengths are not in the paper's text, so they are our choice), fits. Simulated peak "
        f"memory of the single-GPU placement on {preset} ({memory / gib:.1f} GiB per GPU), doubling the batch: "
        f"{'; '.join(fits)}; {end}."
    )


def body(results: list[dict], rl_minutes: float, wall: float) -> str:
    n_fail = notes(results)
    return f"""Seconds per training step of each placement under the simulator (placer/measure/simulator.py)
on the paper's machine (configs/clusters/k80x2.json and k80x4.json: a Haswell CPU and 2 or 4 K80 GPUs),
graphs at the paper's sizes (configs/*.py defaults), Grappler op costs. "Speedup" is the paper's: the
fastest of Single-CPU, Single-GPU, Scotch, MinCut and Expert divided by RL, minus 1; "Speedup (all)" also
counts the extra baselines. RL: a search of {rl_minutes:g} minutes of wall time per row on this CPU
(placer-train's `seq2seq`, the paper's method, with configs/common.py's settings: warm-started from the
fastest of {warm_start_methods()}, then REINFORCE; seed 0), far shorter than the paper's hours. Whole table: {wall / 60:.1f} minutes.

{ours_table(results)}

{levels(results)}

Seconds each method took to place (the RL column: the search's steps, groups placed and wall time):

{place_time_table(results)}

For reference, the paper's own Table 1 (Mirhoseini et al., "Device Placement Optimization with
Reinforcement Learning", ICML 2017, Table 1; real Haswell CPU and K80 GPUs, seconds per step):

{paper_table()}
{chr(10) + "Failures and skipped methods:" + chr(10) + chr(10) + n_fail if n_fail else ""}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rl_steps", type=int, default=DEFAULT_RL_STEPS, help="RL steps per row (0: no RL column)")
    parser.add_argument("--rl_minutes", type=float, default=DEFAULT_RL_MINUTES, help="RL wall time per row")
    parser.add_argument("--clusters", default="k80x2,k80x4")
    parser.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated config specs (path[:variant])")
    parser.add_argument("--no_write", action="store_true", help="print the tables only")
    parser.add_argument("--memory_only", action="store_true", help="only where NMT runs out of one GPU's memory")
    args = parser.parse_args()
    _commit()  # before this run writes BENCHMARKS.md
    if args.memory_only:
        note = nmt_memory_note()
        print(note)
        if not args.no_write:
            report.update_section(
                "nmt_memory", "NMT on one GPU: memory by batch (simulated)", note, "bench/table1.py", _commit()
            )
        return
    t0 = time.time()
    results = []
    for spec in args.models.split(","):
        for preset in args.clusters.split(","):
            t1 = time.time()
            r = one_row(
                spec, preset, args.rl_steps, log=lambda s: print("   ", s, flush=True), rl_minutes=args.rl_minutes
            )
            results.append(r)
            print(f"{spec} on {preset}: {r['ops']} ops, {time.time() - t1:.0f} s", flush=True)
    wall = time.time() - t0
    text = body(results, args.rl_minutes, wall)
    memory = nmt_memory_note() if any(r["model"] == "nmt" for r in results) else ""
    text += f"\n{memory}\n" if memory else ""
    print(text)
    if not args.no_write:
        report.update_section(
            "table1", "Reproduction of Table 1 (shape, simulated)", text, "bench/table1.py", _commit()
        )


if __name__ == "__main__":
    main()
