"""Loading placements into TensorFlow: validate, retarget, set devices.

Three lines put a learned placement on a model built in graph mode:

    p = Placement.load("best.placement.json")
    with tf.Graph().as_default(), tf.compat.v1.device(apply.device_fn(p)):
        build_model()

or, for a model already built (a MetaGraphDef or GraphDef),
`apply_to_graph_def(p, metagraph)` returns a copy with every node's device
set. `validate` checks a placement against the graph and this machine first;
`parse_device_map` retargets a placement learned for another cluster (the
paper's 4-GPU K80 machine) onto the local devices.

TensorFlow's placer moves one kind of op on its own, whatever the placement
says and even with soft placement off: an op that takes a resource handle
(ReadVariableOp, ResourceGather, ResourceApply*, ...) runs on the device of
the op that made the handle (the variable), because a resource lives on one
device (TF's colocation_graph.cc, ColocateResourceAndRefEdges). Extraction
gives such ops the variable's colocation key, so `validate` rejects a
placement that splits them (with the TF graph it names the resource).
Placements made from graphs extracted before that rule (same fingerprint,
no such keys) may split them: `resource_followers` predicts TF's moves and
`follow_resources` returns the placement TF will actually run, which
`validate` accepts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import meta_graph_pb2

from graphs import extract, tf_util
from placer.core import colocation
from placer.core.disjoint import DisjointSets
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

__all__ = [
    "DeviceFunction",
    "apply_to_graph_def",
    "device_fn",
    "follow_resources",
    "op_devices",
    "parse_device_map",
    "remap",
    "validate",
]

SHOW = 5  # offenders named in an error message.
# Ops TF does not colocate with a resource input: function calls, which
# forward the handle to ops placed inside the function.
RESOURCE_EXEMPT = frozenset({"PartitionedCall", "StatefulPartitionedCall"})


def _names(items: Sequence[str], n: int = SHOW) -> str:
    shown = ", ".join(repr(x) for x in list(items)[:n])
    more = len(items) - n
    return shown + (f" and {more} more" if more > 0 else "")


def device_name(name: str) -> str:
    """Normalises a device name: 'gpu:0', '/GPU:0', '/job:x/.../device:GPU:0' -> '/device:GPU:0'."""
    short = tf_util.short_device_name(name.strip())
    if short.startswith("/device:"):
        return short
    return tf_util.short_device_name("/device:" + name.strip().lstrip("/"))


def device_type(name: str) -> str:
    """'/device:GPU:1' -> 'GPU'."""
    return device_name(name).split(":")[-2]


def parse_device_map(spec: str | None, known: Sequence[str] | None = None) -> dict[str, str]:
    """Parses "/device:GPU:0=/device:CPU:1,/device:GPU:1=/device:CPU:2".

    Args:
      spec: comma-separated `source=target` pairs; None or "" = no map.
      known: if given, the devices a source may name (the placement's).

    Returns:
      Normalised source device name -> target device name.

    Raises:
      InputError: an entry without "=", a source given twice, or sources not
        in `known` (all of them named).
    """
    out: dict[str, str] = {}
    for entry in (spec or "").split(","):
        if not entry.strip():
            continue
        src, eq, dst = entry.partition("=")
        if not eq or not src.strip() or not dst.strip():
            raise InputError(f"--device_map: entry {entry.strip()!r} is not SOURCE=TARGET")
        src, dst = device_name(src), device_name(dst)
        if src in out:
            raise InputError(f"--device_map: source device {src!r} is mapped twice")
        out[src] = dst
    if known is not None:
        names = {device_name(k) for k in known}
        unknown = [s for s in out if s not in names]
        if unknown:
            raise InputError(
                f"--device_map: unknown source devices {_names(unknown)} "
                f"(the placement's devices: {', '.join(sorted(names))})"
            )
    return out


def remap(placement: Placement, device_map: dict[str, str] | None) -> Placement:
    """Returns the placement with its devices renamed through `device_map`.

    Devices the map does not name keep their (normalised) name; several
    sources mapped onto one target become one device.
    """
    mapped = [device_name(n) for n in placement.device_names]
    mapped = [(device_map or {}).get(n, n) for n in mapped]
    names = list(dict.fromkeys(mapped))
    pos = np.array([names.index(n) for n in mapped], dtype=np.int32)
    meta = dict(placement.metadata)
    if device_map:
        meta["device_map"] = dict(device_map)
    return dataclasses.replace(placement, devices=pos[placement.devices], device_names=tuple(names), metadata=meta)


def op_devices(placement: Placement, device_map: dict[str, str] | None = None) -> dict[str, str]:
    """Returns op name -> device name, after the device map."""
    p = remap(placement, device_map)
    return {op: p.device_names[d] for op, d in zip(p.op_names, p.devices, strict=True)}


def validate(
    placement: Placement,
    graph: OpGraph,
    available_devices: Sequence[str],
    *,
    device_map: dict[str, str] | None = None,
    source: str = "placement",
    tf_graph: tf.Graph | None = None,
) -> None:
    """Checks that `placement` can run `graph` on this machine.

    Args:
      placement: the placement (its device names as learned).
      graph: the OpGraph of the model to run.
      available_devices: device names this machine has.
      device_map: placement device -> local device, applied first.
      source: the placement's file name, for messages.
      tf_graph: the model's TF graph; if given, ops taking a resource placed
        on another device than the resource are reported as such (TF would
        run them on the resource's device), whatever the OpGraph's
        colocation keys say.

    Raises:
      InputError: ops of the placement missing from the graph or graph ops
        missing from the placement; a fingerprint mismatch; an unknown
        device-map source; devices this machine lacks; ops taking a resource
        from another device (with `tf_graph`); ops sharing a colocation key
        on different devices; ops on a device type that has no kernel for
        them. Each message names the first few offenders.
    """
    placement.for_graph(graph, source)
    if device_map:
        parse_device_map(",".join(f"{k}={v}" for k, v in device_map.items()), known=placement.device_names)
    where = op_devices(placement, device_map)
    local = {device_name(d) for d in available_devices}
    used = sorted(set(where.values()))
    lacking = [d for d in used if d not in local]
    if lacking:
        raise InputError(
            f"{source}: devices {_names(lacking)} are not on this machine "
            f"(it has {', '.join(sorted(local))}); retarget them with --device_map"
        )
    if tf_graph is not None:
        split = resource_splits(where, tf_graph)
        if split:
            shown = [f"{op} on {where[op]}, its resource {res} on {where[res]}" for op, res in split]
            raise InputError(
                f"{source}: {len(split)} ops take a resource placed on another device, and TF always runs "
                f"such an op on the resource's device (the variable's device): {_names(shown)}; "
                "placer.apply.follow_resources moves them there"
            )
    devs = [where[n] for n in graph.names]
    broken = [
        f"{graph.names[i]} on {devs[i]}, group {graph.colocation[i]!r} on {devs[first]}"
        for i, first in colocation.colocation_breaks(graph, np.asarray(devs, dtype=object))
    ]
    if broken:
        raise InputError(
            f"{source}: {len(broken)} ops break colocation (ops sharing a colocation key must "
            f"share a device): {_names(broken)}"
        )
    types = sorted({device_type(d) for d in used})
    mask = extract.kernel_mask(graph, types)
    col = np.array([types.index(device_type(d)) for d in devs], dtype=np.int64)
    bad = np.flatnonzero(~mask[np.arange(graph.num_ops), col])
    if bad.size:
        offenders = [f"{graph.names[i]} ({graph.types[i]}) on {devs[i]}" for i in bad]
        raise InputError(f"{source}: {len(offenders)} ops have no kernel for their device type: {_names(offenders)}")


def apply_to_graph_def(placement: Placement, graph_def_or_metagraph, *, device_map: dict[str, str] | None = None):
    """Returns a copy of a GraphDef or MetaGraphDef with each node's device set.

    Nodes the placement does not name keep their device.

    Args:
      placement: the placement.
      graph_def_or_metagraph: a GraphDef or MetaGraphDef (not modified).
      device_map: placement device -> local device.

    Returns:
      A copy of the same type.
    """
    where = op_devices(placement, device_map)
    if not isinstance(graph_def_or_metagraph, (meta_graph_pb2.MetaGraphDef, graph_pb2.GraphDef)):
        raise TypeError(f"expected a GraphDef or MetaGraphDef, got {type(graph_def_or_metagraph).__name__}")
    out = type(graph_def_or_metagraph)()
    out.CopyFrom(graph_def_or_metagraph)
    for node in getattr(out, "graph_def", out).node:
        if node.name in where:
            node.device = where[node.name]
    return out


class DeviceFunction:
    """A device function for `with tf.compat.v1.device(fn):` in graph mode.

    Each op created in the block gets the device the placement gives its
    name; ops the placement does not name keep their device and are listed
    in `unplaced`. `device_fn` is the same class, named for
    `with tf.compat.v1.device(device_fn(p)):` while model code builds the
    graph. Ops are matched by name, so the model must be built with the
    names it had when the placement was learned (same code, same name
    scopes, built into a fresh default graph).

    Attributes:
      placed: names of the ops that got a device from the placement.
      unplaced: names of the ops the placement does not name.
    """

    def __init__(self, placement: Placement, device_map: dict[str, str] | None = None):
        self._where = op_devices(placement, device_map)
        self.placed: list[str] = []
        self.unplaced: list[str] = []

    def __call__(self, op) -> str:
        dev = self._where.get(op.name)
        if dev is None:
            self.unplaced.append(op.name)
            return op.device
        self.placed.append(op.name)
        return dev


device_fn = DeviceFunction


def _takes_resource(t: tf.Tensor) -> bool:
    return t.dtype == tf.resource or t.dtype._is_ref_dtype  # noqa: SLF001


def resource_splits(where: dict[str, str], tf_graph: tf.Graph) -> list[tuple[str, str]]:
    """Ops placed on another device than a resource (or ref) tensor they take.

    TF's placer runs each of them on the resource's device instead. Function
    calls (RESOURCE_EXEMPT) forward handles and are not counted.

    Args:
      where: op name -> device; ops it does not name are not checked.
      tf_graph: the model's graph (for tensor dtypes).

    Returns:
      (op name, name of the op producing the resource), in graph order.
    """
    out = []
    for op in tf_graph.get_operations():
        if op.type in RESOURCE_EXEMPT or op.name not in where:
            continue
        for t in op.inputs:
            src = t.op.name
            if _takes_resource(t) and src in where and device_name(where[src]) != device_name(where[op.name]):
                out.append((op.name, src))
                break
    return out


def resource_followers(where: dict[str, str], tf_graph: tf.Graph) -> dict[str, str]:
    """Predicts the ops TF's placer moves to the device of a resource they take.

    Mirrors TF's colocation graph: ops sharing a colocation key (`_class`)
    form a group; a data edge carrying a resource or ref tensor merges the
    consumer's group into the producer's, and the merged group takes the
    producer group's device (the consumer's when the producer has none).

    Args:
      where: op name -> requested device (ops not named keep their graph device).
      tf_graph: the model's graph (for tensor dtypes and `_class` keys).

    Returns:
      op name -> device TF will run it on, for the ops whose device differs
      from the one requested.
    """
    ops = tf_graph.get_operations()
    sets = DisjointSets(op.name for op in ops)
    device = {
        op.name: device_name(where.get(op.name, op.device)) if where.get(op.name, op.device) else "" for op in ops
    }

    def merge(src: str, dst: str) -> None:
        roots = sets.union(src, dst)
        if roots:
            device[roots[0]] = device[roots[0]] or device[roots[1]]

    for op in ops:
        for target in extract.colocation_targets(op):
            if target in sets:
                merge(target, op.name)
    for op in ops:
        if op.type in RESOURCE_EXEMPT:
            continue
        for t in op.inputs:
            if _takes_resource(t):
                merge(t.op.name, op.name)
    out = {}
    for op in ops:
        want = device[op.name] if op.name not in where else device_name(where[op.name])
        got = device[sets.find(op.name)]
        if op.name in where and got and got != want:
            out[op.name] = got
    return out


def follow_resources(placement: Placement, tf_graph: tf.Graph) -> Placement:
    """Returns the placement TF will run: resource consumers moved to their resource's device.

    The device names stay those of `placement` (apply a device map first).
    """
    moves = resource_followers(
        dict(zip(placement.op_names, (placement.device_names[d] for d in placement.devices), strict=True)), tf_graph
    )
    if not moves:
        return placement
    names = [device_name(n) for n in placement.device_names]
    devs = placement.devices.copy()
    for i, op in enumerate(placement.op_names):
        if op in moves:
            devs[i] = names.index(moves[op])
    return dataclasses.replace(placement, devices=devs, metadata=dict(placement.metadata))
