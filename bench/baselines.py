"""Times every TF-free baseline on large synthetic layered DAGs; writes BENCHMARKS.md.

Run: .venv/bin/python -m bench.baselines [--sizes 20000,100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from baselines import registry
from bench import report
from placer.core import cluster as cluster_lib
from placer.core.cluster import Device
from placer.core.generated import layered_graph


def bench_cluster():
    """4 GPUs (16 GB, 10 GB/s links, 10 us latency) and a CPU."""
    devs = [Device("/device:CPU:0", "CPU", 64 * 10**9)]
    devs += [Device(f"/device:GPU:{i}", "GPU", 16 * 10**9) for i in range(4)]
    return cluster_lib.make("bench4gpu", devs, bandwidth=1e10, latency=1e-5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000,20000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cl = bench_cluster()
    sizes = [int(s) for s in args.sizes.split(",")]
    methods = [m for m in registry.names() if m != "expert" and m not in registry.MEASURED]  # searches: bench/rl.py
    rows = {m: [] for m in methods}
    for n in sizes:
        g = layered_graph(n)
        for m in methods:
            times = []
            for _ in range(args.repeats if n <= 20000 else 1):
                t0 = time.perf_counter()
                p = registry.get(m)(g, cl, seed=0)
                times.append(time.perf_counter() - t0)
            extra = f" ({p.metadata['favourite']} favourites)" if "favourite" in p.metadata else ""
            rows[m].append(f"{statistics.median(times):.2f}{extra}")
            print(n, m, rows[m][-1], flush=True)
    head = "| baseline | " + " | ".join(f"{n:,} ops (s)" for n in sizes) + " |"
    sep = "|---" * (len(sizes) + 1) + "|"
    body = "\n".join(f"| {m} | " + " | ".join(rows[m]) + " |" for m in methods)
    text = (
        "Seconds to place a random layered DAG (100 ops per layer, 2 inputs per op, 2% CPU-only ops, "
        "5% of ops in 50 colocation sets) on 4 GPUs + 1 CPU; median of "
        f"{args.repeats} runs at 20,000 ops or fewer, one run above. The expert baseline needs a model graph "
        "and is not timed here.\n\n" + head + "\n" + sep + "\n" + body
    )
    report.update_section("baselines", "Baseline placement time", text, "bench/baselines.py")


if __name__ == "__main__":
    main()
