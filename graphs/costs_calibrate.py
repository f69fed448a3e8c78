"""What the tracer and TF's executor add to every op on this machine's CPU, measured when costs are profiled.

Profiled op costs (graphs/costs.py `profiled_costs`) come from FULL_TRACE
steps, and tracing itself takes time inside every op's kernel window
(timers, step-stats records): a scalar add whose kernel takes tens of
nanoseconds traces at about 0.26 us. The executor's own work per op (taking
it off the ready queue, preparing inputs, propagating outputs) lies outside
that window and is the simulator's `dispatch`. Both are measured here, in the
process and at the moment the costs are profiled, on chains of scalar ops
(the chains bench/dispatch.py times), so the simulator does not depend on a
constant measured on another day at another load:

* `trace_floor`: the median kernel window of the chain's scalar ops in a
  traced step; `profiled_costs` takes it off every profiled CPU cost.
* `dispatch`: untraced seconds each op of a chain with a leaf per op adds to
  a step (process CPU time, the slope between a chain of n links and one of
  none).
* `transfer_cost`: untraced seconds each cross-device edge adds, from a
  ladder: two chains, one per logical CPU device, with every link of the
  second also reading the first's, against the same chains without those
  rungs (`ladder_graph`). A chain alternating between the devices costs
  about 0.6 us more per crossing (1.5 to 1.7 us against 0.8 to 1.0 us,
  pinned to one core): each of its ops waits for the other device, which
  model graphs rarely do. Split in half over two devices, the tiny NMT and
  RNNLM paid 1.0 to 1.1 us per crossing tensor.

CPU time, not wall time: on a shared machine wall time also counts the time
other jobs hold the cores.

`pool_handoff` measures what TF's default inter-op pool (one thread per
core) adds to every op it hands to the pool, against a pool of one thread.
TF's executor runs one of the ops a finished op makes ready on the same
thread and hands the others to the pool; an op counts as cheap, and runs
inline, only once its cost estimate, which starts at 1e8 cycles and moves a
tenth of the way to each run's cycles, falls under 8,000 cycles: about 90
runs (TF's executor.cc, KernelStats). Within the first 90 steps of a session
(every measurement here) every op whose kernel is marked expensive goes
through the pool. With one thread the pool is a queue on the running thread;
with several, another core takes the op, and its inputs, pending counts and
the step's bookkeeping move between cores. That is wall time by nature (the
other threads' CPU time includes their spinning), measured side by side on a
chain of scalar ops that hands every link to the pool (`relay_graph`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from graphs.tf_session import session_config
from placer.core import clocks

CHAIN_LINKS = 150  # links of each calibration chain: 150 x 2 x ~0.3 us, far above the clock's resolution
CHAIN_STEPS = 20  # timed steps per chain (median kept), after 5 warm-up steps
HANDOFF_ROUNDS = 5  # side-by-side rounds of the hand-off measurement (median kept)


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Per-op overheads of this machine's CPU under TF, seconds.

    Attributes:
      trace_floor: median kernel window of a traced scalar op.
      dispatch: untraced time one op adds to a step, its scalar kernel included.
      transfer_cost: untraced time one tensor sent between two logical CPU
        devices adds (TF's _Send/_Recv pair), beyond the op's dispatch.
    """

    trace_floor: float
    dispatch: float
    transfer_cost: float

    def as_dict(self) -> dict[str, float]:
        """The OpGraph calibration entries (placer.core.op_graph.CALIBRATION_KEYS)."""
        return {
            "cpu_trace_floor": self.trace_floor,
            "cpu_dispatch": self.dispatch,
            "cpu_transfer_cost": self.transfer_cost,
        }


def chain_graph(n: int, devices: int, leaves: bool = False):
    """A tf.Graph of a chain of `n` scalar AddV2 ops, op i on CPU i % devices; returns (graph, fetch).

    With `leaves`, each AddV2's input also feeds a Neg op (2n ops in all), fetched through one NoOp:
    every finished op then makes two ready, and the executor hands one to its pool, as in models.
    """
    g = tf.Graph()
    with g.as_default():
        with tf.device("/device:CPU:0"):
            x = tf.constant(1.0, name="x0")
        side = []
        for i in range(n):
            with tf.device(f"/device:CPU:{i % devices}"):
                if leaves:
                    side.append(tf.raw_ops.Neg(x=x, name=f"leaf{i}"))
                x = tf.raw_ops.AddV2(x=x, y=x, name=f"add{i}")
        fetch = tf.group(x, *side) if leaves else x
    return g, fetch


def ladder_graph(n: int, rungs: bool):
    """Two chains of `n` scalar AddV2 ops, A on CPU:0 and B on CPU:1; returns (graph, fetch).

    With `rungs`, link i of B also reads link i of A: n tensors cross from CPU:0 to CPU:1, while each chain
    keeps its own work ready, as in a model split over two devices.
    """
    g = tf.Graph()
    with g.as_default():
        with tf.device("/device:CPU:0"):
            a = tf.constant(1.0, name="a0")
        with tf.device("/device:CPU:1"):
            b = tf.constant(1.0, name="b0")
        for i in range(n):
            with tf.device("/device:CPU:0"):
                a = tf.raw_ops.AddV2(x=a, y=a, name=f"a{i + 1}")
            with tf.device("/device:CPU:1"):
                b = tf.raw_ops.AddV2(x=b, y=a if rungs else b, name=f"b{i + 1}")
        fetch = tf.group(a, b)
    return g, fetch


