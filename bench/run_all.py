"""`make bench`: runs every benchmark script in turn, each in its own process.

A script that fails (or is missing) does not stop the others; the summary at
the end names each one with its status and wall time, and the exit status is
1 when any failed.

Run: .venv/bin/python -m bench.run_all [--only table1,slaq] [--skip rl] [--timeout 3600]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# In this order: cheap TF-free ones first, the RL search and the table (which reuses its cache) last.
SCRIPTS = (
    "architecture",
    "extract",
    "dispatch",
    "simulator",
    "search_speed",
    "fidelity",
    "memory",
    "baselines",
    "probe",
    "input_cap",
    "large_graph",
    "kill",
    "search_trace",
    "slaq",
    "slaq_loss",
    "apply",
    "ray_measure",
    "rl",
    "transfer",
    "grouping_reach",
    "budget",
    "table1",
)


def run_script(name: str, timeout: float | None) -> tuple[str, float]:
    """Runs `python -m bench.<name>` from the project root; returns (status, seconds).

    Status: "ok", "missing", "timeout", or "failed (exit N)".
    """
    if not os.path.exists(os.path.join(ROOT, "bench", f"{name}.py")):
        return "missing", 0.0
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    t0 = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=ROOT, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.time() - t0
    return ("ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"), time.time() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated scripts to run (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated scripts to leave out")
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed per script (default: none)")
    args = parser.parse_args()
    only = [s for s in args.only.split(",") if s]
    skip = {s for s in args.skip.split(",") if s}
    unknown = [s for s in only + sorted(skip) if s not in SCRIPTS]
    if unknown:
        print(f"error: unknown bench script {unknown[0]!r} (valid: {', '.join(SCRIPTS)})", file=sys.stderr)
        return 2
    names = [s for s in (only or SCRIPTS) if s not in skip]
    results = []
    for name in names:
        print(f"==> bench/{name}.py", flush=True)
        status, seconds = run_script(name, args.timeout)
        results.append((name, status, seconds))
        print(f"<== bench/{name}.py: {status} in {seconds:.0f} s", flush=True)
    print("\nbenchmark summary:")
    for name, status, seconds in results:
        print(f"  {name:<10} {status:<16} {seconds:7.0f} s")
    bad = [n for n, s, _ in results if s != "ok"]
    if bad:
        print(f"not ok: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
