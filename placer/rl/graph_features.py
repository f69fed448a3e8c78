"""Inputs of the graph policy whose layout does not depend on the graph or the cluster (no TensorFlow).

A policy trained on some graphs and clusters can read any other graph and
cluster only if every input column means the same thing everywhere. So no
column holds an op name, a vocabulary id learnt from one graph, or a group or
device index: op types go into a fixed number of hashed buckets (CRC-32 of
the type string), sizes and times are log-scaled with fixed divisors, and
positions are fractions of the whole.

Shapes: G groups, E group edges, D devices.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np

from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

VERSION = 1
TYPE_BUCKETS = 16  # hashed op-type buckets; 16 keep the common TF op types mostly apart (our choice)
COST_TYPES = ("CPU", "GPU")  # cost columns the policy reads, in this order
GROUP_COLUMNS = (
    "log_cpu_us",  # log1p(group's CPU time, us) / 10
    "log_gpu_us",  # log1p(group's GPU time, us) / 10
    "gpu_share",  # group's share of the graph's total GPU time
    "cpu_only",  # share of the group's ops without a GPU kernel
    "log_output_bytes",  # log1p(output bytes) / 25
    "log_persistent_bytes",  # log1p(variable bytes) / 25
    "log_num_ops",  # log1p(ops) / 5
    "position",  # group index / (G - 1): where it sits in topological order
    "log_in_degree",  # log1p(producer groups) / 3
    "log_out_degree",  # log1p(consumer groups) / 3
)
DEVICE_COLUMNS = (
    "is_cpu",
    "is_gpu",
    "log_speed",  # log(relative speed)
    "log_memory_gib",  # log1p(memory, GiB) / 5
    "log_bandwidth",  # log10(mean outgoing link bandwidth, GB/s) / 2
    "log_latency_us",  # log1p(mean outgoing link latency, us) / 5
    "ordinal",  # index among the devices of its type / max(1, count - 1)
    "type_count",  # devices of its type / 8
)


def layout() -> dict:
    """The feature layout a saved policy records; a policy reads only graphs built with the same one."""
    return {
        "version": VERSION,
        "type_buckets": TYPE_BUCKETS,
        "type_hash": "crc32",
        "cost_types": list(COST_TYPES),
        "group_columns": list(GROUP_COLUMNS),
        "device_columns": list(DEVICE_COLUMNS),
        "edge_columns": ["log_bytes"],
    }


def group_width() -> int:
    """F: width of a group's feature row."""
    return TYPE_BUCKETS + len(GROUP_COLUMNS)


@dataclasses.dataclass(frozen=True)
class GraphInputs:
    """What the graph policy reads for one graph on one cluster.

    Attributes:
      groups: [G, F] float32 group features (type buckets, then GROUP_COLUMNS).
      edge_src, edge_dst: [E] int32 producer and consumer group of each edge.
      edges: [E, 1] float32 log1p(bytes) / 25.
      devices: [D, len(DEVICE_COLUMNS)] float32 device features.
    """

    groups: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edges: np.ndarray
    devices: np.ndarray


def check_graph(graph: OpGraph, source: str) -> None:
    """Refuses a graph whose costs the policy cannot read.

    Raises:
      InputError: one line naming `source` and the missing cost column.
    """
    for t in COST_TYPES:
        if t not in graph.device_types:
            have = ", ".join(graph.device_types) or "none"
            raise InputError(
                f"{source}: graph {graph.name!r} has no {t} costs (has: {have}); the policy's features need "
                f"{' and '.join(COST_TYPES)} op costs"
            )


def type_bucket(op_type: str) -> int:
    """The hashed bucket of an op type (stable across runs and machines)."""
    return zlib.crc32(op_type.encode()) % TYPE_BUCKETS


