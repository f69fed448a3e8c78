"""Measuring placements with Grappler's virtual cluster (no hardware needed).

The placed MetaGraphDef (every node's device set from the placement) is
scheduled by Grappler's VirtualScheduler on a virtual cluster whose devices
are the cluster spec's devices (peak compute and bandwidth from
graphs/tf_util.py). The step time is `MeasureCosts`' run time, the
per-device peak memory comes from `DeterminePeakMemoryUsage`, per-device busy
time from the step stats.

Transfers: Grappler's scheduler inserts _Send/_Recv pairs between devices but
gives them no cost (checked with TF 2.21: a 4 MiB tensor crosses for free).
So each cross-device tensor is also copied by a Snapshot op placed on a
virtual "link" device of the ordered device pair, whose memory bandwidth is
twice the cluster's link bandwidth (Snapshot reads and writes the tensor):
the copy takes bytes / bandwidth, transfers on one link run one at a time,
and a tensor goes to each consuming device once. The consumer waits for the
copy through a control edge but keeps reading the original tensor: routing
the data through the Snapshot hid constant values (a Reshape's shape) from
Grappler's shape inference, so the ops after it lost their dimensions and
were costed as nearly free (docs/measure.md). Link latency is not modelled. Reference, resource and variant tensors are not rerouted (their
edges stay free; TF colocates reference consumers with their variable).

Checks done before scheduling, since the virtual cluster itself would
happily run anything anywhere:
  * an op on a device type without a kernel -> UNSUPPORTED;
  * ops sharing a colocation key on different devices -> ERROR ("colocation",
    as a real session would refuse such a graph);
and after: a device's peak memory over its `memory_bytes` -> OOM (the virtual
devices have unlimited memory so the peak is known even then). Grappler
errors (ResourceExhausted -> OOM, others -> ERROR) are caught; measuring never
raises for a placement that merely cannot run. A measurement in which some op
costs over `cost_tolerance` less than with the whole graph on its device is
flagged (Measurement.flag; placer/measure/cost_guard.py).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from tensorflow.python.grappler import item as gitem

from graphs import extract, tf_util
from placer.core.cluster import Cluster
from placer.core.measurement import ERROR, OOM, Measurement
from placer.core.op_graph import OpGraph
from placer.measure import cost_guard

LINK_INDEX_BASE = 10000  # link devices are "/device:CPU:10000" and up.
_LINK_GFLOPS = 1e9  # a link computes nothing; its copy is bandwidth-bound.
TRANSFER_SCOPE = "placer_transfer"


class GrapplerMeasurer(tf_util.OneAtATime):
    """Measures placements of one graph on a Grappler virtual cluster.

    Args:
      metagraph: the model's MetaGraphDef (or tf.Graph / GraphDef); its
        "train_op" collection is one training step.
      graph: the OpGraph extracted from it.
      cluster: the devices to simulate.
      scale: virtual devices run this many times slower than the cluster's
        (Grappler's whole-microsecond times then resolve nanoseconds).
      cost_tolerance: a measurement is flagged when an op costs more than
        this fraction less than with the whole graph on its device
        (placer/measure/cost_guard.py).
    """

    def __init__(
        self,
        metagraph,
        graph: OpGraph,
        cluster: Cluster,
        *,
        scale: float = tf_util.COST_SCALE,
        cost_tolerance: float = cost_guard.TOLERANCE,
    ):
        self.metagraph = extract.metagraph_of(metagraph)
        self.prepare(graph, cluster)
        self.scale = float(scale)
        self.cost_tolerance = float(cost_tolerance)
        # [n_ops] seconds per op with the whole graph on one device, by device (peak, bandwidth).
        self._unplaced: dict[tuple[str, float, float], np.ndarray] = {}
        self.last_op_seconds: np.ndarray | None = None  # [n_ops] seconds per op of the last measurement
        d = cluster.num_devices
        named = [tf_util.virtual_device(x.name, *tf_util.device_performance(x), self.scale) for x in cluster.devices]
        for i in range(d):
            for j in range(d):
                if i != j:
                    bw = 2.0 * float(cluster.bandwidth[i, j])
                    named.append(tf_util.virtual_device(self._link(i, j), _LINK_GFLOPS, bw, self.scale))
        self._vc = tf_util.grappler_cluster(named)
        self._pos = {n: i for i, n in enumerate(cluster.device_names)}
        # Tensors whose data a transfer copies: "op:k" -> dtype enum.
        self._movable: dict[str, int] = {}
        for op in extract.to_tf_graph(self.metagraph).get_operations():
            for k, t in enumerate(op.outputs):
                dt = t.dtype
                if dt == dt.base_dtype and dt not in (tf.resource, tf.variant):
                    self._movable[f"{op.name}:{k}"] = dt.as_datatype_enum

    def _link(self, i: int, j: int) -> str:
        return f"/device:CPU:{LINK_INDEX_BASE + i * self.cluster.num_devices + j}"

    def measure_devices(self, devices: np.ndarray) -> Measurement:
        """Measures one placement given as [n_ops] device indices into the cluster."""
        devices = np.asarray(devices, dtype=np.int64)
        failed = self.cannot_run(devices)
        if failed is not None:
            return failed
        d = self.cluster.num_devices
        try:
            item = gitem.Item(self.placed(devices), ignore_colocation=True)
            op_perfs, run_time, step_stats = self._vc.MeasureCosts(item)
            peaks = self._vc.DeterminePeakMemoryUsage(item)
            flag = self._cost_flag(devices, op_perfs)
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
                busy[i] += sum(ns.op_end_rel_micros for ns in dev_stats.node_stats) * 1e-6 / self.scale
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
                flag,
            )
        return Measurement(float(run_time) / self.scale, None, "", peak, busy, moved, flag)

    def op_seconds(self, op_perfs) -> np.ndarray:
        """[n_ops] seconds per op from Grappler's OpPerformance list (NaN for ops it did not cost)."""
        out = np.full(self.graph.num_ops, np.nan)
        for p in op_perfs:
            i = self._index.get(p.node)
            if i is not None:
                out[i] = p.compute_cost * 1e-9 / self.scale  # ns on a device `scale` times slower
        return out

    def unplaced_seconds(self, device: int) -> np.ndarray:
        """[n_ops] seconds per op with the whole graph on cluster device `device` (cached)."""
        dev = self.cluster.devices[device]
        key = (dev.type, *tf_util.device_performance(dev))
        if key not in self._unplaced:
            mg = tf_util.single_device_metagraph(self.metagraph, dev.name)
            op_perfs, _, _ = self._vc.MeasureCosts(gitem.Item(mg, ignore_colocation=True))
            self._unplaced[key] = self.op_seconds(op_perfs)
        return self._unplaced[key]

    def unplaced_for(self, devices: np.ndarray) -> np.ndarray:
        """[n_ops] seconds of each op on its device of a placement, with the whole graph there."""
        ref = np.full(self.graph.num_ops, np.nan)
        for k in np.unique(devices).tolist():
            on = devices == k
            ref[on] = self.unplaced_seconds(int(k))[on]
        return ref

    def _cost_flag(self, devices: np.ndarray, op_perfs) -> str:
        ref = self.unplaced_for(devices)
        self.last_op_seconds = placed = self.op_seconds(op_perfs)
        return cost_guard.cost_flag(self.graph, devices, self.cluster.device_names, placed, ref, self.cost_tolerance)

    def placed(self, devices: np.ndarray):
        """The MetaGraphDef Grappler schedules: devices set, transfers routed via links."""
        mg = tf_util.placed_metagraph(self.metagraph, self.graph, devices, self.cluster.device_names)
        index = self._index
        added: set[str] = set()
        for node in list(mg.graph_def.node):
            b = index.get(node.name)
            if b is None:
                continue
            b = int(devices[b])
            waits: dict[str, None] = {}  # transfers this node waits for, in order
            for inp in node.input:
                if inp.startswith("^"):
                    continue
                src, _, out = inp.partition(":")
                a = index.get(src)
                if a is None or int(devices[a]) == b:
                    continue
                tensor = f"{src}:{out or 0}"
                dtype = self._movable.get(tensor)
                if dtype is None:
                    continue
                name = f"{TRANSFER_SCOPE}/{src}/{out or 0}/to_{b}"
                if name not in added:
                    x = mg.graph_def.node.add(
                        name=name, op="Snapshot", input=[tensor], device=self._link(int(devices[a]), b)
                    )
                    x.attr["T"].type = dtype
                    added.add(name)
                waits.setdefault(name, None)
            node.input.extend(f"^{w}" for w in waits)
        return mg