def _ladder_cpu(n: int, rungs: bool, steps: int) -> float:
    """Median CPU seconds per untraced step of a ladder (`ladder_graph`)."""
    g, fetch = ladder_graph(n, rungs)
    with tf.compat.v1.Session(graph=g, config=session_config(2, rewrite=False)) as sess:
        for _ in range(5):
            sess.run(fetch)
        return clocks.median_clocks(lambda: sess.run(fetch), steps)[1]


def relay_graph(n: int):
    """A chain of `n` scalar AddV2 ops whose every input also feeds an Identity; returns (graph, fetch).

    When an AddV2 finishes, the next AddV2 and an Identity are ready. TF's kernel marks Identity cheap, so the
    executor runs it inline and hands the AddV2, the chain's next link, to its inter-op pool: one hand-off per
    link, each on the step's critical path, with no other work to overlap it.
    """
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0, name="x0")
        side = []
        for i in range(n):
            side.append(tf.identity(x, name=f"side{i}"))
            x = tf.raw_ops.AddV2(x=x, y=x, name=f"link{i}")
        fetch = tf.group(x, *side)
    return g, fetch


def pool_config(threads: int) -> tf.compat.v1.ConfigProto:
    """A one-CPU session config, rewrites off, with its own inter-op pool of `threads` threads."""
    config = session_config(1, rewrite=False)
    config.use_per_session_threads = True
    config.inter_op_parallelism_threads = max(int(threads), 1)
    return config


def kernel_seconds(node_stats) -> float:
    """Seconds of one op's kernel window in a traced step (op_start to op_end, nanosecond fields)."""
    return max(node_stats.op_end_rel_nanos - node_stats.op_start_rel_nanos, 0) * 1e-9


def _chain_cpu(n: int, devices: int, leaves: bool, steps: int, traced: bool = False) -> tuple[float, list[float]]:
    """(median CPU seconds per untraced step, kernel windows of the chain's ops in traced steps) of one chain."""
    g, fetch = chain_graph(n, devices, leaves)
    windows: list[float] = []
    with tf.compat.v1.Session(graph=g, config=session_config(devices, rewrite=False)) as sess:
        for _ in range(5):
            sess.run(fetch)
        _, cpu = clocks.median_clocks(lambda: sess.run(fetch), steps)
        for _ in range(3 if traced else 0):
            md = tf.compat.v1.RunMetadata()
            sess.run(fetch, options=tf.compat.v1.RunOptions(trace_level=3), run_metadata=md)
            windows += [
                kernel_seconds(ns)
                for d in md.step_stats.dev_stats
                for ns in d.node_stats
                if ns.node_name.startswith(("add", "leaf"))
            ]
    return cpu, windows


def _relay_wall(n: int, threads: int, steps: int) -> float:
    """Median wall seconds per step of a relay of `n` links under a `threads`-thread inter-op pool.

    5 warm-up steps, then `steps` timed ones: 25 runs by default, within the executor's first 90, so every
    AddV2 still counts as expensive and goes to the pool, as in the timed steps of a measurement.
    """
    g, fetch = relay_graph(n)
    with tf.compat.v1.Session(graph=g, config=pool_config(threads)) as sess:
        for _ in range(5):
            sess.run(fetch)
        wall, _ = clocks.median_clocks(lambda: sess.run(fetch), steps)
    return wall


def pool_handoff(
    threads: int, links: int = CHAIN_LINKS, steps: int = CHAIN_STEPS, rounds: int = HANDOFF_ROUNDS
) -> tuple[float, list[float]]:
    """Wall seconds one op handed to a `threads`-thread inter-op pool adds to a step beyond a one-thread pool.

    Per round, a relay of `links` links (`relay_graph`) and an empty one run in sessions with their own pool
    of 1 and of `threads` threads, one after the other; the hand-off is the difference of the two pools'
    slopes per link.

    Args:
      threads: threads of the pool (TF's default: one per core this process may run on).
      links: links of the relay.
      steps: timed steps per session, median kept.
      rounds: rounds; the median is returned.

    Returns:
      (median seconds per hand-off, clamped at 0; each round's seconds, unclamped).
    """
    per_round = []
    for _ in range(rounds):
        slope = {
            p: (_relay_wall(links, p, steps) - _relay_wall(0, p, steps)) / links for p in dict.fromkeys((1, threads))
        }
        per_round.append(slope[threads] - slope[1])
    return max(float(np.median(per_round)), 0.0), per_round


def measure(links: int = CHAIN_LINKS, steps: int = CHAIN_STEPS) -> Calibration:
    """Measures the CPU's trace floor, dispatch and transfer cost now, in this process (about a second).

    Args:
      links: links of each chain.
      steps: timed steps per chain.

    Returns:
      The calibration, seconds; negative slopes (noise) are clamped to 0.
    """
    empty, _ = _chain_cpu(0, 1, True, steps)
    with_leaves, windows = _chain_cpu(links, 1, True, steps, traced=True)
    rails = _ladder_cpu(links, False, steps)
    ladder = _ladder_cpu(links, True, steps)
    return Calibration(
        trace_floor=float(np.median(windows)) if windows else 0.0,
        dispatch=max((with_leaves - empty) / (2 * links), 0.0),
        transfer_cost=max((ladder - rails) / links, 0.0),
    )
