"""Two chains of three MatMul ops on a cluster of GPUs: the hand-built inputs of the placer-train tests."""

import json

import numpy as np

from placer.core.op_graph import OpGraph

MB = 1 << 20


def two_chains(edge_bytes: int, costs) -> OpGraph:
    """Chains a0 -> a1 -> a2 and b0 -> b1 -> b2, every output and edge `edge_bytes` bytes.

    Args:
      edge_bytes: bytes of each op's output.
      costs: [6] seconds of each op on a GPU, in the order a0..a2, b0..b2.
    """
    names = [f"{c}{i}" for c in "ab" for i in range(3)]
    edges = [(f"{c}{i}", f"{c}{i + 1}", edge_bytes) for c in "ab" for i in range(2)]
    return OpGraph.create(
        "two_chains",
        names,
        ["MatMul"] * 6,
        edges,
        output_bytes=[edge_bytes] * 6,
        device_types=["GPU"],
        compute_cost=np.asarray(costs, dtype=float).reshape(6, 1),
    )


def write_gpu_cluster(path, name: str, memory_bytes: int = 16 << 30, count: int = 2) -> None:
    """Writes a cluster JSON of `count` GPUs of `memory_bytes` each, linked at 100 MB/s with no latency."""
    spec = {
        "name": name,
        "devices": [{"name": f"/device:GPU:{i}", "type": "GPU", "memory_bytes": memory_bytes} for i in range(count)],
        "links": {"default": {"bandwidth": 100 * MB, "latency": 0.0}},
    }
    with open(path, "w") as f:
        json.dump(spec, f)
