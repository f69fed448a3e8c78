"""TensorFlow graph -> OpGraph, and which device types have kernels for an op.

`extract` keeps every op of the graph (no op is dropped or merged): per op its
type, output shapes from TF's shape inference, output bytes, persistent
(variable) bytes and colocation key; per input a data edge carrying the bytes
of that tensor, per control input a control edge of 0 bytes. Costs are not
known here: the graph comes back with no cost columns (graphs/costs.py adds
them).

Byte conventions:
  * a tensor's bytes are the product of its dims times the dtype size, an
    unknown dim counting as 1 (so a [?, 8] float32 tensor counts 32 bytes);
  * resource and variant tensors (handles) count 0 bytes, strings 8 bytes per
    element (their length is unknown before running; 8 is a pointer's size);
  * persistent bytes are those of the variable an op owns (VariableV2,
    Variable, VarHandleOp), from its `shape` and `dtype` attributes.

Kernel availability: TF's kernel registry lists, per op type, the device
types with a registered kernel. A kernel registered for "DEFAULT" serves any
device type (TF falls back to it when no kernel of the device's own type
exists), so an op runs on type T when T or DEFAULT is listed. The standard
`tensorflow` pip wheel is built with CUDA and registers its GPU kernels even
on a machine without a GPU or CUDA libraries, so GPU availability is read
correctly on a CPU-only machine; e.g. MatMul: CPU, GPU; AsString,
StringFormat, DecodeJpeg, SaveV2: CPU only; VarHandleOp, ReadVariableOp:
CPU, DEFAULT (hence also GPU).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from google.protobuf import message, text_format
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import meta_graph_pb2
from tensorflow.python.framework import kernels

from placer.core.disjoint import DisjointSets
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
STRING_ELEMENT_BYTES = 8  # a string element's size is unknown before running.
# Edges into a Merge from a NextIteration close a while loop; they are the only
# back edges of a TF graph and are dropped so the op graph stays acyclic.
LOOP_BACK_EDGE_SRC = frozenset({"NextIteration", "RefNextIteration"})


def load_metagraph(path: str) -> meta_graph_pb2.MetaGraphDef:
    """Reads a MetaGraphDef from a binary or text protobuf file.

    A file holding a bare GraphDef is accepted too and wrapped in a
    MetaGraphDef.

    Args:
      path: file name (binary `.meta`/`.pb`, or text `.pbtxt`).

    Returns:
      The MetaGraphDef.

    Raises:
      InputError: the file is missing, unreadable, or not a graph protobuf.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read metagraph ({e.strerror or e})") from None
    for cls in (meta_graph_pb2.MetaGraphDef, graph_pb2.GraphDef):
        for parse in (_parse_binary, _parse_text):
            proto = parse(raw, cls)
            if proto is None:
                continue
            if isinstance(proto, graph_pb2.GraphDef) and proto.node:
                mg = meta_graph_pb2.MetaGraphDef()
                mg.graph_def.CopyFrom(proto)
                return mg
            if isinstance(proto, meta_graph_pb2.MetaGraphDef) and proto.graph_def.node:
                return proto
    raise InputError(f"{path}: not a MetaGraphDef or GraphDef protobuf (binary or text), or it has no ops")


def _parse_binary(raw: bytes, cls):
    """Parses `raw` as a binary protobuf of `cls`; None if it is not one."""
    proto = cls()
    try:
        proto.ParseFromString(raw)
    except (message.DecodeError, RuntimeError, ValueError):
        return None
    return proto


def _parse_text(raw: bytes, cls):
    """Parses `raw` as a text protobuf of `cls`; None if it is not one."""
    proto = cls()
    try:
        text_format.Parse(raw.decode("utf-8"), proto)
    except (text_format.ParseError, UnicodeDecodeError, ValueError):
        return None
    return proto


