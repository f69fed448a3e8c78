"""Small hand-built graphs and clusters for the baseline tests."""

from __future__ import annotations

import numpy as np

from placer.core import cluster as cluster_lib
from placer.core.cluster import Device
from placer.core.op_graph import OpGraph

GB = 10**9


def make_cluster(gpus: int = 2, *, memory: int = GB, cpu: bool = True, bandwidth: float = 1e9, latency: float = 0.0):
    """A CPU (device 0, if `cpu`) and `gpus` GPUs, one uniform link."""
    devs = [Device("/device:CPU:0", "CPU", 10 * GB)] if cpu else []
    devs += [Device(f"/device:GPU:{i}", "GPU", memory) for i in range(gpus)]
    return cluster_lib.make("test", devs, bandwidth=bandwidth, latency=latency)


def make_graph(ops, edges, *, cpu=None, gpu=None, colocation=None, output_bytes=None, persistent_bytes=None, name="g"):
    """Ops named in `ops`; costs default to CPU 10 s and GPU 1 s per op."""
    n = len(ops)
    cpu = np.full(n, 10.0) if cpu is None else np.asarray(cpu, dtype=float)
    gpu = np.full(n, 1.0) if gpu is None else np.asarray(gpu, dtype=float)
    return OpGraph.create(
        name,
        list(ops),
        ["Op"] * n,
        edges,
        device_types=("CPU", "GPU"),
        compute_cost=np.stack([cpu, gpu], axis=1),
        colocation=colocation,
        output_bytes=output_bytes,
        persistent_bytes=persistent_bytes,
    )


def check_legal(placement, graph, cluster):
    """Every op placed in range, no op without a kernel, colocated ops together."""
    dev = np.asarray(placement.devices)
    assert dev.shape == (graph.num_ops,)
    assert dev.min() >= 0 and dev.max() < cluster.num_devices
    types = [cluster.devices[d].type for d in dev]
    for i, t in enumerate(types):
        assert not np.isnan(graph.cost_for(t)[i]), graph.names[i]
    for key in set(graph.colocation) - {""}:
        assert len(set(dev[graph.colocation == key])) == 1, key
