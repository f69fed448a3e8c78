"""Benchmark: your own Keras model end to end, with the commands of docs/own_model.md.

For each model file of examples/ (MobileNetV2 at 96x96 with 10 classes, a
4-layer Transformer encoder with d_model 256), runs the documented commands
as a user would, each in a fresh process, on 4 logical CPUs of this machine:

  placer-extract --model=M --cluster=local:4 --out=DIR/graph.json.gz
  placer-train   --model=M --cluster=local:4 --workdir=DIR/train --max_placements=2000
  placer-compare --model=M --cluster=local:4 --placements=DIR/train/best_placement.json --out=DIR/compare
  placer-apply   --model=M --placement=DIR/train/best_placement.json --logical_cpus=4 --report=DIR/apply.json

and writes the "own_model" section of BENCHMARKS.md: ops, ops in the
training step (the train op's fan-in), groups, the simulated step times of
the baselines and of the search, and apply's verified op count and measured
step time, with each command's wall time.

Usage: .venv/bin/python bench/own_model.py [--max_placements=2000] [--only=mobilenet_v2]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import report  # noqa: E402

MODELS = {
    "mobilenet_v2": "examples/mobilenet_v2.py:mobilenet_v2",
    "transformer_encoder": "examples/transformer_encoder.py:transformer_encoder",
}
BIN = os.path.dirname(sys.executable)


def commands(spec: str, folder: str, max_placements: int) -> dict[str, list[str]]:
    """The documented commands for model `spec`, writing under `folder`."""
    model, cluster = f"--model={spec}", "--cluster=local:4"
    best = os.path.join(folder, "train", "best_placement.json")
    return {
        "extract": ["placer-extract", model, cluster, f"--out={folder}/graph.json.gz"],
        "train": ["placer-train", model, cluster, f"--workdir={folder}/train", f"--max_placements={max_placements}",
                  "--noprogress"],
        "compare": ["placer-compare", model, cluster, f"--placements={best}", f"--out={folder}/compare"],
        "apply": ["placer-apply", model, f"--placement={best}", "--logical_cpus=4", f"--report={folder}/apply.json"],
    }  # fmt: skip


def run(argv: list[str], log: str) -> float:
    """Runs one command (its output to `log`); returns its wall time (s). Raises on failure."""
    env = dict(os.environ, PYTHONPATH=report.ROOT)
    t0 = time.perf_counter()
    with open(log, "w") as out:
        r = subprocess.run(
            [os.path.join(BIN, argv[0]), *argv[1:]], cwd=report.ROOT, stdout=out, stderr=subprocess.STDOUT, env=env
        )
    if r.returncode:
        raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}; see {log}")
    return time.perf_counter() - t0


def ops_in_step(path: str) -> int:
    """Ops the training step runs: the fan-in of the op named "train_op" in the graph file."""
    import numpy as np  # noqa: PLC0415

    from placer.core import io  # noqa: PLC0415

    g = io.load(path)
    preds: list[list[int]] = [[] for _ in range(g.num_ops)]
    for s, d in zip(np.asarray(g.edge_src).tolist(), np.asarray(g.edge_dst).tolist(), strict=True):
        preds[d].append(s)
    start = [int(i) for i, n in enumerate(g.names) if n == "train_op"]
    seen, stack = set(start), list(start)
    while stack:
        for p in preds[stack.pop()]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return len(seen)


def bench_model(name: str, spec: str, root: str, max_placements: int) -> dict:
    folder = os.path.join(root, name)
    shutil.rmtree(folder, ignore_errors=True)  # an earlier run's outputs: the commands refuse to overwrite them
    os.makedirs(folder)
    seconds = {}
    for step, argv in commands(spec, folder, max_placements).items():
        print(f"{name}: {' '.join(argv)}", flush=True)
        seconds[step] = run(argv, os.path.join(folder, f"{step}.log"))
    extract_log = open(os.path.join(folder, "extract.log")).read()
    summary = json.load(open(os.path.join(folder, "train", "summary.json")))
    with open(os.path.join(folder, "compare", "table.csv")) as f:
        rows = list(csv.DictReader(f))
    applied = json.load(open(os.path.join(folder, "apply.json")))
    apply_log = open(os.path.join(folder, "apply.log")).read()
    train_log = open(os.path.join(folder, "train.log")).read()
    return {
        "name": name,
        "spec": spec,
        "ops": int(re.search(r"^ops: (\d+)", extract_log, re.M).group(1)),
        # What placer-extract says placer-train's default (a warm-started method) will place.
        "groups_extract": int(re.search(r"^groups placed on \S+: (\d+) by warm-started", extract_log, re.M).group(1)),
        "ops_in_step": ops_in_step(os.path.join(folder, "graph.json.gz")),
        "groups_train": summary["groups"],
        "best": summary["best_step_time"],
        "placements": summary["placements"],
        "method": summary["method"],
        "warm_start": re.search(r"^warm start: on, from (\S+)", train_log, re.M).group(1),
        "rows": rows,
        "verified": re.search(r"^verified: (\d+)", apply_log, re.M).group(1),
        "apply_line": re.search(r"^step time: .*$", apply_log, re.M).group(0),
        "moved": len(applied.get("moved", {}) or {}),
        "seconds": seconds,
        "commands": commands(spec, f"runs/{name}", max_placements),
    }


def section(results: list[dict], commit: str) -> str:
    out = [f"Commit {commit}. Every command as docs/own_model.md gives it, in a fresh process, "
           "4 logical CPUs (`local:4`), the simulator with Grappler's CPU costs; default batch size 32.", ""]  # fmt: skip
    for r in results:
        out += [f"**{r['spec']}**", "", "```"]
        out += [" ".join(argv) for argv in r["commands"].values()]
        out += ["```", ""]
        out.append(
            f"- ops {r['ops']}, ops in the step {r['ops_in_step']}, groups: {r['groups_extract']} that placer-extract "
            f"says warm-started methods place, {r['groups_train']} placed by placer-train"
        )
        out.append(
            f"- search (placer-train, {r['method']} warm-started from {r['warm_start']}): best "
            f"{r['best'] * 1e3:.3f} ms after {r['placements']} measured placements"
        )
        times = [
            f"{row['method']} " + (f"{float(row['step_time_s']) * 1e3:.3f}" if row.get("step_time_s") else "n/a")
            for row in r["rows"]
        ]
        out.append("- placer-compare, simulated step time (ms): " + ", ".join(times))
        out.append(
            f"- placer-apply: {r['verified']} ops verified on their device, {r['moved']} moved; {r['apply_line']}"
        )
        out.append("- wall time: " + ", ".join(f"{k} {v:.0f} s" for k, v in r["seconds"].items()))
        out.append("")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max_placements", type=int, default=2000)
    parser.add_argument("--only", default=",".join(MODELS))
    parser.add_argument("--root", default="/tmp/placer-own-model")
    args = parser.parse_args()
    commit = report.commit()  # the code the runs use, before they start
    results = [bench_model(n, MODELS[n], args.root, args.max_placements) for n in args.only.split(",")]
    body = section(results, commit)
    print(body)
    report.update_section("own_model", "Your own Keras model, end to end", body, "bench/own_model.py")


if __name__ == "__main__":
    main()