def to_tf_graph(source) -> tf.Graph:
    """Returns a tf.Graph for a tf.Graph, MetaGraphDef or GraphDef.

    Raises:
      InputError: the protobuf cannot be imported (e.g. an unknown op type).
    """
    if isinstance(source, tf.Graph):
        return source
    if isinstance(source, meta_graph_pb2.MetaGraphDef):
        graph_def = source.graph_def
    elif isinstance(source, graph_pb2.GraphDef):
        graph_def = source
    else:
        raise TypeError(f"expected tf.Graph, MetaGraphDef or GraphDef, got {type(source).__name__}")
    g = tf.Graph()
    try:
        with g.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
    except (ValueError, tf.errors.OpError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"graph cannot be imported into TensorFlow: {first}") from None
    return g


def tensor_bytes(shape: Sequence[int], dtype: tf.DType) -> int:
    """Bytes of a tensor: product of dims (unknown = 1) times the element size.

    Args:
      shape: dims, -1 for unknown.
      dtype: TF dtype (ref dtypes count as their base type).

    Returns:
      Bytes; 0 for resource and variant handles.
    """
    dtype = dtype.base_dtype
    if dtype in (tf.resource, tf.variant):
        return 0
    size = STRING_ELEMENT_BYTES if dtype == tf.string else dtype.size
    n = 1
    for d in shape:
        n *= int(d) if d >= 0 else 1
    return n * size


def _shape_tuple(shape: tf.TensorShape) -> tuple[int, ...]:
    if shape.rank is None:
        return ()
    return tuple(-1 if d is None else int(d) for d in shape.as_list())


def _variable_bytes(op: tf.Operation) -> int:
    if op.type not in VARIABLE_OPS:
        return 0
    try:
        shape = tf.TensorShape(op.get_attr("shape"))
        dtype = tf.as_dtype(op.get_attr("dtype"))
    except ValueError:
        return 0
    return tensor_bytes(_shape_tuple(shape), dtype)


def colocation_targets(op: tf.Operation) -> list[str]:
    """The op names an op's `_class` attribute colocates it with (`loc:@X` -> "X")."""
    try:
        entries = op.get_attr("_class")
    except ValueError:
        return []
    names = [e.decode() if isinstance(e, bytes) else str(e) for e in entries]
    return [n[5:] for n in names if n.startswith("loc:@")]


def _colocation_keys(ops: Sequence[tf.Operation]) -> list[str]:
    """Colocation key per op from the `_class: loc:@X` attributes.

    Ops naming X, and X itself, share a key, and so do an op taking a resource
    or ref tensor and the op producing it (TF's placer colocates them even
    without `_class`). Chains (X itself colocated with Y)
    and several loc entries are merged with union-find; a merged set's key is
    the first loc target met in graph order, so the common case, a variable w
    and everything colocated with it, gets key "w".
    """
    sets = DisjointSets()
    first_seen: dict[str, int] = {}
    targets: list[list[str]] = []
    for op in ops:
        locs = colocation_targets(op)
        # TF's placer also puts an op that takes a resource (or ref) tensor on
        # the device of the op that produced it, whatever `_class` says.
        for t in op.inputs:
            if t.dtype == tf.resource or t.dtype._is_ref_dtype:
                locs.append(t.op.name)
        targets.append(locs)
        for x in locs:
            first_seen.setdefault(x, len(first_seen))
            sets.union(x, op.name)
    # The key of a set is its member that was named as a loc target first.
    key_of_root: dict[str, str] = {}
    for x in sorted(first_seen, key=first_seen.get):
        key_of_root.setdefault(sets.find(x), x)
    return [key_of_root.get(sets.find(op.name), "") if op.name in sets else "" for op in ops]


def extract(source, *, name: str) -> OpGraph:
    """Turns a TF graph into an OpGraph with every op kept and no costs.

    Args:
      source: a tf.Graph, MetaGraphDef or GraphDef.
      name: graph name, e.g. the model name "nmt".

    Returns:
      The op graph (ops in topological order, `device_types` empty).

    Raises:
      InputError: the protobuf cannot be imported.
    """
    g = to_tf_graph(source)
    ops = g.get_operations()
    names, types, shapes, obytes, pbytes = [], [], [], [], []
    edges: list[tuple[str, str, int]] = []
    control: list[bool] = []
    for op in ops:
        names.append(op.name)
        types.append(op.type)
        out_shapes, total = [], 0
        for t in op.outputs:
            s = _shape_tuple(t.shape)
            out_shapes.append(s)
            total += tensor_bytes(s, t.dtype)
        shapes.append(tuple(out_shapes))
        obytes.append(total)
        pbytes.append(_variable_bytes(op))
        for t in op.inputs:
            src = t.op
            if src.type in LOOP_BACK_EDGE_SRC:
                continue
            edges.append((src.name, op.name, tensor_bytes(_shape_tuple(t.shape), t.dtype)))
            control.append(False)
        for c in op.control_inputs:
            edges.append((c.name, op.name, 0))
            control.append(True)
    return OpGraph.create(
        name,
        names,
        types,
        edges,
        output_shapes=shapes,
        output_bytes=obytes,
        persistent_bytes=pbytes,
        colocation=_colocation_keys(ops),
        edge_control=control,
        source=name,
    )


