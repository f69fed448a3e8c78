"""Measuring placements for real: the placed graph run in a tf.compat.v1.Session.

Each placement gets a fresh graph imported from the model's MetaGraphDef with
every node's device set, a session with `allow_soft_placement=False` (so an
illegal placement fails instead of being silently fixed), variable
initialisation, `warmup` untimed steps, `steps` timed steps (the median is the
step time) and `trace_steps` traced steps (FULL_TRACE, one by default; the
last gives per-device busy time, peak memory and the check of where each op
ran, `ran_on`; all are kept in `last_traces`).

Devices and session settings come from graphs/tf_session.py.

Failures are never raised: ResourceExhaustedError -> OOM, DeadlineExceeded
(the per-run time-out, RunOptions.timeout_in_ms) -> TIMEOUT, an op placed on a
device type without a kernel -> UNSUPPORTED and a split colocation group ->
ERROR (both checked before running, as GrapplerMeasurer does), any other TF
error (e.g. a device this process lacks) -> ERROR.
"""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2

from graphs import tf_util
from graphs.costs import traced_runs
from graphs.tf_session import as_metagraph, import_for_session, session_config, trace_busy_and_memory
from placer.core.cluster import Cluster
from placer.core.measurement import ERROR, OOM, TIMEOUT, Measurement
from placer.core.op_graph import OpGraph


class SessionMeasurer(tf_util.OneAtATime):
    """Measures placements by running the placed graph on this machine's devices.

    Args:
      model_builder_or_metagraph: MetaGraphDef, tf.Graph, models.ModelGraph, or
        a callable returning one; its "train_op" collection is one step.
      graph: the OpGraph extracted from it.
      cluster: this machine's devices (graphs.local_cluster.discover()).
      warmup: untimed steps per placement, dropped.
      steps: timed steps per placement; the median is the step time.
      timeout_s: time-out of each session run, seconds.
      rewrite: let TF's Grappler rewrite the placed graph (as in training).
      trace_steps: traced steps after the timed ones (graphs.costs.traced_runs).
    """

    def __init__(
        self,
        model_builder_or_metagraph,
        graph: OpGraph,
        cluster: Cluster,
        *,
        warmup: int = 2,
        steps: int = 5,
        timeout_s: float = 60.0,
        rewrite: bool = True,
        trace_steps: int = 1,
    ):
        self.metagraph = as_metagraph(model_builder_or_metagraph)
        self.prepare(graph, cluster)
        self.warmup = int(warmup)
        self.steps = max(int(steps), 1)
        self.timeout_s = float(timeout_s)
        self.rewrite = rewrite
        self.trace_steps = max(int(trace_steps), 1)
        self.last_run_metadata: tf.compat.v1.RunMetadata | None = None
        self.last_traces: list[tf.compat.v1.RunMetadata] = []
        cpus = [int(d.name.rsplit(":", 1)[1]) for d in cluster.devices if d.type == "CPU"]
        self._num_cpus = max(cpus) + 1 if cpus else 1

    def measure_devices(self, devices: np.ndarray) -> Measurement:
        """Measures one placement given as [n_ops] device indices into the cluster."""
        devices = np.asarray(devices, dtype=np.int64)
        failed = self.cannot_run(devices)
        if failed is not None:
            return failed
        d = self.cluster.num_devices
        mg = tf_util.placed_metagraph(self.metagraph, self.graph, devices, self.cluster.device_names)
        try:
            return self._run(mg, devices)
        except tf.errors.ResourceExhaustedError as e:
            return Measurement.failed(OOM, tf_util.error_line(e), d)
        except tf.errors.DeadlineExceededError as e:
            return Measurement.failed(TIMEOUT, f"a step took over {self.timeout_s} s: {tf_util.error_line(e)}", d)
        except (tf.errors.OpError, ValueError) as e:
            return Measurement.failed(ERROR, tf_util.error_line(e), d)

    def _run(self, mg: meta_graph_pb2.MetaGraphDef, devices: np.ndarray) -> Measurement:
        g, fetches, init = import_for_session(mg)
        opts = tf.compat.v1.RunOptions(timeout_in_ms=max(int(self.timeout_s * 1000), 1))
        config = session_config(self._num_cpus, rewrite=self.rewrite)
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            sess.run(init, options=opts)
            for _ in range(self.warmup):
                sess.run(fetches, options=opts)
            times = []
            for _ in range(self.steps):
                t0 = time.perf_counter()
                sess.run(fetches, options=opts)
                times.append(time.perf_counter() - t0)
            traces = list(traced_runs(sess, fetches, self.trace_steps, timeout_in_ms=opts.timeout_in_ms, awake=True))
        self.last_traces = traces
        self.last_run_metadata = md = traces[-1]
        busy, peak = trace_busy_and_memory(md, self.cluster.device_names)
        return Measurement(
            step_time=float(np.median(times)),
            peak_memory=peak,
            busy_time=busy,
            bytes_moved=tf_util.cross_device_bytes(self.graph, devices),
        )
