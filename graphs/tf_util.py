"""TensorFlow helpers shared by the Grappler and session backends and costs.

Grappler's analytical cost model (OpLevelCostEstimator) reads two figures of
a device from its DeviceProperties: peak compute and memory bandwidth. For a
CPU-typed device, peak GFLOPS = num_cores x frequency (MHz) x 1e-3 and the
bandwidth field is in KB/s; for a GPU-typed one the peak also depends on an
architecture table, which rounds coarsely. The cost model treats device
types alike apart from these two figures, so every virtual device here is
CPU-typed with num_cores 1 and the whole peak in `frequency`.

Grappler reports op times in whole microseconds. Virtual devices are made
`scale` times slower (COST_SCALE = 1000) and times divided back, which gives
nanosecond resolution: the small ops of tiny models are sub-microsecond.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from tensorflow.core.protobuf import device_properties_pb2, meta_graph_pb2
from tensorflow.python.grappler import cluster as gcluster

from graphs import extract
from placer.core import colocation
from placer.core.cluster import Cluster, Device
from placer.core.measurement import ERROR, UNSUPPORTED, Measurement
from placer.core.op_graph import OpGraph

# Reference devices of each type: compute costs are seconds on these.
#  GPU: one die of an NVIDIA K80 (GK210, the paper's GPU, Mirhoseini et al.
#    2017 section 4): 13 SMX x 192 cores x 2 flops x 875 MHz boost = 4368
#    GFLOPS single precision, 240 GB/s, 12 GB (NVIDIA Tesla K80 datasheet).
#  CPU: the paper's 18-core Haswell (Xeon E5-2699 v3, 2.3 GHz): 18 cores x
#    2.3 GHz x 32 single-precision flops per cycle (two AVX2 FMA units) =
#    1324.8 GFLOPS, 4 channels of DDR4-2133 = 68 GB/s (Intel ARK).
REFERENCE_DEVICES = {
    "GPU": {"peak_gflops": 4368.0, "memory_bandwidth": 240e9},
    "CPU": {"peak_gflops": 1324.8, "memory_bandwidth": 68e9},
}
_OTHER = {"peak_gflops": 100.0, "memory_bandwidth": 12e9}  # Grappler's own default.
COST_SCALE = 1000.0
UNLIMITED_MEMORY = 1 << 60  # bytes; memory limits are checked by the callers.


def device_performance(device: Device, reference: bool = False) -> tuple[float, float]:
    """Returns (peak GFLOPS, memory bandwidth in bytes/s) of a cluster device.

    Args:
      device: the cluster device; its `peak_gflops` / `memory_bandwidth` win
        when set (> 0), else the reference device of its type times `speed`.
      reference: if True, the reference device of that type (divides the
        device's own figures by its speed, so a K80 preset with speed 1.0 and
        an explicit peak is its own reference).
    """
    ref = REFERENCE_DEVICES.get(device.type, _OTHER)
    scale = 1.0 if reference else device.speed
    div = device.speed if reference else 1.0
    gflops = device.peak_gflops / div if device.peak_gflops > 0 else ref["peak_gflops"] * scale
    bw = device.memory_bandwidth / div if device.memory_bandwidth > 0 else ref["memory_bandwidth"] * scale
    return gflops, bw


def virtual_device(
    name: str, gflops: float, bandwidth: float, scale: float = COST_SCALE
) -> device_properties_pb2.NamedDevice:
    """A CPU-typed Grappler device `scale` times slower than the given figures.

    Args:
      name: TF device name, e.g. "/device:GPU:0".
      gflops: peak compute, 1e9 flops per second.
      bandwidth: memory bandwidth, bytes per second.
      scale: slow-down factor; divide Grappler's times by it.
    """
    props = device_properties_pb2.DeviceProperties(
        type="CPU",
        num_cores=1,
        frequency=max(int(round(gflops * 1e3 / scale)), 1),  # MHz = MFLOPS here
        memory_size=UNLIMITED_MEMORY,
        bandwidth=max(int(round(bandwidth / 1e3 / scale)), 1),  # KB/s
    )
    return device_properties_pb2.NamedDevice(name=name, properties=props)


def grappler_cluster(named: Sequence[device_properties_pb2.NamedDevice]):
    """A Grappler virtual cluster (no hardware needed) with step stats on."""
    return gcluster.Cluster(devices=list(named), disable_detailed_stats=False, disable_timeline=False)


def cost_model_cluster(device: Device):
    """A one-device virtual cluster of `device`'s reference type, COST_SCALE slower."""
    gflops, bw = device_performance(device, reference=True)
    return grappler_cluster([virtual_device(device.name, gflops, bw)])


