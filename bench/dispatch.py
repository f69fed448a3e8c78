"""Per-op dispatch and per-transfer cost of TF's executor on this machine's CPU.

  .venv/bin/python -m bench.dispatch [--lengths=0,500,1000,2000] [--steps=30] [--rounds=5]

Times chains of tiny ops in real tf.compat.v1 sessions with one inter-op
thread (TF_NUM_INTEROP_THREADS=1, as in bench/fidelity.py) and Grappler's
rewrites off, so every op of the chain runs:

* one device, plain chain: n scalar AddV2 ops (x = x + x) on
  "/device:CPU:0"; the slope of the median step time over n is the time one
  tiny op adds to a step when it has one consumer. TF's executor runs the
  one op a finished op makes ready inline, on the same thread.
* one device, chain with a leaf per op: each AddV2 also feeds a Neg that
  nothing reads, so every finished op makes two ops ready and the executor
  hands one of them to its inter-op thread pool; the slope over the 2n ops
  is the average time an op adds when half of them go through the pool, as
  in model graphs, where most ops feed several others. This is the CPU
  `dispatch` of the local cluster and of the presets' CPU devices (an upper
  bound of the executor's part: it includes a scalar kernel, tens of ns).
* two devices: the same chain alternating between "/device:CPU:0" and
  "/device:CPU:1" of one session, so every edge is a cross-device tensor;
  its slope minus the one-device slope is what each transfer adds (TF's
  _Send/_Recv pair through the in-process rendezvous): the CPU
  `transfer_cost`.

Each step is timed on two clocks: wall time and the process's CPU time
(every thread). Each round fits the slopes by least squares over
`--lengths`; the median over rounds is reported. The constants come from
CPU time: on a shared machine wall time also counts other jobs' share of
the cores. The section also gives what a FULL_TRACE step
records for these ops (all_end_rel_micros, whole microseconds), the unit
profiled op costs come in. Writes the "dispatch" section of BENCHMARKS.md.
"""

from __future__ import annotations

import os
import statistics

import numpy as np
from absl import app, flags

from bench import dispatch_constants, report
from graphs.costs_calibrate import chain_graph, pool_handoff
from placer.core.clocks import median_clocks

_LENGTHS = flags.DEFINE_list("lengths", ["0", "500", "1000", "2000"], "Chain lengths (ops).")
_STEPS = flags.DEFINE_integer("steps", 30, "Timed steps per chain (median kept), after 5 warm-up steps.")
_ROUNDS = flags.DEFINE_integer("rounds", 7, "Rounds of all chains; the median slope is reported.")


def time_chain(n: int, devices: int, steps: int, leaves: bool = False) -> tuple[float, float, float | None]:
    """(median wall s, median CPU s per step, median traced microseconds per add op) of one chain."""
    import tensorflow as tf  # noqa: PLC0415

    from graphs.tf_session import session_config  # noqa: PLC0415

    g, fetch = chain_graph(n, devices, leaves)
    with tf.compat.v1.Session(graph=g, config=session_config(2, rewrite=False)) as sess:
        for _ in range(5):
            sess.run(fetch)
        wall, cpu = median_clocks(lambda: sess.run(fetch), steps)
        md = tf.compat.v1.RunMetadata()
        sess.run(fetch, options=tf.compat.v1.RunOptions(trace_level=3), run_metadata=md)
    traced = [
        ns.all_end_rel_micros for d in md.step_stats.dev_stats for ns in d.node_stats if ns.node_name.startswith("add")
    ]
    return wall, cpu, (float(np.median(traced)) if traced else None)


def slope(lengths, seconds) -> float:
    """Least-squares seconds per op of step time against chain length."""
    return float(np.polyfit(np.asarray(lengths, float), np.asarray(seconds, float), 1)[0])


SHAPES = (("chain", 1, False, 1), ("leaves", 1, True, 2), ("alternating", 2, False, 1))  # name, devices, leaves, ops/n


