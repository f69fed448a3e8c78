"""Generated training graphs for pretraining a placement policy (no TensorFlow).

Three families of random DAGs, each returned as a cost-annotated `OpGraph`:

- "layered": ops in layers, each op fed by 1 to 3 ops of the layer before
  (the shape of a feed-forward network, forward pass only);
- "chain": a few long chains of ops with sparse cross links between them (the
  shape of an unrolled RNN, one chain per layer);
- "fanin": many independent branches that are summed into one op, then a
  short tail (the shape of an Inception block or an ensemble).

`layered_graph` builds the large layered DAGs of bench/baselines.py and
bench/large_graph.py (fixed width and fan-in, CPU-only ops and colocation
sets), on which the baselines and binaries are timed.

Costs are drawn the way the extracted model graphs spread them: per-op GPU
time log-normal around 40 us with a heavy tail (a few ops dominate, as
MatMul and Conv2D do in NMT and Inception-V3), CPU time 2 to 20 times the GPU
time for heavy ops and about equal for light ones, output bytes log-normal
around 256 KiB.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

# Op types of heavy (compute-bound) and light (memory-bound) ops.
HEAVY_TYPES = ("MatMul", "Conv2D", "BatchMatMulV2")
LIGHT_TYPES = ("Add", "Relu", "Tanh", "Sigmoid", "Mul", "ConcatV2", "Identity")
HEAVY_SHARE = 0.3  # share of heavy ops (our choice; NMT has about 25% MatMul-like ops by cost)


def _costs(rng: np.random.Generator, n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per op: types, [n, 2] (CPU, GPU) seconds, [n] output bytes."""
    heavy = rng.random(n) < HEAVY_SHARE
    types = [
        str(rng.choice(HEAVY_TYPES)) if h else str(rng.choice(LIGHT_TYPES))
        for h in heavy  # one draw per op keeps a graph a pure function of its seed
    ]
    gpu = np.where(heavy, rng.lognormal(np.log(200e-6), 1.0, n), rng.lognormal(np.log(15e-6), 0.7, n))
    ratio = np.where(heavy, rng.uniform(2.0, 20.0, n), rng.uniform(0.7, 1.5, n))
    out_bytes = rng.lognormal(np.log(256 * 1024), 1.2, n).astype(np.int64)
    return types, np.stack([gpu * ratio, gpu], axis=1), out_bytes


