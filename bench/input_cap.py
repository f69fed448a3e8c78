"""Gzip bombs against placer-measure: time and peak memory until the one-line refusal, and the cost on a real graph.

  python -m bench.input_cap            # 2 GiB bombs, the default cap (1 GiB), 3 runs each
  python -m bench.input_cap --gib=0.5 --runs=1 --nowrite

A file of a few MiB that gzip expands to --gib GiB of spaces (or of digits)
is given to `placer-measure --graph`; each run is a fresh process, its peak
resident memory read from the kernel (ru_maxrss of the child). The target:
every run exits 2 with one line naming the file, and its peak memory stays
under the cap plus 512 MiB (the interpreter and its libraries). A third row
measures a valid generated graph of 200,000 ops read by `placer.core.io.load`
with and without the duplicate-key check (the price of refusing a second
"ops" key), side by side, in the same process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

from tabulate import tabulate

from bench import report
from placer.core import checks, generated, io

MIB = 1 << 20


def write_bomb(path: str, filler: bytes, size: int) -> None:
    """Writes `size` bytes of `filler` gzip-compressed to `path`, in 64 MiB pieces (never the whole in memory)."""
    piece = filler * (64 * MIB // len(filler))
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for start in range(0, size, len(piece)):
            f.write(deflate.compress(piece[: min(len(piece), size - start)]))
        f.write(deflate.flush())


def run_once(folder: str, graph: str) -> tuple[int, float, float, str]:
    """Runs placer-measure on `graph` in a fresh process: (exit status, wall s, peak MiB, last stderr line)."""
    argv = [sys.executable, "-m", "placer.measure_main", f"--graph={graph}", "--baseline=single_gpu"]
    env = dict(os.environ, PYTHONPATH=report.ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = [x for x in proc.stderr.read().splitlines() if x.strip()]
    proc.stdout.close()
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    return code, wall, usage.ru_maxrss / 1024, (err[-1] if len(err) == 1 else f"{len(err)} lines")


def duplicate_check_cost(runs: int) -> tuple[float, float, int]:
    """Median seconds to load a 200,000-op generated graph with and without the duplicate-key hook; its bytes."""
    graph = generated.generate("layered", 200_000, 0)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "g.json")
        io.save(graph, path)
        size = os.path.getsize(path)
        checked, plain = [], []
        for _ in range(runs):  # alternated, so both see the same machine load
            t0 = time.perf_counter()
            io.load(path)
            checked.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with open(path) as f:
                io.from_json(json.load(f), source=path)
            plain.append(time.perf_counter() - t0)
    return statistics.median(checked), statistics.median(plain), size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="decompressed size of each bomb (GiB)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each case; medians are quoted")
    parser.add_argument("--nowrite", action="store_true", help="print, leave BENCHMARKS.md as it is")
    args = parser.parse_args()
    cap = checks.DEFAULT_MAX_INPUT_MIB
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as folder:
        for name, filler in (("spaces", b" "), ("digits", b"7")):
            path = os.path.join(folder, f"{name}.json.gz")
            write_bomb(path, filler, int(args.gib * 1024 * MIB))
            runs = [run_once(folder, path) for _ in range(args.runs)]
            walls, peaks = [r[1] for r in runs], [r[2] for r in runs]
            good = all(r[0] == 2 and r[3].startswith("error:") for r in runs) and max(peaks) < cap + 512
            ok &= good
            rows.append(
                [
                    f"{os.path.getsize(path) / MIB:.1f} MiB gzip of {args.gib:g} GiB of {name}",
                    ", ".join(str(r[0]) for r in runs),
                    f"{statistics.median(walls):.1f}",
                    f"{statistics.median(peaks):.0f} (max {max(peaks):.0f})",
                    "met" if good else "NOT met",
                    runs[0][3].replace(folder, "DIR"),
                ]
            )
            print(rows[-1], flush=True)
    checked, plain, size = duplicate_check_cost(args.runs)
    table = tabulate(
        rows,
        headers=["input", "exit statuses", "median wall (s)", "median peak RSS (MiB)", "target", "message"],
        tablefmt="github",
    )
    body = (
        f"Commit {report.commit()}; `placer-measure --graph=BOMB --baseline=single_gpu` with the default cap of "
        f"{cap} MiB of JSON text after gzip (`--max_input_mib`), {args.runs} runs per input, each a fresh "
        f"process.\n\nTarget: exit status 2, one line naming the file, peak memory under the cap + 512 MiB "
        f"({cap + 512} MiB): **{'met' if ok else 'NOT met'}**.\n\n{table}\n\n"
        f"The duplicate-key check on a valid graph (`gen:layered:200000:0`, {size / MIB:.0f} MiB of JSON): "
        f"`io.load` takes {checked:.2f} s with it against {plain:.2f} s for `json.load` and the same field "
        f"checks without it, median of {args.runs} side by side: {100 * (checked / plain - 1):+.0f}% time.\n"
    )
    print(body)
    if not args.nowrite:
        report.update_section(
            "input_cap", "Input limits: gzip bombs and the duplicate-key check", body, "bench/input_cap.py"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
