"""Running a placed training graph and checking where every op ran.

`run_placed` trains for a few steps in a `tf.compat.v1.Session` and traces
one more step; `verify` compares the devices in that trace (RunMetadata
step stats) with the devices asked for. Ops that leave no trace are not
checked: ops outside the training step (initialisers, ops no fetch needs)
and ops the graph optimisations folded, merged or pruned (constants,
shape arithmetic, identities; with Grappler on many more, with it off a few
duplicate constants and Shape ops remain).
"""

from __future__ import annotations

import collections
import dataclasses
import time

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2

from graphs import extract, tf_util
from graphs import tf_session as session_lib
from placer.apply.devices import device_name
from placer.core.errors import InputError


@dataclasses.dataclass
class RunResult:
    """A placed graph run for a few steps.

    Attributes:
      step_times: seconds of each timed step.
      run_metadata: the traced step's RunMetadata.
      step_ops: names of the graph ops one training step runs (the fan-in
        of the "train_op" collection).
      op_types: op name -> op type in the graph that ran.
    """

    step_times: list[float]
    run_metadata: tf.compat.v1.RunMetadata
    step_ops: frozenset[str]
    op_types: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def step_time(self) -> float:
        """Median step time, seconds."""
        return float(np.median(self.step_times))


@dataclasses.dataclass
class Verification:
    """Where ops ran compared with where they were asked to run.

    Attributes:
      checked: ops of the placement found in the trace.
      moved: op -> (device asked for, device it ran on), for checked ops
        that ran elsewhere.
      fused: the same for ops Grappler fused into another op type (e.g. a
        BiasAdd folded into the MatMul before it, run as _FusedMatMul under
        the BiasAdd's name on the MatMul's device).
      not_in_step: ops of the placement one training step does not run.
      not_traced: ops of the step missing from the trace (optimised away).
      fused_into: for each op in `fused`, the op type that ran under its
        name (e.g. "_FusedMatMul").
    """

    checked: int
    moved: dict[str, tuple[str, str]]
    fused: dict[str, tuple[str, str]]
    not_in_step: list[str]
    not_traced: list[str]
    fused_into: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.moved


def run_placed(
    metagraph: meta_graph_pb2.MetaGraphDef,
    *,
    num_cpus: int,
    steps: int,
    warmup: int = 1,
    soft_placement: bool = True,
    rewrite: bool = True,
) -> RunResult:
    """Initialises the variables and runs `warmup` + `steps` training steps, then one traced step.

    Args:
      metagraph: the placed MetaGraphDef with a "train_op" collection.
      num_cpus: CPU devices the session creates ("/device:CPU:0".."N-1").
      steps: timed steps (at least 1).
      warmup: untimed steps first.
      soft_placement: let TF move ops it cannot place as asked.
      rewrite: let Grappler rewrite the graph (as in ordinary training).

    Raises:
      InputError: the step runs out of memory (naming the allocation), or TF
        refuses the placement (naming the op).
    """
    g, fetches, init = session_lib.import_for_session(metagraph)
    config = session_lib.session_config(num_cpus, rewrite=rewrite, soft_placement=soft_placement)
    times = []
    md = tf.compat.v1.RunMetadata()
    try:
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            sess.run(init)
            for _ in range(max(warmup, 0)):
                sess.run(fetches)
            for _ in range(max(steps, 1)):
                t0 = time.perf_counter()
                sess.run(fetches)
                times.append(time.perf_counter() - t0)
            trace = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
            sess.run(fetches, options=trace, run_metadata=md)
    except tf.errors.ResourceExhaustedError as e:
        raise InputError(f"out of memory running the placed graph: {tf_util.error_line(e)}") from None
    except tf.errors.InvalidArgumentError as e:
        raise InputError(f"TensorFlow cannot run the placement: {tf_util.error_line(e)}") from None
    return RunResult(times, md, extract.step_fan_in(metagraph), {op.name: op.type for op in g.get_operations()})


def traced_types(run_metadata) -> dict[str, str]:
    """Op name -> op type that ran, from the step stats' timeline labels ("name = Type(inputs)")."""
    out = {}
    for dev in run_metadata.step_stats.dev_stats:
        for ns in dev.node_stats:
            _, eq, rest = ns.timeline_label.partition(" = ")
            if eq:
                out.setdefault(ns.node_name.split(":")[0], rest.split("(", 1)[0].strip())
    return out


def verify(expected: dict[str, str], result: RunResult) -> Verification:
    """Compares each op's device in the traced step with the one expected.

    Args:
      expected: op name -> device name it should run on.
      result: the run.
    """
    ran = session_lib.ran_on(result.run_metadata)
    types = traced_types(result.run_metadata)
    moved, fused, fused_into, not_in_step, not_traced = {}, {}, {}, [], []
    checked = 0
    for op, want in expected.items():
        got = ran.get(op)
        if got is None:
            (not_traced if op in result.step_ops else not_in_step).append(op)
            continue
        checked += 1
        if device_name(got) != device_name(want):
            rewritten = op in types and op in result.op_types and types[op] != result.op_types[op]
            (fused if rewritten else moved)[op] = (device_name(want), device_name(got))
            if rewritten:
                fused_into[op] = types[op]
    return Verification(checked, moved, fused, not_in_step, not_traced, fused_into)


def device_summary(expected: dict[str, str], result: RunResult) -> dict[str, dict]:
    """Per device: ops placed there, ops traced there, and busy seconds of the traced step."""
    names = sorted(
        {device_name(d) for d in expected.values()}
        | {tf_util.short_device_name(d.device) for d in result.run_metadata.step_stats.dev_stats}
    )
    busy, _ = session_lib.trace_busy_and_memory(result.run_metadata, names)
    placed = collections.Counter(device_name(d) for d in expected.values())
    traced = collections.Counter(d for op, d in session_lib.ran_on(result.run_metadata).items() if op in expected)
    return {
        n: {"ops_placed": placed.get(n, 0), "ops_traced": traced.get(n, 0), "busy_s": float(b)}
        for n, b in zip(names, busy, strict=True)
    }
