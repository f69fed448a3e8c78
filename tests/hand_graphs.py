"""Hand-built graphs and clusters that several test files share; the tests work out their answers by hand.

(tests/graphs/ holds the tests of the `graphs` package, hence this name.)
"""

from __future__ import annotations

import json
import os

import numpy as np

from placer.core import cluster as cluster_lib
from placer.core.cluster import Device
from placer.core.op_graph import OpGraph

MB = 1 << 20


def two_chains(
    length: int = 3,
    *,
    edge_bytes: int = 0,
    gpu_seconds=None,
    cpu_seconds=None,
    layered: bool = False,
    colocation=None,
    name: str = "two_chains",
) -> OpGraph:
    """Chains a0 -> a1 -> ... and b0 -> b1 -> ... of `length` MatMul ops each, every output `edge_bytes` bytes.

    Args:
      length: ops per chain.
      edge_bytes: bytes of each op's output (and so of each edge).
      gpu_seconds: seconds of each op on a GPU, a number or [2 x length] in the order a0.., b0..; default 1.
      cpu_seconds: the same on a CPU; None = the graph has GPU costs only.
      layered: name the ops layer by layer (a0, b0, a1, b1, ...) instead of chain by chain.
      colocation: per-op colocation keys, in the ops' order.
      name: the graph's name.
    """
    names = (
        [f"{c}{i}" for i in range(length) for c in "ab"]
        if layered
        else [f"{c}{i}" for c in "ab" for i in range(length)]
    )
    n = len(names)
    edges = [(f"{c}{i}", f"{c}{i + 1}", edge_bytes) for c in "ab" for i in range(length - 1)]
    per_op = {f"{c}{i}": k for k, (c, i) in enumerate((c, i) for c in "ab" for i in range(length))}
    order = [per_op[x] for x in names]  # the chain-by-chain index of each op, in `names`' order
    gpu = np.broadcast_to(np.asarray(1.0 if gpu_seconds is None else gpu_seconds, dtype=float), (n,))[order]
    costs, types = [gpu], ["GPU"]
    if cpu_seconds is not None:
        costs, types = [np.broadcast_to(np.asarray(cpu_seconds, dtype=float), (n,))[order], gpu], ["CPU", "GPU"]
    return OpGraph.create(
        name,
        names,
        ["MatMul"] * n,
        edges,
        output_bytes=[edge_bytes] * n,
        device_types=types,
        compute_cost=np.stack(costs, axis=1),
        colocation=colocation,
    )


def chains(k: int, n: int, edge_bytes: int = 100) -> OpGraph:
    """`k` independent chains of `n` ops each, 1 s per op on a GPU, every edge `edge_bytes` bytes; ops c0_0,
    c0_1, ..., numbered chain by chain."""
    names = [f"c{c}_{i}" for c in range(k) for i in range(n)]
    edges = [(f"c{c}_{i}", f"c{c}_{i + 1}", edge_bytes) for c in range(k) for i in range(n - 1)]
    return OpGraph.create(
        "chains", names, ["T"] * len(names), edges, device_types=("GPU",), compute_cost=np.ones((len(names), 1))
    )


def parts_graph(n: int = 12) -> OpGraph:
    """n independent ops costing 1, 2, ..., n s on a GPU and 100x that on the CPU, no edges."""
    costs = np.arange(1, n + 1, dtype=float)
    return OpGraph.create(
        f"parts{n}",
        [f"op{i}" for i in range(n)],
        ["Op"] * n,
        [],
        device_types=("CPU", "GPU"),
        compute_cost=np.stack([100 * costs, costs], axis=1),
    )


def cpu_and_gpus(gpus: int = 3) -> cluster_lib.Cluster:
    """A CPU (device 0) and `gpus` GPUs of 10 GB each, linked at 1 GB/s with no latency."""
    devs = [Device("/device:CPU:0", "CPU", 10**10)] + [Device(f"/device:GPU:{i}", "GPU", 10**10) for i in range(gpus)]
    return cluster_lib.make("cpu_gpus", devs, bandwidth=1e9, latency=0.0)


def gpu_cluster(count: int = 2, memory_bytes: int = 16 << 30, name: str = "two_gpus") -> cluster_lib.Cluster:
    """`count` GPUs of `memory_bytes` each, linked at 100 MB/s with no latency."""
    gpus = [Device(f"/device:GPU:{i}", "GPU", memory_bytes) for i in range(count)]
    return cluster_lib.make(name, gpus, bandwidth=100 * MB, latency=0.0)


def write_gpu_cluster(path, name: str, memory_bytes: int = 16 << 30, count: int = 2) -> None:
    """Writes `gpu_cluster`'s cluster as a cluster JSON file."""
    spec = {
        "name": name,
        "devices": [{"name": f"/device:GPU:{i}", "type": "GPU", "memory_bytes": memory_bytes} for i in range(count)],
        "links": {"default": {"bandwidth": 100 * MB, "latency": 0.0}},
    }
    with open(path, "w") as f:
        json.dump(spec, f)


def write_chains_and_gpus(folder) -> None:
    """Writes `chains_and_gpus`' graph (g.graph.json) and a cluster of two 16 GiB GPUs (gpus.json) into `folder`."""
    from placer.core import io as graph_io  # noqa: PLC0415

    graph_io.save(two_chains(edge_bytes=100 * MB, gpu_seconds=np.ones(6)), os.path.join(str(folder), "g.graph.json"))
    write_gpu_cluster(os.path.join(str(folder), "gpus.json"), "gpus", 16 << 30)


def chains_and_gpus(length: int = 3) -> tuple[OpGraph, cluster_lib.Cluster]:
    """`two_chains` of 1 s ops whose 100 MB edges take 1 s to cross devices, and two GPUs.

    Best placement: one chain per GPU, step time `length` s; both on one GPU
    take 2 x length s; any chain cut across devices pays a 1 s transfer.
    """
    return two_chains(length, edge_bytes=100 * MB), gpu_cluster()