def _layered(rng: np.random.Generator, n: int) -> list[tuple[int, int]]:
    width = max(2, int(rng.integers(2, 6)))
    edges = []
    for i in range(width, n):
        lo = (i // width - 1) * width
        for p in rng.choice(np.arange(lo, lo + width), size=min(width, int(rng.integers(1, 4))), replace=False):
            edges.append((int(p), i))
    return edges


def _chain(rng: np.random.Generator, n: int) -> list[tuple[int, int]]:
    chains = int(rng.integers(2, 5))
    edges = []
    for i in range(chains, n):
        edges.append((i - chains, i))  # along its chain
        if i % chains and rng.random() < 0.3:  # to the next chain's op at the same position
            edges.append((i - 1, i))
    return edges


def _fanin(rng: np.random.Generator, n: int) -> list[tuple[int, int]]:
    tail = max(2, n // 8)
    branches = int(rng.integers(3, 9))
    body = n - tail - 1
    edges = [(i - branches, i) for i in range(branches, body)]
    join = body
    edges += [(i, join) for i in range(max(0, body - branches), body)]
    edges += [(i - 1, i) for i in range(join + 1, n)]
    return edges


FAMILIES: dict[str, Callable[[np.random.Generator, int], list[tuple[int, int]]]] = {
    "layered": _layered,
    "chain": _chain,
    "fanin": _fanin,
}


def generate(family: str, num_ops: int, seed: int) -> OpGraph:
    """A random graph of `family` with `num_ops` ops, a pure function of its arguments.

    Args:
      family: one of FAMILIES ("layered", "chain", "fanin").
      num_ops: number of ops, at least 8.
      seed: RNG seed.

    Returns:
      OpGraph named "{family}-{num_ops}-s{seed}", costs for "CPU" and "GPU".

    Raises:
      InputError: unknown family or too few ops.
    """
    if family not in FAMILIES:
        raise InputError(f"unknown generated graph family {family!r} (valid: {', '.join(FAMILIES)})")
    if num_ops < 8:
        raise InputError(f"generated graph {family}: num_ops must be at least 8, got {num_ops}")
    rng = np.random.default_rng([seed, num_ops, list(FAMILIES).index(family)])
    edges = FAMILIES[family](rng, num_ops)
    types, cost, out_bytes = _costs(rng, num_ops)
    names = [f"op{i}" for i in range(num_ops)]
    return OpGraph.create(
        f"{family}-{num_ops}-s{seed}",
        names,
        types,
        [(names[a], names[b], int(out_bytes[a])) for a, b in edges],
        output_shapes=[((int(b) // 4,),) for b in out_bytes],
        output_bytes=out_bytes,
        device_types=("CPU", "GPU"),
        compute_cost=cost,
        source=f"generated:{family}",
    )


def parse_spec(spec: str) -> OpGraph:
    """The graph named by "gen:FAMILY:OPS:SEED", e.g. "gen:layered:60:3".

    Raises:
      InputError: a malformed spec (the message shows the expected form).
    """
    parts = spec.split(":")
    if len(parts) != 4 or parts[0] != "gen" or not parts[2].isdigit() or not parts[3].isdigit():
        raise InputError(f"graph spec {spec!r}: expected gen:FAMILY:OPS:SEED, e.g. gen:layered:60:3")
    return generate(parts[1], int(parts[2]), int(parts[3]))


def layered_graph(
    n: int, width: int = 100, fan_in: int = 2, seed: int = 0, local_colocation: bool = False, cpu_only: float = 0.02
) -> OpGraph:
    """A random layered DAG: `width` ops per layer, each fed by `fan_in` ops of the layer before.

    GPU costs uniform in [10 us, 1 ms], CPU 5-20x slower, a share `cpu_only` of
    ops (2% by default) CPU-only, spread uniformly over the graph,
    5% in 50 colocation sets, outputs and variables up to 1 MB, edges 1 kB-1 MB.
    With `local_colocation`, the colocated 5% form pairs of neighbours in one
    layer instead (as TF colocates a variable with its read op), rather than
    50 sets spread over the whole graph, each of which ties ops of every
    layer to one device.
    """
    rng = np.random.default_rng(seed)
    names = [f"op{i}" for i in range(n)]
    edges = []
    for i in range(width, n):
        lo = (i // width - 1) * width
        for j in rng.choice(width, size=fan_in, replace=False):
            edges.append((names[lo + j], names[i], int(rng.integers(1000, 10**6))))
    gpu = rng.uniform(1e-5, 1e-3, n)
    cpu = gpu * rng.uniform(5, 20, n)
    gpu[rng.random(n) < cpu_only] = np.nan  # one draw per op whatever the share: the rest stays the same
    coloc = [f"set{rng.integers(50)}" if rng.random() < 0.05 else "" for _ in range(n)]
    if local_colocation:
        coloc = [""] * n
        for k, i in enumerate(np.random.default_rng(seed + 1).choice(n // 2, size=n // 40, replace=False)):
            coloc[2 * i] = coloc[2 * i + 1] = f"pair{k}"
    return OpGraph.create(
        f"layered{n}",
        names,
        ["Op"] * n,
        edges,
        device_types=("CPU", "GPU"),
        compute_cost=np.stack([cpu, gpu], axis=1),
        colocation=coloc,
        output_bytes=rng.integers(1000, 10**6, n),
        persistent_bytes=rng.integers(0, 10**6, n),
    )