def placed_metagraph(
    metagraph: meta_graph_pb2.MetaGraphDef, graph: OpGraph, devices: np.ndarray, device_names: Sequence[str]
) -> meta_graph_pb2.MetaGraphDef:
    """Returns a copy of `metagraph` with each node's device set from a placement.

    Args:
      metagraph: the model's MetaGraphDef.
      graph: the OpGraph extracted from it (op order of `devices`).
      devices: [n_ops] device index per op of `graph`.
      device_names: device names by index.

    Nodes missing from `graph` keep their device.
    """
    mg = meta_graph_pb2.MetaGraphDef()
    mg.CopyFrom(metagraph)
    index = graph.index()
    for node in mg.graph_def.node:
        i = index.get(node.name)
        if i is not None:
            node.device = device_names[int(devices[i])]
    return mg


def single_device_metagraph(metagraph: meta_graph_pb2.MetaGraphDef, device_name: str) -> meta_graph_pb2.MetaGraphDef:
    """Returns a copy of `metagraph` with every node on `device_name`."""
    mg = meta_graph_pb2.MetaGraphDef()
    mg.CopyFrom(metagraph)
    for node in mg.graph_def.node:
        node.device = device_name
    return mg


_DEVICE_RE = re.compile(r"(?:device:)?([A-Za-z_]+):(\d+)")


def short_device_name(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:GPU:0/stream:all' -> '/device:GPU:0'."""
    for part in name.split("/"):
        m = _DEVICE_RE.fullmatch(part)
        if m and m.group(1).lower() not in ("replica", "task", "stream", "job"):
            return f"/device:{m.group(1).upper()}:{m.group(2)}"
    return name


def colocation_violation(graph: OpGraph, devices: np.ndarray) -> str | None:
    """Returns a message if ops sharing a colocation key sit on different devices."""
    breaks = colocation.colocation_breaks(graph, devices)
    if not breaks:
        return None
    i, first = breaks[0]
    key = graph.colocation[i]
    return f"colocation: op {graph.names[i]!r} of colocation group {key!r} is on another device than the group"


class OneAtATime:
    """Base of the TF backends: measures placements one by one with `measure_devices`.

    Subclasses call `prepare(graph, cluster)` and define
    `measure_devices([n_ops] device indices) -> Measurement`.
    """

    graph: OpGraph
    cluster: Cluster

    def prepare(self, graph: OpGraph, cluster: Cluster) -> None:
        """Keeps the graph and cluster, and which op has a kernel for which device."""
        self.graph = graph
        self.cluster = cluster
        self._index = graph.index()
        types = sorted({d.type for d in cluster.devices})
        mask = extract.kernel_mask(graph, types)
        self._runnable = mask[:, [types.index(d.type) for d in cluster.devices]]  # [n, D]

    def cannot_run(self, devices: np.ndarray) -> Measurement | None:
        """The failure of a placement ([n_ops] device indices) that cannot even start, or None."""
        return cannot_run(self.graph, self.cluster.devices, self._runnable, devices)

    def measure(self, placements: Sequence) -> list:
        """Returns one Measurement per placement, in order; never raises for one that cannot run.

        Raises:
          InputError: a placement made for another graph.
        """
        out = []
        for p in placements:
            p.check_graph(self.graph)
            out.append(self.measure_devices(p.devices))
        return out


def cannot_run(graph: OpGraph, devices: Sequence[Device], runnable: np.ndarray, placed: np.ndarray):
    """The failure of a placement that cannot even start, or None.

    Args:
      graph: the op graph.
      devices: the cluster's devices.
      runnable: [n, D] bool, op has a kernel for the device's type.
      placed: [n_ops] device index per op.

    Returns:
      A failed Measurement (an op without a kernel there: UNSUPPORTED; split
      colocated ops: ERROR), or None when the placement may run.
    """
    bad = np.flatnonzero(~runnable[np.arange(graph.num_ops), placed])
    if bad.size:
        i = int(bad[0])
        dev = devices[placed[i]]
        msg = f"op {graph.names[i]!r} ({graph.types[i]}) has no {dev.type} kernel, placed on {dev.name}"
        return Measurement.failed(UNSUPPORTED, msg, len(devices))
    coloc = colocation_violation(graph, placed)
    return Measurement.failed(ERROR, coloc, len(devices)) if coloc else None


def cross_device_bytes(graph: OpGraph, devices: np.ndarray) -> float:
    """Bytes of data edges between devices, one copy per (producer, device, size)."""
    dev = np.asarray(devices)
    cross = (dev[graph.edge_src] != dev[graph.edge_dst]) & ~graph.edge_control
    sent = {
        (int(s), int(dev[d]), int(b))
        for s, d, b in zip(graph.edge_src[cross], graph.edge_dst[cross], graph.edge_bytes[cross], strict=True)
    }
    return float(sum(b for _, _, b in sent))


_BOILERPLATE = ("Graph execution error", "Detected at node", "File ", "Node:", "[[", "(most recent call last)")


def error_line(e: BaseException) -> str:
    """The informative line of a TF error message (skips the traceback part)."""
    msg = getattr(e, "message", None) or str(e)
    lines = [ln.strip() for ln in str(msg).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(_BOILERPLATE) and not ln.startswith("Detected")]
    useful = [ln for ln in useful if not ln.endswith(("in <module>", "line"))] or lines
    return (useful[0] if useful else type(e).__name__)[:500]
