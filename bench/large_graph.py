"""The binaries on a 200k-op graph: extract, measure, compare --out and train's first step.

  python -m bench.large_graph                    # 200,000 ops, the target's size
  python -m bench.large_graph --ops=20000 --nowrite

Target (each binary run as a user runs it, in its own process): each
finishes within 60 s and 4 GiB of peak resident memory. The graph is
bench/baselines.py's random layered DAG (100 ops per layer, 2 inputs per op)
with its colocated ops in pairs within a layer, as in a TF graph, where a
variable is colocated with its read and assign ops (its 50 graph-wide sets,
used for the baselines bench, tie ops of every layer to one device and leave
about 3,000 groups that coarsening cannot merge); the cluster is its 4-GPU
one; writes a section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tabulate import tabulate

from bench import report
from bench.baselines import bench_cluster
from placer.core import io
from placer.core.generated import layered_graph

FULL_OPS = 200_000
LIMIT_S = 60.0
LIMIT_BYTES = 4 * 2**30


def run_binary(module: str, args: list[str], cwd: str, timeout_s: float) -> dict:
    """Runs `python -m module args`; returns its wall and CPU seconds, peak RSS (bytes), exit status and last line."""
    env = dict(os.environ, PYTHONPATH=report.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env, stdout=out, stderr=out)
        pid, status, usage = 0, 0, None
        while not pid:  # os.wait4 reaps the child itself, so its own peak memory can be read
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if not pid and time.perf_counter() - start > timeout_s:
                proc.kill()
            time.sleep(0.05 if not pid else 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        lines = [x for x in out.read().splitlines() if x.strip()]
    code = proc.returncode
    rss = usage.ru_maxrss * 1024
    return {
        "seconds": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": rss,
        "exit": code,
        "last": lines[-1] if lines else "",
        "timed_out": wall >= timeout_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=FULL_OPS)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a binary is stopped")
    parser.add_argument("--nowrite", action="store_true")
    args = parser.parse_args()
    rows, verdicts = [], []
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        graph = layered_graph(args.ops, local_colocation=True)
        io.save(graph, os.path.join(d, "g.json.gz"))
        with open(os.path.join(d, "c.json"), "w") as f:
            json.dump(bench_cluster().to_json(), f)
        made = time.perf_counter() - t0
        print(f"graph: {graph.num_ops} ops, {graph.num_edges} edges, written in {made:.1f} s", flush=True)
        files = ["--graph=g.json.gz", "--cluster=c.json"]
        runs = [
            ("extract", "placer.extract_main", ["--graph=g.json.gz", "--out=out.graph.json.gz"]),
            ("measure", "placer.measure_main", [*files, "--baseline=single_gpu"]),
            ("compare --out", "placer.compare_main", [*files, "--methods=single_gpu,metis", "--out=cmp"]),
            ("train, 1 step", "placer.train_main", [*files, "--steps=1", "--workdir=w", "--noprogress"]),
        ]
        for name, module, argv in runs:
            r = run_binary(module, argv, d, args.timeout)
            ok = r["exit"] == 0 and r["seconds"] <= LIMIT_S and r["rss"] is not None and r["rss"] <= LIMIT_BYTES
            verdict = "met" if ok else "NOT met"
            if args.ops < FULL_OPS and ok:
                verdict = "not measured at full scale"
            verdicts.append(verdict)
            rss = f"{r['rss'] / 2**30:.2f}" if r["rss"] is not None else "?"
            last = f"stopped at the {args.timeout:.0f} s limit; last line: {r['last']}" if r["timed_out"] else r["last"]
            rows.append([name, f"{r['seconds']:.1f}", f"{r['cpu']:.1f}", rss, r["exit"], verdict, last[:100]])
            print(
                f"{name}: {r['seconds']:.1f} s ({r['cpu']:.1f} s CPU), {rss} GiB, exit {r['exit']}: {verdict} "
                f"({r['last'][:100]})",
                flush=True,
            )
    table = tabulate(
        rows,
        headers=["binary", "wall (s)", "CPU (s)", "peak RSS (GiB)", "exit", "target", "last output line"],
        tablefmt="github",
    )
    body = (
        f"Commit {report.commit()}; a random layered DAG of {graph.num_ops:,} ops and {graph.num_edges:,} edges "
        f"(`bench/baselines.py`, colocated ops in pairs within a layer), on its 4-GPU cluster; one run of each binary in its own process, "
        f"on a machine shared with other jobs; a binary still running after {args.timeout:.0f} s is stopped "
        f"(exit -9). Load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU (s) is the "
        f"binary's user and system time, what its wall time would be on an idle core.\n\n"
        f"Target: each within {LIMIT_S:.0f} s and {LIMIT_BYTES / 2**30:.0f} GiB of peak resident memory.\n\n{table}\n"
    )
    if not args.nowrite:
        report.update_section("large_graph", "The binaries on a large graph", body, "bench/large_graph.py")
    return 0 if all(v != "NOT met" for v in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
