"""TensorFlow session helpers shared by the session measurer, profiled costs and apply.

Devices: GPUs if the machine has them; on a CPU-only machine several CPU
devices. A `tf.compat.v1.Session` takes its CPU devices from
`ConfigProto.device_count["CPU"]`, not from the eager context's logical
device configuration (in TF 2.21 a Session ignores
`tf.config.set_logical_device_configuration`), so `session_config` sets the
count from the cluster. graphs/local_cluster.py describes this machine's
devices as a Cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2, rewriter_config_pb2

from graphs import extract, tf_util

# Memory limits (MiB) of the logical GPUs GPU 0 is split into, in every
# session this module configures; () keeps TF's default (each GPU whole).
# TF sets up GPU devices once per process, so all sessions must agree.
_GPU_MEMORY_LIMITS_MB: tuple[int, ...] = ()


def set_gpu_virtual_devices(memory_limits_mb: Sequence[int]) -> None:
    """Splits physical GPU 0 into logical GPUs in every session made by `session_config`.

    Only GPU 0 is made visible; logical GPU k ("/device:GPU:k") gets
    `memory_limits_mb[k]` MiB. Call before the first session of the process
    and set the same split on the eager context
    (`tf.config.set_logical_device_configuration`), since TF configures GPU
    devices once per process.

    Args:
      memory_limits_mb: MiB per logical GPU; empty restores TF's default.
    """
    global _GPU_MEMORY_LIMITS_MB
    _GPU_MEMORY_LIMITS_MB = tuple(int(m) for m in memory_limits_mb)


def session_config(
    num_cpus: int = 1, *, rewrite: bool = True, soft_placement: bool = False
) -> tf.compat.v1.ConfigProto:
    """A session config with `num_cpus` CPU devices ("/device:CPU:0".."N-1").

    Args:
      num_cpus: CPU devices the session creates (threads share the machine).
      rewrite: run Grappler's graph rewrites; off keeps every op's name, so
        step stats name exactly the ops of the graph (profiling, checks).
      soft_placement: let TF move ops it cannot run where they were placed.
    """
    config = tf.compat.v1.ConfigProto(allow_soft_placement=soft_placement, log_device_placement=False)
    config.device_count["CPU"] = max(int(num_cpus), 1)
    if _GPU_MEMORY_LIMITS_MB:
        config.gpu_options.visible_device_list = "0"
        config.gpu_options.experimental.virtual_devices.add().memory_limit_mb.extend(_GPU_MEMORY_LIMITS_MB)
    if not rewrite:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        config.graph_options.rewrite_options.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
        config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
        config.graph_options.optimizer_options.do_constant_folding = False
        config.graph_options.optimizer_options.do_function_inlining = False
    return config


def ran_on(run_metadata: tf.compat.v1.RunMetadata) -> dict[str, str]:
    """Returns op name -> short device name ("/device:CPU:1") from a traced run.

    Runtime-inserted nodes (_SOURCE, _Send/_Recv, _retval...) appear under
    their own names; GPU stream entries are folded into their device.
    """
    out: dict[str, str] = {}
    for dev in run_metadata.step_stats.dev_stats:
        name = tf_util.short_device_name(dev.device)
        for ns in dev.node_stats:
            out.setdefault(ns.node_name.split(":")[0], name)
    return out


def as_metagraph(source) -> meta_graph_pb2.MetaGraphDef:
    """A MetaGraphDef with a "train_op" collection from any model source.

    Args:
      source: a MetaGraphDef, GraphDef or tf.Graph; an object with a
        `metagraph` attribute (models.ModelGraph); or a callable returning
        any of these (a model builder).
    """
    if callable(source) and not isinstance(source, tf.Graph):
        source = source()
    if hasattr(source, "metagraph"):
        source = source.metagraph
    return extract.metagraph_of(source)


def import_for_session(metagraph: meta_graph_pb2.MetaGraphDef):
    """Imports a metagraph into a fresh graph, devices kept.

    Returns:
      (graph, fetches: list of ops of the "train_op" collection, init op).
    """
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.train.import_meta_graph(metagraph, clear_devices=False)
        fetches = [g.get_operation_by_name(n) for n in metagraph.collection_def["train_op"].node_list.value]
        with tf.device(None):
            init = tf.group(
                tf.compat.v1.global_variables_initializer(),
                tf.compat.v1.local_variables_initializer(),
                tf.compat.v1.tables_initializer(),
                name="session_measure_init",
            )
    return g, fetches, init


def trace_busy_and_memory(run_metadata, device_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-device busy seconds and peak memory bytes from a traced step.

    The peak is the larger of the two readings of `trace_memory`.
    """
    pos = {n: i for i, n in enumerate(device_names)}
    busy = np.zeros(len(device_names))
    for dev in run_metadata.step_stats.dev_stats:
        i = pos.get(tf_util.short_device_name(dev.device))
        if i is not None:
            busy[i] += sum(max(ns.op_end_rel_micros - ns.op_start_rel_micros, 0) for ns in dev.node_stats) * 1e-6
    return busy, np.maximum(*trace_memory(run_metadata, device_names))


def trace_memory(run_metadata, device_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Two readings of per-device peak memory (bytes) from a traced step.

    Returns:
      (activations, allocator): the step's allocation records on each device
      replayed in time order (frees first at equal times), whose running sum
      peaks at the most bytes allocated during the step live at once
      (variables, allocated before, are not in it); and the largest
      `allocator_bytes_in_use` snapshot of the device's allocator (everything
      it held then, variables included; TF takes it for large allocations
      only, so it is 0 for small graphs). Logical CPU devices share one
      allocator, so their snapshots are shared.
    """
    pos = {n: i for i, n in enumerate(device_names)}
    allocator = np.zeros(len(device_names))
    records: list[list[tuple[int, int]]] = [[] for _ in device_names]
    for dev in run_metadata.step_stats.dev_stats:
        i = pos.get(tf_util.short_device_name(dev.device))
        if i is None:
            continue
        for ns in dev.node_stats:
            for m in ns.memory:
                allocator[i] = max(allocator[i], m.allocator_bytes_in_use)
                records[i].extend((r.alloc_micros, r.alloc_bytes) for r in m.allocation_records)
    activations = np.array(
        [max(0.0, float(np.max(np.cumsum([b for _, b in sorted(r)])))) if r else 0.0 for r in records]
    )
    return activations, allocator
