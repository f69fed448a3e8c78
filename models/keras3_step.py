"""One training step of a Keras 3 model (`keras` or `tf.keras` with the TensorFlow backend), traced.

Keras 3 does not build in TF1 graph mode, so the step is traced with
`tf.function`: synthetic inputs and targets made in the function (as in
models/keras_step.py), the forward pass in training mode, the compiled loss
(`model.compute_loss`), the gradients from a GradientTape and the
optimizer's `apply`. The traced graph reads each variable through a captured
handle (a placeholder); each becomes a VarHandleOp named after the
variable's Keras path, with an initializer that assigns the variable's
current value, so the graph stands alone like a TF1 one: it can be
extracted, costed, measured in sessions and applied.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import graph_pb2, variable_pb2

from models.common import TRAIN_OP_COLLECTION, ModelGraph
from models.keras_step import per_output_losses, synthetic_input, synthetic_target
from placer.core.errors import InputError, one_line


def is_keras3(model) -> bool:
    """True for a model of the Keras 3 package (`keras`, or `tf.keras` in TF 2.16 and later)."""
    return type(model).__module__.startswith("keras.") and hasattr(model, "compile")


def _check(model, where: str) -> None:
    if getattr(model, "optimizer", None) is None or not getattr(model, "compiled", False):
        raise InputError(f"{where}: the model is not compiled (call model.compile(optimizer=..., loss=...))")


def _variables(model) -> list:
    """(tf.Variable, Keras path) of the model's and its optimizer's variables."""
    out = []
    for v in [*model.variables, *model.optimizer.variables]:
        tf_var = getattr(v, "_value", None) if not isinstance(v, tf.Variable) else v
        if isinstance(tf_var, tf.Variable):
            out.append((tf_var, getattr(v, "path", tf_var.name.split(":")[0])))
    return out


def traced_step(model, *, name: str, batch_size: int, seed: int, where: str) -> ModelGraph:
    """Traces one training step of a compiled Keras 3 `model` into a standalone graph.

    Raises:
      InputError: uncompiled, unknown input shapes, or a step that cannot be traced.
    """
    import keras  # noqa: PLC0415

    _check(model, where)
    specs = [(f"x{i}", [batch_size, *x.shape[1:]], tf.as_dtype(x.dtype), x.shape) for i, x in enumerate(model.inputs)]
    for _, _, _, shape in specs:
        if any(d is None for d in shape[1:]):
            raise InputError(
                f"{where}: an input has unknown dimensions {tuple(shape)} (give every dimension but the batch)"
            )
    vocab = [layer.input_dim for layer in model._flatten_layers() if isinstance(layer, keras.layers.Embedding)]  # noqa: SLF001
    model.optimizer.build(model.trainable_variables)
    names = list(getattr(model, "output_names", None) or [])

    @tf.function(autograph=False)
    def step():
        with tf.name_scope("input"):
            xs = [
                synthetic_input(n, s, d, [seed, i], min(vocab) if vocab else 2) for i, (n, s, d, _) in enumerate(specs)
            ]
        x = xs if len(xs) > 1 else xs[0]
        with tf.GradientTape() as tape:
            outputs = model(x, training=True)
            flat = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
            kinds = per_output_losses(model.loss, names or [f"output_{i}" for i in range(len(flat))])
            with tf.name_scope("target"):
                ys = [synthetic_target(i, o.shape, o.dtype, kinds[i], batch_size, seed) for i, o in enumerate(flat)]
            y = ys if len(ys) > 1 else ys[0]
            loss = model.compute_loss(x=x, y=y, y_pred=outputs, training=True)
        variables = model.trainable_variables
        pairs = [(g, v) for g, v in zip(tape.gradient(loss, variables), variables, strict=True) if g is not None]
        model.optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])  # Keras skips the others too
        return tf.identity(loss, name="loss")

    try:
        traced = step.get_concrete_function()
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 (a model Keras cannot trace is bad input)
        raise InputError(f"{where}: the training step cannot be traced: {one_line(e)}") from None
    return _standalone(traced, _variables(model), name, where)


def _standalone(traced, variables, name: str, where: str) -> ModelGraph:
    """The traced graph with its captured handles made variables, an initializer and the train op."""
    by_handle = {id(v.handle): (v, path) for v, path in variables}
    trainable = set()
    graph_def = traced.graph.as_graph_def()
    rename, values = {}, {}
    taken = {n.name for n in graph_def.node}
    for external, internal in traced.graph.captures:
        node = internal.op.name
        if external.dtype == tf.resource:
            if id(external) not in by_handle:
                raise InputError(f"{where}: the step reads a resource that is not a Keras variable ({node})")
            var, path = by_handle[id(external)]
            new = path if path not in taken else f"{path}_variable"
            taken.add(new)
            rename[node] = new
            if var.trainable:
                trainable.add(new)
            values[new] = (var.numpy(), var.dtype, var.shape)
        else:
            values[node] = (np.asarray(external), external.dtype, None)
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for n in graph_def.node:
        m = out.node.add()
        m.CopyFrom(n)
        m.input[:] = [_renamed(i, rename) for i in n.input]
        if n.name in rename:
            _as_variable(m, rename[n.name], values[rename[n.name]])
        elif n.name in values:
            _as_constant(m, values[n.name][0])
    result = traced.graph.outputs[0].op.name
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(out, name="")
        defs = [_variable_def(g, new, value, dtype, new in trainable) for new, (value, dtype, shape) in values.items()
                if shape is not None]  # fmt: skip
        init_op = tf.group(*[g.get_operation_by_name(d.initializer_name) for d in defs], name="init")
        with tf.control_dependencies([g.get_operation_by_name(result)]):
            train_op = tf.no_op(name="train_op")
        g.add_to_collection(TRAIN_OP_COLLECTION, train_op)
        g.add_to_collection(tf.compat.v1.GraphKeys.INIT_OP, init_op)
        metagraph = tf.compat.v1.train.export_meta_graph(graph=g, clear_devices=False)
    # As a TF1 graph's: the variables collections, so a session's global_variables_initializer finds them.
    for key, chosen in (("variables", defs), ("trainable_variables", [d for d in defs if d.trainable])):
        metagraph.collection_def[key].bytes_list.value.extend(d.SerializeToString() for d in chosen)
    return ModelGraph(name, g, train_op, g.get_tensor_by_name(f"{result}:0"), metagraph, init_op)


def _variable_def(g: tf.Graph, name: str, value: np.ndarray, dtype: tf.DType, trainable: bool):
    """Adds the initial value, initializer and snapshot read of variable handle `name`; returns its VariableDef."""
    handle = g.get_tensor_by_name(f"{name}:0")
    initial = tf.constant(value, dtype, name=f"{name}/Initializer/initial_value")
    assign = tf.raw_ops.AssignVariableOp(resource=handle, value=initial, name=f"{name}/Assign")
    read = tf.raw_ops.ReadVariableOp(resource=handle, dtype=dtype, name=f"{name}/Read/ReadVariableOp")
    d = variable_pb2.VariableDef(
        variable_name=handle.name, initial_value_name=initial.name, initializer_name=assign.name,
        snapshot_name=read.name, is_resource=True, trainable=trainable,
    )  # fmt: skip
    return d


def _renamed(ref: str, rename: dict[str, str]) -> str:
    control = ref.startswith("^")
    base, sep, port = ref.lstrip("^").partition(":")
    base = rename.get(base, base)
    return ("^" if control else "") + base + (sep + port if sep else "")


def _as_variable(node, name: str, value) -> None:
    _, dtype, shape = value
    node.name = name
    node.op = "VarHandleOp"
    node.ClearField("input")
    node.ClearField("attr")
    node.attr["dtype"].type = dtype.as_datatype_enum
    node.attr["shape"].shape.CopyFrom(tf.TensorShape(shape).as_proto())
    node.attr["shared_name"].s = name.encode()
    node.attr["container"].s = b""
    node.attr["allowed_devices"].list.SetInParent()


def _as_constant(node, value: np.ndarray) -> None:
    node.op = "Const"
    node.ClearField("input")
    node.ClearField("attr")
    tensor = tf.make_tensor_proto(value)
    node.attr["dtype"].type = tensor.dtype
    node.attr["value"].tensor.CopyFrom(tensor)
