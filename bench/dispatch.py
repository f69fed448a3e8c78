"""Per-op dispatch and per-transfer cost of TF's executor on this machine's CPU.

  .venv/bin/python -m bench.dispatch [--lengths=0,500,1000,2000] [--steps=30] [--rounds=5]

Times chains of tiny ops in real tf.compat.v1 sessions with one inter-op
thread (TF_NUM_INTEROP_THREADS=1, as in bench/fidelity.py) and Grappler's
rewrites off, so every op of the chain runs:

* one device: a chain of n scalar AddV2 ops (x = x + x) on "/device:CPU:0";
  the slope of the median step time over n is the time one tiny op adds to
  a step: the executor's dispatch plus a scalar add's kernel (tens of ns),
  so it bounds the dispatch from above. It is the CPU `dispatch` of the
  local cluster and of the presets' CPU devices.
* two devices: the same chain alternating between "/device:CPU:0" and
  "/device:CPU:1" of one session, so every edge is a cross-device tensor;
  its slope minus the one-device slope is what each transfer adds (TF's
  _Send/_Recv pair through the in-process rendezvous): the CPU
  `transfer_cost`.

Each round fits both slopes by least squares over `--lengths`; the median
over rounds is reported. The section also gives what a FULL_TRACE step
records for these ops (all_end_rel_micros, whole microseconds), the unit
profiled op costs come in. Writes the "dispatch" section of BENCHMARKS.md.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
from absl import app, flags

from bench import report

_LENGTHS = flags.DEFINE_list("lengths", ["0", "500", "1000", "2000"], "Chain lengths (ops).")
_STEPS = flags.DEFINE_integer("steps", 30, "Timed steps per chain (median kept), after 5 warm-up steps.")
_ROUNDS = flags.DEFINE_integer("rounds", 5, "Rounds of all chains; the median slope is reported.")


def chain_graph(n: int, devices: int):
    """A tf.Graph of a chain of `n` scalar AddV2 ops, op i on CPU i % devices; returns (graph, fetch)."""
    import tensorflow as tf  # noqa: PLC0415

    g = tf.Graph()
    with g.as_default():
        with tf.device("/device:CPU:0"):
            x = tf.constant(1.0, name="x0")
        for i in range(n):
            with tf.device(f"/device:CPU:{i % devices}"):
                x = tf.raw_ops.AddV2(x=x, y=x, name=f"add{i}")
    return g, x


def time_chain(n: int, devices: int, steps: int) -> tuple[float, float | None]:
    """(median seconds per step, median traced microseconds per add op) of one chain."""
    import tensorflow as tf  # noqa: PLC0415

    from graphs.tf_session import session_config  # noqa: PLC0415

    g, fetch = chain_graph(n, devices)
    with tf.compat.v1.Session(graph=g, config=session_config(2, rewrite=False)) as sess:
        for _ in range(5):
            sess.run(fetch)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            sess.run(fetch)
            times.append(time.perf_counter() - t0)
        md = tf.compat.v1.RunMetadata()
        sess.run(fetch, options=tf.compat.v1.RunOptions(trace_level=3), run_metadata=md)
    traced = [
        ns.all_end_rel_micros for d in md.step_stats.dev_stats for ns in d.node_stats if ns.node_name.startswith("add")
    ]
    return float(np.median(times)), (float(np.median(traced)) if traced else None)


def slope(lengths, seconds) -> float:
    """Least-squares seconds per op of step time against chain length."""
    return float(np.polyfit(np.asarray(lengths, float), np.asarray(seconds, float), 1)[0])


def measure(lengths: list[int], steps: int, rounds: int) -> dict:
    """Slopes per round on one and two devices, and the traced per-op times."""
    one, two, traced = [], [], []
    for r in range(rounds):
        t1 = [time_chain(n, 1, steps) for n in lengths]
        t2 = [time_chain(n, 2, steps) for n in lengths]
        one.append(slope(lengths, [t for t, _ in t1]))
        two.append(slope(lengths, [t for t, _ in t2]))
        traced += [u for _, u in t1 if u is not None]
        print(f"round {r}: one device {one[-1] * 1e9:.0f} ns/op, alternating {two[-1] * 1e9:.0f} ns/op", flush=True)
    return {
        "one": one,
        "two": two,
        "dispatch": statistics.median(one),
        "transfer_cost": max(statistics.median(b - a for a, b in zip(one, two, strict=True)), 0.0),
        "traced_us": statistics.median(traced) if traced else None,
    }


def section(m: dict, lengths, steps, rounds) -> str:
    ns = lambda xs: ", ".join(f"{x * 1e9:.0f}" for x in xs)  # noqa: E731
    return "\n".join(
        [
            "Chains of scalar `AddV2` ops in `tf.compat.v1` sessions on this machine's CPU, one inter-op thread, "
            f"Grappler rewrites off; chain lengths {', '.join(map(str, lengths))} ops, median of {steps} timed "
            f"steps each after 5 warm-up steps; a least-squares slope per round, {rounds} rounds, median shown.",
            "",
            "| quantity | median | all rounds (ns) |",
            "|---|---|---|",
            f"| one device: seconds each op adds to a step (`dispatch`) | {m['dispatch'] * 1e9:.0f} ns | "
            f"{ns(m['one'])} |",
            f"| chain alternating over 2 logical CPUs, per op | {statistics.median(m['two']) * 1e9:.0f} ns | "
            f"{ns(m['two'])} |",
            f"| difference: each cross-device tensor (`transfer_cost`) | {m['transfer_cost'] * 1e9:.0f} ns | - |",
            "",
            f"A FULL_TRACE step records these ops at {m['traced_us']:g} us each (median; whole microseconds), "
            "so profiled costs of ops this small are quantised to 0 or 1 us, well above or below what they take.",
            "",
            "These figures are the CPU `dispatch` and `transfer_cost` of `--cluster=local` "
            "(`placer.core.cluster.LOCAL_CPU_DISPATCH`, `LOCAL_CPU_TRANSFER_COST`) and of the presets' CPU "
            "devices (docs/measure.md).",
            "",
            f"Commit {report.commit()}.",
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