def measure(lengths: list[int], steps: int, rounds: int) -> dict:
    """Per-op slopes per round and clock ("wall", "cpu") of each shape, and the traced per-op times."""
    out = {f"{name}_{clock}": [] for name, *_ in SHAPES for clock in ("wall", "cpu")}
    out["handoff_wall"] = []
    pool = len(os.sched_getaffinity(0))  # TF's default inter-op pool: one thread per core this process may use
    traced = []
    for r in range(rounds):
        out["handoff_wall"] += pool_handoff(pool, rounds=1)[1]
        for name, devices, leaves, per_n in SHAPES:
            runs = [time_chain(n, devices, steps, leaves) for n in lengths]
            ops = [per_n * n for n in lengths]
            out[f"{name}_wall"].append(slope(ops, [w for w, _, _ in runs]))
            out[f"{name}_cpu"].append(slope(ops, [c for _, c, _ in runs]))
            traced += [u for _, _, u in runs if u is not None and name == "chain"]
        print(f"round {r}: " + ", ".join(f"{k} {v[-1] * 1e9:.0f} ns/op" for k, v in out.items()), flush=True)
    med = {k: statistics.median(v) for k, v in out.items()}
    return {
        "rounds": out,
        "median": med,
        "dispatch": med["leaves_cpu"],
        "transfer_cost": max(
            statistics.median(b - a for a, b in zip(out["chain_cpu"], out["alternating_cpu"], strict=True)), 0.0
        ),
        "traced_us": statistics.median(traced) if traced else None,
        "pool_threads": pool,
    }


def section(m: dict, lengths, steps, rounds) -> str:
    """Markdown of the chain bench: per-op slopes of each shape and clock, the constants chosen, the trace unit."""
    labels = {
        "chain": "one device, plain chain (each op run inline)",
        "leaves": "one device, chain with a leaf per op (half the ops through the pool)",
        "alternating": "chain alternating over 2 logical CPUs (every edge crosses)",
    }
    rows = [
        f"| {labels[name]} | {clock} | {m['median'][f'{name}_{clock}'] * 1e9:.0f} | "
        + ", ".join(f"{x * 1e9:.0f}" for x in m["rounds"][f"{name}_{clock}"])
        + " |"
        for name, *_ in SHAPES
        for clock in ("cpu", "wall")
    ]
    return "\n".join(
        [
            "Chains of scalar `AddV2` ops in `tf.compat.v1` sessions on this machine's CPU, one inter-op thread, "
            f"Grappler rewrites off; chain lengths {', '.join(map(str, lengths))}, median of {steps} timed "
            f"steps each after 5 warm-up steps; a least-squares slope of step time over ops per round, {rounds} "
            "rounds, median shown. Two clocks per step: CPU time of the process (every thread) and wall time.",
            "",
            "| chain | clock | median ns per op | all rounds (ns) |",
            "|---|---|---|---|",
            *rows,
            "",
            f"Chosen: `dispatch` = {m['dispatch'] * 1e9:.0f} ns (CPU time per op, chain with leaves), "
            f"`transfer_cost` = {m['transfer_cost'] * 1e9:.0f} ns (CPU time per op of the alternating chain "
            "minus the plain chain, per cross-device tensor). CPU time, because wall time on this shared machine "
            "also counts the time other jobs hold the cores: at the load of this run it is several times the CPU "
            "time, and varies from round to round by as much.",
            "",
            f"TF's default inter-op pool ({m['pool_threads']} threads, one per core) against one thread: each op "
            f"handed to the pool adds {m['median']['handoff_wall'] * 1e9:.0f} ns of wall time (median; rounds "
            f"{', '.join(f'{x * 1e9:.0f}' for x in m['rounds']['handoff_wall'])} ns), timed on a chain of scalar "
            "ops that hands every link to the pool, in sessions with their own pool of each size "
            "(`graphs.costs_calibrate.pool_handoff`). For its first 90 runs or so TF's executor hands every op "
            "but one of those a finished op makes ready to the pool; bench/fidelity.py's TF-default row bounds "
            "a step by the simulated time plus a hand-off per op run.",
            "",
            f"A FULL_TRACE step records these ops at {m['traced_us']:g} us each (median; whole microseconds), "
            "so profiled costs of ops this small are quantised to whole microseconds.",
            "",
            dispatch_constants.constants_line(m["dispatch"], m["transfer_cost"]),
            "",
            f"Commit {report.commit()}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end.",
        ]
    )


def main(argv) -> None:
    del argv
    os.environ["TF_NUM_INTEROP_THREADS"] = "1"
    lengths = [int(x) for x in _LENGTHS.value]
    m = measure(lengths, _STEPS.value, _ROUNDS.value)
    body = section(m, lengths, _STEPS.value, _ROUNDS.value)
    report.update_section("dispatch", "Executor dispatch per op and per transfer (CPU)", body, "bench/dispatch.py")
    print(body)


if __name__ == "__main__":
    app.run(main)