@functools.cache
def kernel_device_types(op_type: str) -> frozenset[str]:
    """Returns the device types TF has a kernel registered for, for `op_type`.

    "DEFAULT" in the set means the op runs on any device type.
    """
    return frozenset(k.device_type for k in kernels.get_registered_kernels_for_op(op_type).kernel)


def has_kernel(op_type: str, device_type: str) -> bool:
    """True if an op of `op_type` can run on a `device_type` device ("CPU", "GPU")."""
    types = kernel_device_types(op_type)
    return device_type.upper() in types or "DEFAULT" in types


def kernel_mask(graph: OpGraph, device_types: Sequence[str]) -> np.ndarray:
    """Returns [n_ops, len(device_types)] bool: True where the op has a kernel.

    Function-call ops (types defined in the graph's function library) are
    not in the registry; they are treated as runnable everywhere.
    """
    out = np.zeros((graph.num_ops, len(device_types)), dtype=bool)
    by_type: dict[str, np.ndarray] = {}
    for j, dt in enumerate(device_types):
        for i, t in enumerate(graph.types):
            if (t, dt) not in by_type:
                registered = kernel_device_types(t)
                by_type[(t, dt)] = (not registered) or has_kernel(t, dt)
            out[i, j] = by_type[(t, dt)]
    return out


def metagraph_of(source, fetch: Sequence[str] = ()) -> meta_graph_pb2.MetaGraphDef:
    """Returns a MetaGraphDef with a "train_op" collection Grappler can fetch.

    Args:
      source: tf.Graph, MetaGraphDef or GraphDef.
      fetch: op names to fetch when the source has no "train_op" collection;
        default: every op no other op consumes (the graph's sinks).
    """
    if isinstance(source, meta_graph_pb2.MetaGraphDef):
        mg = meta_graph_pb2.MetaGraphDef()
        mg.CopyFrom(source)
    else:
        g = to_tf_graph(source)
        with g.as_default():
            mg = tf.compat.v1.train.export_meta_graph(graph=g, clear_devices=False)
    if "train_op" in mg.collection_def and mg.collection_def["train_op"].node_list.value:
        return mg
    if not fetch:
        consumed = set()
        for n in mg.graph_def.node:
            for i in n.input:
                consumed.add(i.lstrip("^").split(":")[0])
        fetch = [n.name for n in mg.graph_def.node if n.name not in consumed]
    mg.collection_def["train_op"].node_list.value.extend(fetch)
    return mg


def step_fan_in(source) -> frozenset[str]:
    """Names of the ops one training step runs: the fan-in (data and control inputs) of the "train_op"
    collection, or of the graph's sinks when there is none (`metagraph_of`).

    Args:
      source: tf.Graph, MetaGraphDef or GraphDef.
    """
    mg = metagraph_of(source)
    inputs = {n.name: [i.lstrip("^").split(":")[0] for i in n.input] for n in mg.graph_def.node}
    seen: set[str] = set()
    stack = list(mg.collection_def["train_op"].node_list.value)
    while stack:
        name = stack.pop().split(":")[0]
        if name in seen or name not in inputs:
            continue
        seen.add(name)
        stack.extend(inputs[name])
    return frozenset(seen)


def step_mask(graph: OpGraph, source) -> np.ndarray:
    """[n_ops] bool: True for the ops of `graph` in the training step of `source` (`step_fan_in`)."""
    fan_in = step_fan_in(source)
    return np.array([n in fan_in for n in graph.names], dtype=bool)
