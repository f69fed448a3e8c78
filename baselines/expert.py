"""Human-expert placement, the hand-written baseline of Mirhoseini et al. 2017.

Section 4 of the paper describes the experts' rules: for RNNLM and NMT, each
LSTM layer on its own GPU (as Sutskever et al. 2014 and Wu et al. 2016 do),
NMT's attention and softmax on the GPU of the last layer, the embeddings on
the GPU of the first layer; Inception-V3 whole on one GPU. Ops are matched by
the name scopes the builders in models/ use (no TensorFlow here):

  rnn|encoder|decoder/layer_<i>/...           GPU of layer i ("layer")
  input/, embedding/, */embedding/            GPU of layer 0 ("first")
  attention/, softmax/, loss/                 GPU of the last layer ("last")
  gradients/<op>_grad/...                     with <op> ("gradient")
  <Optimizer>/update_<variable>/...           with the variable ("update")

Encoder layer i and decoder layer i share GPU i, as in GNMT. With more
layers than GPUs, layers go to GPUs in contiguous blocks (layer i on GPU
i * G // L), which keeps neighbouring layers together; `wrap="round_robin"`
puts layer i on GPU i mod G instead.

The documented catch-all: an op no name rule covers (a gradient sum
`gradients/AddN_3`, an optimizer's learning-rate constant, a NoOp grouping
updates) takes the device of a neighbour: gradient ops that of their first
consumer (the aggregated gradient feeds its forward op's gradient), other
ops that of their first producer, else any data neighbour, else a control
neighbour ("neighbour"). Only an op with no neighbour at all falls to the
first GPU ("default").

Two constraints override the rules: an op with no GPU kernel (NaN GPU cost
and a known CPU cost, when costs are attached) goes to the first CPU
("cpu"), and ops sharing a colocation key share the device of the key's
owner op, or the CPU if any of them must run there ("colocation").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from baselines import common
from placer.core import op_names
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

LAYERED_MODELS = ("nmt", "rnnlm")
SINGLE_GPU_MODELS = ("inception_v3",)

_LAYER = re.compile(r"^(?:rnn|encoder|decoder)/layer_(\d+)(?:/|$)")
_FIRST = re.compile(r"^(?:input|embedding|encoder/embedding|decoder/embedding)(?:/|$)")
_LAST = re.compile(r"^(?:attention|softmax|loss)(?:/|$)")
_GRADIENT = op_names.GRADIENT_SCOPE

RULES = ("layer", "first", "last", "single_gpu", "gradient", "update", "neighbour", "default", "cpu", "colocation")


def layer_gpus(num_layers: int, num_gpus: int, wrap: str = "blocks") -> list[int]:
    """Returns the GPU (0-based among the GPUs) of each layer.

    Args:
      num_layers: L layers.
      num_gpus: G GPUs.
      wrap: with L > G, "blocks" (layer i on GPU i * G // L) or
        "round_robin" (layer i on GPU i mod G). With L <= G, layer i is on GPU i.
    """
    if wrap not in ("blocks", "round_robin"):
        raise InputError(f"expert option wrap: unknown value {wrap!r} (valid: blocks, round_robin)")
    if num_layers <= num_gpus:
        return list(range(num_layers))
    if wrap == "round_robin":
        return [i % num_gpus for i in range(num_layers)]
    return [i * num_gpus // num_layers for i in range(num_layers)]


def _scope_rule(name: str, layer_gpu: Sequence[int]) -> tuple[int, str] | None:
    """Returns (GPU ordinal, rule) from the name scope, or None."""
    m = _LAYER.match(name)
    if m:
        return layer_gpu[min(int(m.group(1)), len(layer_gpu) - 1)], "layer"
    if _FIRST.match(name):
        return layer_gpu[0], "first"
    if _LAST.match(name):
        return layer_gpu[-1], "last"
    return None


def _links(graph: OpGraph) -> np.ndarray:
    """Returns [n] the op each op follows (gradient -> forward op, update -> variable), or -1."""
    index = graph.index()
    link = [op_names.forward_op_for(name, index) for name in graph.names.tolist()]
    return np.array([-1 if j is None else j for j in link], dtype=np.int64)


def _neighbours(graph: OpGraph, control: bool) -> tuple[list[list[int]], list[list[int]]]:
    """Returns per op its producers and consumers over data (or control) edges."""
    preds: list[list[int]] = [[] for _ in range(graph.num_ops)]
    succs: list[list[int]] = [[] for _ in range(graph.num_ops)]
    for s, d, c in zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_control.tolist(), strict=True):
        if c == control:
            preds[d].append(s)
            succs[s].append(d)
    return preds, succs


def _propagate(graph: OpGraph, dev: np.ndarray, rule: list[str], link: np.ndarray) -> None:
    """Resolves ops no name rule covered: links first, then neighbours (in place)."""
    is_grad = np.array([bool(_GRADIENT.match(n)) for n in graph.names])
    data = _neighbours(graph, control=False)
    ctrl = _neighbours(graph, control=True)
    order = range(graph.num_ops)

    def first_placed(cands):
        for j in cands:
            if dev[j] >= 0:
                return int(dev[j])
        return -1

    changed = True
    while changed:
        changed = False
        for i in order:
            if dev[i] < 0 and link[i] >= 0 and dev[link[i]] >= 0:
                dev[i] = dev[link[i]]
                rule[i] = "gradient" if is_grad[i] else "update"
                changed = True
        for i in order:  # producers first for forward ops, in topological order
            if dev[i] < 0 and link[i] < 0 and not is_grad[i]:
                d = first_placed(data[0][i])
                if d >= 0:
                    dev[i], rule[i], changed = d, "neighbour", True
        for i in reversed(order):  # consumers first for gradient ops, in reverse order
            if dev[i] < 0 and link[i] < 0 and is_grad[i]:
                d = first_placed(data[1][i])
                if d >= 0:
                    dev[i], rule[i], changed = d, "neighbour", True
        if changed:
            continue
        for i in order:  # any neighbour, data then control, for what is left (links included)
            if dev[i] < 0:
                for cands in (data[0][i], data[1][i], ctrl[0][i], ctrl[1][i]):
                    d = first_placed(cands)
                    if d >= 0:
                        dev[i], rule[i], changed = d, "neighbour", True
                        break


def assign(graph: OpGraph, cluster: Cluster, *, wrap: str = "blocks") -> tuple[np.ndarray, list[str]]:
    """Computes the expert placement and the rule that placed each op.

    Args:
      graph: an op graph named "rnnlm", "nmt" or "inception_v3".
      cluster: the target devices; needs at least one GPU.
      wrap: how layers share GPUs when there are more layers than GPUs
        ("blocks" or "round_robin"; see the module docstring).

    Returns:
      ([n] device index per op, [n] rule name per op, one of RULES).

    Raises:
      InputError: a graph with no expert rules, or a cluster with no GPU.
    """
    if graph.name not in LAYERED_MODELS + SINGLE_GPU_MODELS:
        raise InputError(f"no expert placement for this graph: {graph.name}")
    gpus = cluster.indices_of_type("GPU")
    if not gpus:
        raise InputError(f"expert placement needs a GPU, but cluster {cluster.name!r} has none")
    n = graph.num_ops
    ordinal = np.full(n, -1, dtype=np.int64)  # GPU ordinal among `gpus`
    rule = ["default"] * n
    if graph.name in SINGLE_GPU_MODELS:
        ordinal[:] = 0
        rule = ["single_gpu"] * n
    else:
        layers = [int(m.group(1)) for m in map(_LAYER.match, graph.names) if m]
        for name in graph.names:  # gradient ops name their layer after the prefix
            g = _GRADIENT.match(name)
            m = _LAYER.match(name[g.end() :]) if g else None
            if m:
                layers.append(int(m.group(1)))
        layer_gpu = layer_gpus(max(layers, default=0) + 1, len(gpus), wrap)
        link = _links(graph)
        for i, name in enumerate(graph.names):
            if link[i] >= 0:
                continue
            g = _GRADIENT.match(name)
            hit = _scope_rule(name[g.end() :] if g else name, layer_gpu)
            if hit is not None:
                ordinal[i], rule[i] = hit
        _propagate(graph, ordinal, rule, link)
        ordinal[ordinal < 0] = 0  # "default": an op with no neighbour at all
    dev = np.asarray(gpus, dtype=np.int64)[ordinal]
    _apply_constraints(graph, cluster, dev, rule)
    return dev, rule


def _apply_constraints(graph: OpGraph, cluster: Cluster, dev: np.ndarray, rule: list[str]) -> None:
    """Moves ops without a GPU kernel to the CPU and unites colocation groups (in place)."""
    cpus = cluster.indices_of_type("CPU")
    cpu_only = np.zeros(graph.num_ops, dtype=bool)
    if cpus and "GPU" in graph.device_types:
        cpu_cost = graph.cost_for("CPU")
        cpu_only = np.isnan(graph.cost_for("GPU")) & ~np.isnan(cpu_cost)
        for i in np.flatnonzero(cpu_only):
            dev[i], rule[i] = cpus[0], "cpu"
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(graph.colocation):
        if key:
            groups.setdefault(key, []).append(i)
    index = graph.index()
    for key, members in groups.items():
        if len(members) < 2 and index.get(key, members[0]) == members[0]:
            continue
        owner = index.get(key, members[0])
        target = cpus[0] if cpu_only[members].any() else dev[owner]
        for i in members + ([owner] if owner not in members else []):
            if dev[i] != target:
                dev[i], rule[i] = target, "colocation"


def place(graph: OpGraph, cluster: Cluster, *, seed: int | None = None, **options) -> Placement:
    """Places `graph` on `cluster` by the human experts' rules.

    Args:
      graph: an op graph named "rnnlm", "nmt" or "inception_v3".
      cluster: the target devices; needs at least one GPU.
      seed: unused (the rules are deterministic); kept for the common signature.
      **options: `wrap` ("blocks" or "round_robin").

    Returns:
      The Placement, metadata method="expert" and the number of ops per rule.

    Raises:
      InputError: a graph with no expert rules, a cluster with no GPU, or an
        unknown option.
    """
    del seed
    common.refuse_options("expert", {k: v for k, v in options.items() if k != "wrap"}, ("wrap",))
    dev, rule = assign(graph, cluster, **options)
    counts = {r: rule.count(r) for r in RULES if r in rule}
    return Placement.from_ops(graph, dev, cluster.device_names, method="expert", cluster=cluster.name, rules=counts)
