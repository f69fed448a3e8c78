"""One search's placements measured in parallel on Ray actors: the speedup of 2 workers over 1.

  python -m bench.ray_measure                       # 5 rounds of 16 placements, writes BENCHMARKS.md
  python -m bench.ray_measure --rounds=2 --nowrite

The tiny NMT (configs/nmt.py:tiny, 815 ops) on "local:2" (this machine's CPU
as 2 logical devices), measured for real (`--measure=session`: each
placement imported into a fresh graph, 2 untimed and 5 timed steps and one
traced step, as placer-train measures it). The placements are one step's
worth (16, as `samples_per_step`) of random placements, each tie class on a
uniformly drawn device (seeded). Three measurers take the same placements
in turn every round, the order rotated from round to round: a
SessionMeasurer in this process, and `RayMeasurer`s on 1 and on 2 Ray
actors (placer.measure.ray_pool, the engine of `placer-train --engine=ray
--workers=N`). Each measured them once untimed before the rounds (the actors
start, import TensorFlow and the model then). Reported: the median wall
seconds per step over the rounds, and the median over rounds of the ratio
1 worker / 2 workers (the speedup). Writes a section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from tabulate import tabulate

from bench import report
from bench.fidelity_split import random_placements

SPEC = "configs/nmt.py:tiny"
CLUSTER = "local:2"


def _measurers(samples: int, seed: int):
    """(placements, {label: measurer}) with every measurer warmed up on them."""
    import ray  # noqa: PLC0415 (an optional extra)

    from configs import nmt  # noqa: PLC0415
    from graphs import local_cluster, pipeline  # noqa: PLC0415
    from placer.measure import registry  # noqa: PLC0415
    from placer.measure.ray_pool import RESOURCE  # noqa: PLC0415
    from placer.rl import problem as problem_lib  # noqa: PLC0415

    config = nmt.get_config("tiny")
    cluster = local_cluster.load(CLUSTER)
    loaded = pipeline.load_graph(cluster, config=config, need_model=True)
    problem, groups = problem_lib.make_problem(loaded.graph, cluster, config.placer)
    placements = random_placements(problem, loaded.graph, cluster, groups, samples, seed)
    ray.init(resources={RESOURCE: 3}, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    measurers = {"in process": registry.make_measurer("session", loaded.graph, cluster, model=loaded.model)}
    for n in (1, 2):
        engine = registry.open_engine("session", engine="ray", workers=n)
        measurers[f"Ray, {n} worker{'s' if n > 1 else ''}"] = registry.make_measurer(
            "session", loaded.graph, cluster, model=loaded.model, engine=engine, owns_engine=True
        )
    for m in measurers.values():
        _check(m.measure(placements))
    return placements, measurers


def _check(results) -> None:
    failed = [m.failure for m in results if not m.ok]
    if failed:
        raise SystemExit(f"bench.ray_measure: {len(failed)} placements failed ({failed[0]})")


def _pids(measurer) -> list[int]:
    """The processes that measure for `measurer`: its Ray actors, or this one."""
    import ray  # noqa: PLC0415

    engine = getattr(measurer, "engine", None)
    if engine is None:
        return [os.getpid()]
    return [ray.get(a.__ray_call__.remote(lambda worker: os.getpid())) for a in engine.actors.values()]


def _cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU seconds the processes have used so far (Linux /proc)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)
    return total / os.sysconf("SC_CLK_TCK")


def measure(rounds: int, samples: int, seed: int) -> dict:
    """Times the three measurers on the same placements, `rounds` times each, side by side, with the CPU
    seconds their processes used."""
    placements, measurers = _measurers(samples, seed)
    labels = list(measurers)
    pids = {k: _pids(m) for k, m in measurers.items()}
    seconds: dict[str, list[float]] = {k: [] for k in labels}
    cpu: dict[str, list[float]] = {k: [] for k in labels}
    load = [os.getloadavg()[0]]
    for r in range(rounds):
        order = labels[r % len(labels) :] + labels[: r % len(labels)]
        for label in order:
            c0, t0 = _cpu_seconds(pids[label]), time.perf_counter()
            _check(measurers[label].measure(placements))
            seconds[label].append(time.perf_counter() - t0)
            cpu[label].append(_cpu_seconds(pids[label]) - c0)
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {seconds[k][-1]:.2f} s" for k in labels), flush=True)
    load.append(os.getloadavg()[0])
    for m in measurers.values():
        getattr(m, "close", lambda: None)()
    return {"seconds": seconds, "cpu": cpu, "rounds": rounds, "samples": samples, "seed": seed, "load": load}


def section(result: dict, commit: str) -> str:
    """The BENCHMARKS.md section body."""
    s = result["seconds"]
    one, two = s["Ray, 1 worker"], s["Ray, 2 workers"]
    speedup = statistics.median(a / b for a, b in zip(one, two, strict=True))
    versus_here = statistics.median(a / b for a, b in zip(s["in process"], two, strict=True))
    rows = [
        [
            label,
            f"{statistics.median(v):.2f}",
            f"{min(v):.2f} to {max(v):.2f}",
            f"{statistics.median(v) / result['samples'] * 1e3:.0f}",
            f"{statistics.median(result['cpu'][label]):.2f}",
            f"{statistics.median(c / w for c, w in zip(result['cpu'][label], v, strict=True)):.2f}",
        ]
        for label, v in s.items()
    ]
    headers = ["measured by", "median s per step", "range (s)", "ms per placement", "CPU s per step", "cores used"]
    table = tabulate(rows, headers=headers, tablefmt="github")
    verdict = "met" if speedup >= 1.5 else "NOT met"
    return (
        f"Commit {commit}; {SPEC} on `{CLUSTER}`, `--measure=session`; {result['samples']} random placements "
        f"(seed {result['seed']}) per step, {result['rounds']} rounds, the three measurers side by side in "
        "rotating order. This machine has 2 cores and was shared with other work while it ran (load average "
        f"over 1 minute {result['load'][0]:.1f} before the rounds, {result['load'][1]:.1f} after), so absolute "
        "times are noisy; the ratios come from the same rounds.\n\n"
        f"{table}\n\n"
        "CPU s per step: user plus system CPU seconds of the processes that measured (this process, or the "
        "actors), median over rounds; cores used: those seconds over the step's wall seconds (median of the "
        "per-round ratio). 2 workers can only be faster than 1 if together they get more CPU per second.\n\n"
        f"Speedup of 2 workers over 1 (median over rounds of the per-round ratio): **{speedup:.2f}x**; "
        f"2 workers against the in-process measurer: {versus_here:.2f}x. "
        f"Target (ours; none was set): 2 workers at least 1.5x as fast as 1 on this 2-core machine: {verdict}.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (each measures every placement 3 times)")
    parser.add_argument("--samples", type=int, default=16, help="placements per step")
    parser.add_argument("--seed", type=int, default=0, help="seeds the random placements")
    parser.add_argument("--nowrite", action="store_true", help="print the section instead of writing BENCHMARKS.md")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before TensorFlow loads, here and in the actors
    commit = report.commit()
    result = measure(args.rounds, args.samples, args.seed)
    body = section(result, commit)
    print(body)
    if not args.nowrite:
        report.update_section(
            "ray_measure", "One search measured on Ray actors (session)", body, "bench/ray_measure.py"
        )


if __name__ == "__main__":
    main()
