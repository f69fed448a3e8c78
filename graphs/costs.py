"""Per-op compute costs for each device type, attached to an OpGraph.

Costs are seconds on a reference device of each type (speed 1.0; the
reference devices are in graphs/tf_util.py REFERENCE_DEVICES). NaN
means the op has no kernel for that type (TF's kernel registry, see
graphs/extract.py). Ops that a training step never runs (variable
initialisers, anything outside the fan-in of the "train_op" collection) cost
0: they take no time per step.

Sources:
  * `grappler_costs`: TF Grappler's analytical cost model on a virtual
    cluster (no hardware needed); deterministic.
  * `profiled_costs`: real runs on this machine with full tracing, median
    per op over several steps, the tracer's own floor taken off (CPU).
  * costs stored in a graph file (placer/core/io.py), same convention;
    `cached_costs` stores and reuses them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import tensorflow as tf
from tensorflow.python.grappler import item as gitem

from graphs import costs_calibrate, extract, tf_util
from graphs import tf_session as session_lib
from placer.core import io as graph_io
from placer.core.cluster import Cluster, Device
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

_SHORT_STEP_S = 1.0  # traced steps shorter than this get an untraced step before each (profiled_costs)


def device_types_of(cluster: Cluster) -> tuple[str, ...]:
    """Device types of a cluster, in order of first appearance."""
    return tuple(dict.fromkeys(d.type for d in cluster.devices))


def _with_kernels(graph: OpGraph, types: tuple[str, ...], cost: np.ndarray, in_step: np.ndarray) -> OpGraph:
    """`graph` with `cost` [n, T] seconds (0 outside the step, NaN without a kernel) and `in_step` [n] bool."""
    cost = np.where(in_step[:, None], cost, 0.0)
    cost = np.where(extract.kernel_mask(graph, types), cost, np.nan)
    return graph.with_costs(types, cost).with_step_ops(in_step)


def grappler_op_costs(metagraph, device: Device) -> dict[str, float]:
    """Grappler's estimated seconds per op with every op on `device`'s reference.

    Args:
      metagraph: MetaGraphDef (or tf.Graph / GraphDef) with a "train_op"
        collection; without one, the graph's sinks are fetched.
      device: a cluster device; its type's reference properties are used.

    Returns:
      op name -> seconds, for the ops Grappler scheduled (the step's fan-in).
    """
    mg = tf_util.single_device_metagraph(extract.metagraph_of(metagraph), device.name)
    vc = tf_util.cost_model_cluster(device)
    try:
        item = gitem.Item(mg, ignore_colocation=True)
        op_perfs, _, _ = vc.MeasureCosts(item)
    finally:
        vc.Shutdown()
    # OpPerformance.compute_cost is in nanoseconds (compute + memory time),
    # whole microseconds in practice, on a device COST_SCALE times slower.
    return {p.node: p.compute_cost * 1e-9 / tf_util.COST_SCALE for p in op_perfs}


def grappler_costs(metagraph, graph: OpGraph, cluster: Cluster) -> OpGraph:
    """Attaches Grappler's analytical per-op costs for each device type of `cluster`.

    For each device type the whole graph is put on one reference device of
    that type in a Grappler virtual cluster and `MeasureCosts` gives each
    op's estimated time (OpLevelCostEstimator: flops over peak flops plus
    bytes accessed over memory bandwidth, no overlap assumed).

    Args:
      metagraph: the model's MetaGraphDef (or tf.Graph / GraphDef).
      graph: the OpGraph extracted from it.
      cluster: devices whose types get a cost column ("CPU", "GPU").

    Returns:
      A copy of `graph` with columns for the cluster's device types, seconds;
      NaN where there is no kernel, 0 for ops outside a training step, which
      are marked `in_step` False (extract.step_mask: the train op's fan-in).
    """
    types = device_types_of(cluster)
    cost = np.zeros((graph.num_ops, len(types)))
    for j, t in enumerate(types):
        dev = cluster.devices[cluster.indices_of_type(t)[0]]
        per_op = grappler_op_costs(metagraph, dev)
        cost[:, j] = [per_op.get(n, 0.0) for n in graph.names]
    return _with_kernels(graph, types, cost, extract.step_mask(graph, metagraph))


def profiled_costs(
    model_or_metagraph,
    graph: OpGraph,
    *,
    steps: int = 5,
    warmup: int = 2,
    device_types: tuple[str, ...] | None = None,
) -> OpGraph:
    """Profiles each op on this machine's devices: median seconds over `steps`.

    Each device type present ("CPU", and "GPU" when TF sees one) gets a
    column: every op is put on device 0 of that type (ops without a kernel
    there are softly moved and get NaN), `warmup` traced steps are dropped,
    then `steps` steps run with FULL_TRACE; the median per op is kept. Graph
    rewrites are off so step stats name the graph's own ops. Where a traced
    step takes under a second, an untraced step runs before each traced one,
    so the intra-op pool is awake as in training.

    CPU: an op's time is its kernel window (op start to op end, nanoseconds)
    less the tracer's floor, clamped at 0; the executor's work around the
    kernel is the simulator's dispatch. The floor, the dispatch and the
    transfer cost are measured first in this process
    (graphs/costs_calibrate.py) and kept in the graph's `calibration`, which
    the simulator uses for this machine's clusters
    (placer/measure/calibration.py). GPU: all_end_rel_micros, the longest
    entry per op (kernel launch and stream), as traced.

    Args:
      model_or_metagraph: MetaGraphDef, tf.Graph, models.ModelGraph, or a
        callable returning one.
      graph: the OpGraph extracted from it.
      steps: traced steps kept.
      warmup: traced steps dropped first.
      device_types: types to profile; default CPU plus GPU if present.

    Returns:
      A copy of `graph` with costs in seconds (0 for ops that did not run),
      the train op's fan-in marked `in_step` as Grappler-costed graphs mark it
      (extract.step_mask; the others cost nothing in the simulator) and, when
      CPU was profiled, the calibration (seconds).
    """
    mg = session_lib.as_metagraph(model_or_metagraph)
    in_step = extract.step_mask(graph, mg)
    feeds = [graph.names[i] for i in np.flatnonzero(in_step) if graph.types[i] == "Placeholder"]
    if feeds:  # profiling runs the step with no feeds: TF would stop on the first placeholder with a traceback
        raise InputError(
            f"--costs=profile: the training step reads placeholder {feeds[0]!r}"
            + (f" (and {len(feeds) - 1} more)" if len(feeds) > 1 else "")
            + ", which profiling cannot feed; make the inputs in the graph (as --model does) or use --costs=grappler"
        )
    if device_types is None:
        device_types = ("CPU", "GPU") if tf.config.list_physical_devices("GPU") else ("CPU",)
    cost = np.zeros((graph.num_ops, len(device_types)))
    index = graph.index()
    calibration = costs_calibrate.measure() if "CPU" in device_types else None
    for j, t in enumerate(device_types):
        g, fetches, init = session_lib.import_for_session(tf_util.single_device_metagraph(mg, f"/device:{t}:0"))
        config = session_lib.session_config(1, rewrite=False, soft_placement=True)
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            sess.run(init)
            samples = op_samples(traced_runs(sess, fetches, warmup + max(steps, 1)), t, skip=warmup)
        cost[:, j] = medians_less_floor(samples, index, calibration.trace_floor if t == "CPU" else 0.0)
    costed = _with_kernels(graph, tuple(device_types), cost, in_step)
    return costed.with_calibration(calibration.as_dict()) if calibration else costed


def traced_runs(
    sess, fetches, steps: int, *, timeout_in_ms: int = 0, awake: bool = False
) -> Iterator[tf.compat.v1.RunMetadata]:
    """Runs `steps` FULL_TRACE steps of `fetches` in `sess`, yielding each step's RunMetadata.

    While the traced steps take under a second, an untraced step runs right
    before each traced one: TF's intra-op pool sleeps through the gap a traced
    step leaves (collecting its statistics), and the first kernel that uses it
    would pay for waking it (tens of us), which training steps that follow
    one another do not. Negligible beside a step of a second or more, which
    skips it.

    Args:
      sess: an open tf.compat.v1.Session, its variables initialised.
      fetches: what one step runs.
      steps: traced steps.
      timeout_in_ms: per-run time-out (0: none).
      awake: untraced steps ran just before (the pool is awake), so the first
        traced step needs none before it.
    """
    trace = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE, timeout_in_ms=timeout_in_ms)
    plain = tf.compat.v1.RunOptions(timeout_in_ms=timeout_in_ms)
    short = not awake
    for _ in range(steps):
        if short:
            sess.run(fetches, options=plain)
        md = tf.compat.v1.RunMetadata()
        t0 = time.perf_counter()
        sess.run(fetches, options=trace, run_metadata=md)
        short = time.perf_counter() - t0 < _SHORT_STEP_S
        yield md


def op_samples(run_metadatas: Iterable, device_type: str, *, skip: int = 0) -> dict[str, list[float]]:
    """Op name -> its seconds in each traced step (`op_times`), the first `skip` steps dropped.

    Args:
      run_metadatas: RunMetadata of traced steps, in order (a generator is consumed).
      device_type: "CPU" or "GPU".
      skip: leading steps left out (warm-up).
    """
    samples: dict[str, list[float]] = {}
    for k, md in enumerate(run_metadatas):
        if k < skip:
            continue
        for name, seconds in op_times(md, device_type).items():
            samples.setdefault(name, []).append(seconds)
    return samples


def medians_less_floor(samples: dict[str, list[float]], index: dict[str, int], floor: float) -> np.ndarray:
    """[n_ops] each op's median traced seconds less the tracer's `floor`, clamped at 0; 0 for ops not traced.

    Args:
      samples: op name -> its seconds in each traced step.
      index: op name -> op index of the graph (names not in it are ignored).
      floor: seconds a traced op shows however small its kernel.
    """
    out = np.zeros(len(index))
    for name, vals in samples.items():
        i = index.get(name)
        if i is not None:
            out[i] = max(float(np.median(vals)) - floor, 0.0)
    return out


def op_times(run_metadata, device_type: str) -> dict[str, float]:
    """Seconds per op on devices of `device_type` in one traced step, the tracer's floor not yet taken off.

    CPU: the kernel window (costs_calibrate.kernel_seconds). GPU: all_end_rel_micros;
    GPU kernels also appear on stream entries, and the longest entry per op wins.
    """
    out: dict[str, float] = {}
    for dev in run_metadata.step_stats.dev_stats:
        if f"/device:{device_type}:" not in tf_util.short_device_name(dev.device):
            continue
        for ns in dev.node_stats:
            name = ns.node_name.split(":")[0]
            sec = costs_calibrate.kernel_seconds(ns) if device_type == "CPU" else ns.all_end_rel_micros * 1e-6
            out[name] = max(out.get(name, 0.0), sec)
    return out


def cached_costs(path: str, compute: Callable[[], OpGraph]) -> OpGraph:
    """Loads a costed graph from `path` (placer/core/io.py JSON) or computes and saves it.

    Args:
      path: graph JSON file (".json" or ".json.gz").
      compute: returns the costed graph when the file does not exist.
    """
    if os.path.exists(path):
        return graph_io.load(path)
    graph = compute()
    graph_io.save(graph, path)
    return graph