def group_features(graph: OpGraph, op_group: np.ndarray, edge_src: np.ndarray, edge_dst: np.ndarray) -> np.ndarray:
    """[G, F] float32 group features; see GROUP_COLUMNS (the graph must pass `check_graph`)."""
    g = np.asarray(op_group, np.int64)
    num = int(g.max()) + 1 if len(g) else 0
    buckets = np.fromiter((type_bucket(t) for t in graph.types), np.int64, count=graph.num_ops)
    share = np.zeros((num, TYPE_BUCKETS))
    np.add.at(share, (g, buckets), 1.0)
    nops = share.sum(axis=1)
    share /= np.maximum(nops, 1)[:, None]
    cpu = graph.cost_for("CPU")
    gpu = graph.cost_for("GPU")
    cpu_t = np.bincount(g, weights=np.nan_to_num(cpu), minlength=num)
    gpu_t = np.bincount(g, weights=np.nan_to_num(gpu), minlength=num)
    no_gpu = np.bincount(g, weights=np.isnan(gpu).astype(float), minlength=num) / np.maximum(nops, 1)
    obytes = np.bincount(g, weights=graph.output_bytes.astype(float), minlength=num)
    pbytes = np.bincount(g, weights=graph.persistent_bytes.astype(float), minlength=num)
    cols = [
        np.log1p(cpu_t * 1e6) / 10,
        np.log1p(gpu_t * 1e6) / 10,
        gpu_t / max(gpu_t.sum(), 1e-12),
        no_gpu,
        np.log1p(obytes) / 25,
        np.log1p(pbytes) / 25,
        np.log1p(nops) / 5,
        np.arange(num) / max(1, num - 1),
        np.log1p(np.bincount(edge_dst, minlength=num)) / 3,
        np.log1p(np.bincount(edge_src, minlength=num)) / 3,
    ]
    return np.concatenate([share, np.stack(cols, axis=1)], axis=1).astype(np.float32)


def device_features(cluster: Cluster) -> np.ndarray:
    """[D, len(DEVICE_COLUMNS)] float32 device features of `cluster`."""
    d = cluster.num_devices
    off = ~np.eye(d, dtype=bool)
    rows = []
    for i, dev in enumerate(cluster.devices):
        same = cluster.indices_of_type(dev.type)
        bw = float(cluster.bandwidth[i][off[i]].mean()) if d > 1 else 1e10
        lat = float(cluster.latency[i][off[i]].mean()) if d > 1 else 0.0
        rows.append(
            [
                float(dev.type == "CPU"),
                float(dev.type == "GPU"),
                np.log(max(dev.speed, 1e-6)),
                np.log1p(dev.memory_bytes / 2**30) / 5,
                np.log10(max(bw, 1.0) / 1e9) / 2,
                np.log1p(lat * 1e6) / 5,
                same.index(i) / max(1, len(same) - 1),
                len(same) / 8,
            ]
        )
    return np.asarray(rows, np.float32)


def inputs(graph: OpGraph, op_group, edge_src, edge_dst, edge_bytes, cluster: Cluster, source: str) -> GraphInputs:
    """Every input of the graph policy for a grouped graph on a cluster.

    Raises:
      InputError: the graph lacks a cost column the features need (see `check_graph`).
    """
    check_graph(graph, source)
    src = np.asarray(edge_src, np.int32)
    dst = np.asarray(edge_dst, np.int32)
    return GraphInputs(
        groups=group_features(graph, op_group, src, dst),
        edge_src=src,
        edge_dst=dst,
        edges=(np.log1p(np.asarray(edge_bytes, np.float64)) / 25).astype(np.float32)[:, None],
        devices=device_features(cluster),
    )


def check_layout(saved: dict, source: str) -> None:
    """Refuses a saved policy whose feature layout differs from the one this code builds.

    Raises:
      InputError: one line naming `source` and the first field that differs.
    """
    mine = layout()
    for key, value in mine.items():
        if saved.get(key) != value:
            raise InputError(
                f"{source}: the policy reads feature layout {key}={saved.get(key)!r}, this toolkit builds {value!r}"
            )
