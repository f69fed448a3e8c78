"""Measuring placements with Grappler's virtual cluster (no hardware needed).

The placed MetaGraphDef (every node's device set from the placement) is
scheduled by Grappler's VirtualScheduler on a virtual cluster whose devices
are the cluster spec's devices (peak compute and bandwidth from
placer/measure/tf_util.py). The step time is `MeasureCosts`' run time, the
per-device peak memory comes from `DeterminePeakMemoryUsage`, per-device busy
time from the step stats.

Checks done before scheduling, since the virtual cluster itself would
happily run anything anywhere:
  * an op on a device type without a kernel -> UNSUPPORTED;
  * ops sharing a colocation key on different devices -> ERROR ("colocation",
    as a real session would refuse such a graph);
and after: a device's peak memory over its `memory_bytes` -> OOM (the virtual
devices get unlimited memory so the peak is known even then). Grappler
errors (ResourceExhausted -> OOM, others -> ERROR) are caught; measuring never
raises for a placement that merely cannot run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.grappler import item as gitem

from graphs import extract
from graphs.op_graph import OpGraph
from placer.cluster import Cluster
from placer.measure import tf_util
from placer.measure.base import ERROR, OOM, UNSUPPORTED, Measurement
from placer.placement import Placement


class GrapplerMeasurer:
    """Measures placements of one graph on a Grappler virtual cluster.

    Args:
      metagraph: the model's MetaGraphDef (or tf.Graph / GraphDef); its
        "train_op" collection is one training step.
      graph: the OpGraph extracted from it.
      cluster: the devices to simulate.
    """

    def __init__(self, metagraph, graph: OpGraph, cluster: Cluster):
        self.metagraph = extract.metagraph_of(metagraph)
        self.graph = graph
        self.cluster = cluster
        types = sorted({d.type for d in cluster.devices})
        mask = extract.kernel_mask(graph, types)
        self._runnable = mask[:, [types.index(d.type) for d in cluster.devices]]  # [n, D]
        self._vc = tf_util.virtual_cluster(cluster.devices, unlimited_memory=True)
        self._pos = {n: i for i, n in enumerate(cluster.device_names)}

    def measure(self, placements: Sequence[Placement]) -> list[Measurement]:
        """Returns one Measurement per placement, in order."""
        out = []
        for p in placements:
            p.check_graph(self.graph)
            out.append(self.measure_devices(p.devices))
        return out

    def measure_devices(self, devices: np.ndarray) -> Measurement:
        """Measures one placement given as [n_ops] device indices into the cluster."""
        devices = np.asarray(devices, dtype=np.int64)
        d = self.cluster.num_devices
        bad = np.flatnonzero(~self._runnable[np.arange(self.graph.num_ops), devices])
        if bad.size:
            i = int(bad[0])
            dev = self.cluster.devices[devices[i]]
            return Measurement.failed(
                UNSUPPORTED,
                f"op {self.graph.names[i]!r} ({self.graph.types[i]}) has no {dev.type} kernel, placed on {dev.name}",
                d,
            )
        coloc = tf_util.colocation_violation(self.graph, devices)
        if coloc:
            return Measurement.failed(ERROR, coloc, d)
        mg = tf_util.placed_metagraph(self.metagraph, self.graph, devices, self.cluster.device_names)
        try:
            item = gitem.Item(mg, ignore_colocation=True)
            _, run_time, step_stats = self._vc.MeasureCosts(item)
            peaks = self._vc.DeterminePeakMemoryUsage(item)
        except tf.errors.ResourceExhaustedError as e:
            return Measurement.failed(OOM, tf_util.error_line(e), d)
        except (tf.errors.OpError, ValueError, RuntimeError) as e:
            return Measurement.failed(ERROR, tf_util.error_line(e), d)
        peak = np.zeros(d)
        for name, (bytes_, _) in peaks.items():
            i = self._pos.get(tf_util.short_device_name(name))
            if i is not None:
                peak[i] = max(peak[i], float(bytes_))
        busy = np.zeros(d)
        for dev_stats in step_stats.dev_stats:
            i = self._pos.get(tf_util.short_device_name(dev_stats.device))
            if i is not None:
                busy[i] += sum(ns.op_end_rel_micros for ns in dev_stats.node_stats) * 1e-6
        moved = tf_util.cross_device_bytes(self.graph, devices)
        memory = self.cluster.memory()
        over = np.flatnonzero(peak > memory)
        if over.size:
            k = int(over[0])
            return Measurement(
                float("inf"),
                OOM,
                f"{self.cluster.devices[k].name} needs {int(peak[k])} bytes, has {int(memory[k])}",
                peak,
                busy,
                moved,
            )
        return Measurement(step_time=float(run_time), peak_memory=peak, busy_time=busy, bytes_moved=moved)
