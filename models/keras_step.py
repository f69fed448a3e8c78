"""One training step of a user's compiled Keras model, as a TF1 graph.

A model file's function returns a compiled Keras model (tf_keras, Keras 2);
the step is built the way models/inception_v3.py builds its own: in a fresh
tf.Graph in graph mode, with inputs and targets made in the graph by
stateless random ops (so one `session.run(train_op)` is one step and nothing
needs a feed), the forward pass called once on them in training mode, the
compiled loss, the gradients and the optimizer's update through
`tf.compat.v1.gradients`, and the forward pass's own updates (batch-norm
moving averages) run with every step.

The function builds its model inside that graph, on Keras inputs
(placeholders). Those placeholders and the forward ops Keras builds on them
are never run: once the step is built, the graph keeps only what the step,
the loss and the variable initializer need (the three ops' fan-in, and each
variable's snapshot read that a MetaGraphDef names it by), so the step's graph
has one forward pass and no placeholder. Keras 3 models are traced instead
(models/keras3_step.py).

Synthetic data: float inputs uniform in [-1, 1); integer inputs (token ids)
uniform in [0, the smallest `input_dim` of the model's Embedding layers, else
2). Targets follow the loss: class ids in [0, classes) for a sparse loss,
one-hot rows for categorical cross-entropy, 0/1 for binary cross-entropy,
uniform in [0, 1) otherwise.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tf_keras
from tensorflow.core.framework import variable_pb2
from tensorflow.python.framework import meta_graph

from models.common import TRAIN_OP_COLLECTION, ModelGraph
from placer.core.errors import InputError

UPDATE_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "Assign", "AssignAdd"})


def _loss_name(loss) -> str:
    """A loss's name in lower case: a string, a function's name or a Loss object's class."""
    if isinstance(loss, str):
        return loss.lower()
    if isinstance(loss, dict | list | tuple):
        return " ".join(_loss_name(v) for v in (loss.values() if isinstance(loss, dict) else loss))
    return (getattr(loss, "__name__", None) or type(loss).__name__).lower()


def per_output_losses(loss, names: list[str]) -> list[str]:
    if isinstance(loss, dict):
        return [_loss_name(loss.get(n, "")) for n in names]
    if isinstance(loss, list | tuple):
        return [_loss_name(v) for v in loss] + [""] * (len(names) - len(loss))
    return [_loss_name(loss)] * len(names)


def synthetic_target(i: int, shape: tf.TensorShape, dtype: tf.DType, loss: str, batch: int, seed: int) -> tf.Tensor:
    """Synthetic targets for output `i` of static shape `shape` (batch dim first) under `loss`."""
    dims = [batch, *shape[1:].as_list()]
    classes = int(dims[-1]) if len(dims) > 1 else 2
    s = [seed, 100 + i]
    if "sparse" in loss:
        ids_shape = dims[:-1] if len(dims) > 1 else dims
        return tf.random.stateless_uniform(ids_shape, seed=s, maxval=max(classes, 1), dtype=tf.int32, name=f"y{i}")
    if "categorical" in loss:
        ids = tf.random.stateless_uniform(dims[:-1], seed=s, maxval=classes, dtype=tf.int32)
        return tf.one_hot(ids, classes, dtype=dtype, name=f"y{i}")
    if "binary" in loss or "hinge" in loss:
        bits = tf.random.stateless_uniform(dims, seed=s, maxval=2, dtype=tf.int32)
        return tf.cast(bits, dtype, name=f"y{i}")
    return tf.random.stateless_uniform(dims, seed=s, dtype=dtype, name=f"y{i}")


def _loss(model, targets: list[tf.Tensor], outputs: list[tf.Tensor], names: list[str]) -> tf.Tensor:
    """The compiled loss: per output the mean of its loss function, weighted by `loss_weights`."""
    losses, weights = model.loss, getattr(model, "compiled_loss_weights", None) or model.loss_weights
    if isinstance(losses, dict):
        losses = [losses.get(n) for n in names]
    elif not isinstance(losses, list | tuple):
        losses = [losses] * len(outputs)
    if isinstance(weights, dict):
        weights = [weights.get(n, 1.0) for n in names]
    weights = list(weights) if weights else [1.0] * len(outputs)
    terms = []
    for fn, w, y, p in zip(losses, weights, targets, outputs, strict=False):
        if fn is None:
            continue
        terms.append(float(w) * tf.reduce_mean(tf_keras.losses.get(fn)(y, p)))
    return tf.add_n(terms, name="loss") if len(terms) > 1 else tf.identity(terms[0], name="loss")


def _vocab(model) -> int:
    """Token ids stay below the smallest Embedding's input_dim (2 when the model has none)."""
    dims = [layer.input_dim for layer in model.submodules if isinstance(layer, tf_keras.layers.Embedding)]
    return int(min(dims)) if dims else 2


def synthetic_input(name: str, shape: list[int], dtype: tf.DType, seed: list[int], vocab: int) -> tf.Tensor:
    """One synthetic input: floats uniform in [-1, 1), integers (token ids) uniform in [0, vocab).

    Raises:
      InputError: a dtype that is neither (named by the caller's message).
    """
    if dtype.is_integer:
        t = tf.random.stateless_uniform(shape, seed=seed, maxval=vocab, dtype=tf.int32)
        return tf.cast(t, dtype, name=name) if dtype != tf.int32 else tf.identity(t, name=name)
    if dtype.is_floating:
        return tf.random.stateless_uniform(shape, seed=seed, minval=-1.0, maxval=1.0, dtype=dtype, name=name)
    raise InputError(f"input {name} has dtype {dtype.name}; only numbers can be made up")


def _inputs(model, batch: int, seed: int, where: str) -> list[tf.Tensor]:
    """Synthetic inputs of the model's input shapes, batch dimension `batch`."""
    out = []
    for i, x in enumerate(model.inputs):
        dims = x.shape.as_list()[1:]
        if any(d is None for d in dims):
            raise InputError(
                f"{where}: input {x.name!r} has unknown dimensions {tuple(x.shape.as_list())} (give every "
                "dimension but the batch, e.g. tf_keras.Input(shape=(96, 96, 3)))"
            )
        try:
            out.append(synthetic_input(f"x{i}", [batch, *dims], x.dtype, [seed, i], _vocab(model)))
        except InputError as e:
            raise InputError(f"{where}: {e}") from None
    return out


def _legacy_optimizer(optimizer, where: str):
    """The compiled optimizer as a tf_keras legacy optimizer (the kind that works in graph mode).

    An optimizer of tf_keras's newer kind, made in graph mode, cannot serialise
    itself (its learning rate is a graph variable); its settings are read from
    its attributes, the learning rate from the variable's constant initial value.
    """
    legacy = tf_keras.optimizers.legacy
    if isinstance(optimizer, legacy.Optimizer):
        return optimizer
    cls = getattr(legacy, type(optimizer).__name__, None)
    if cls is None:
        raise InputError(f"{where}: optimizer {type(optimizer).__name__} has no graph-mode (legacy) tf_keras version")
    config = {}
    for key in ("learning_rate", *_OPTIMIZER_KEYS):
        value = getattr(optimizer, key, None) if key != "learning_rate" else getattr(optimizer, "_learning_rate", None)
        if isinstance(value, tf.Variable):
            value = tf.get_static_value(value.initial_value)
        if isinstance(value, bool | int | float | np.floating | np.ndarray):
            config[key] = value.item() if isinstance(value, np.ndarray | np.floating) else value
        elif value is not None and key == "learning_rate":  # a schedule
            config[key] = value
    return cls(**config)


def legacy_optimizer_from_config(saved: dict, where: str):
    """A tf_keras legacy optimizer from a serialised one ({"class_name", "config"}), its other settings dropped."""
    cls = getattr(tf_keras.optimizers.legacy, str(saved.get("class_name")), None)
    if cls is None:
        raise InputError(f"{where}: optimizer {saved.get('class_name')} has no graph-mode (legacy) tf_keras version")
    config = saved.get("config") or {}
    keys = ("learning_rate", *_OPTIMIZER_KEYS)
    return cls(**{k: v for k, v in config.items() if k in keys and v is not None})


_OPTIMIZER_KEYS = ("beta_1", "beta_2", "epsilon", "amsgrad", "momentum", "nesterov", "rho", "centered",
                   "initial_accumulator_value", "clipnorm", "clipvalue", "global_clipnorm")  # fmt: skip


def _forward_updates(graph: tf.Graph, first_id: int) -> list[tf.Operation]:
    """Variable updates the forward call made (batch-norm moving averages): the ops created
    after op id `first_id` that assign to a variable (a forward pass assigns nothing else)."""
    return [op for op in graph.get_operations() if op._id > first_id and op.type in UPDATE_OPS]  # noqa: SLF001


def training_step(model, *, name: str, batch_size: int, seed: int, where: str) -> ModelGraph:
    """Builds one training step of `model`, made in the current default graph, and prunes that graph.

    Args:
      model: a compiled tf_keras model, built in the default graph (graph mode).
      name: the ModelGraph's name.
      batch_size: examples per step.
      seed: seed of the synthetic inputs and targets.
      where: "FILE:FUNCTION", for messages.

    Returns:
      A ModelGraph whose graph holds only the step's and the initializer's ops.

    Raises:
      InputError: unknown input shapes, a non-numeric input, an optimizer
        without a graph-mode version, or an op that needs a feed.
    """
    graph = tf.compat.v1.get_default_graph()
    with tf.compat.v1.name_scope("input"):
        xs = _inputs(model, batch_size, seed, where)
    first = max(op._id for op in graph.get_operations())  # noqa: SLF001
    outputs = model(xs if len(xs) > 1 else xs[0], training=True)
    updates = _forward_updates(graph, first)
    outputs = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
    names = list(getattr(model, "output_names", None) or [f"output_{i}" for i in range(len(outputs))])
    kinds = per_output_losses(model.loss, names)
    with tf.compat.v1.name_scope("target"):
        ys = [synthetic_target(i, o.shape, o.dtype, kinds[i], batch_size, seed) for i, o in enumerate(outputs)]
    with tf.compat.v1.name_scope("loss"):
        loss = _loss(model, ys, outputs, names)
    optimizer = _legacy_optimizer(model.optimizer, where)
    variables = model.trainable_variables
    # Gradients named gradients/<forward op>_grad/..., as the built-in models' (tf.compat.v1.gradients).
    grads = tf.compat.v1.gradients(loss, variables)
    pairs = [(g, v) for g, v in zip(grads, variables, strict=True) if g is not None]  # Keras skips the others too
    update = optimizer.apply_gradients(pairs)
    with tf.control_dependencies([update, *updates]):
        train_op = tf.no_op(name="train_op")
    init_op = tf.compat.v1.global_variables_initializer()
    return _pruned(graph, name, train_op.name, loss.name, init_op.name, where)


_VARIABLE_COLLECTIONS = ("variables", "trainable_variables", "local_variables", "model_variables")


def _pruned(graph: tf.Graph, name: str, train: str, loss: str, init: str, where: str) -> ModelGraph:
    """The fan-in of the step, its loss and the initializer, in a graph of its own (variables kept as such)."""
    meta = tf.compat.v1.train.export_meta_graph(graph=graph, clear_devices=False)
    # TF re-reads a variable from its MetaGraphDef through its snapshot (a ReadVariableOp): keep those.
    snapshots = [v.to_proto().snapshot_name.split(":")[0] for v in graph.get_collection("variables")]
    graph_def = tf.compat.v1.graph_util.extract_sub_graph(
        meta.graph_def, [train, init, loss.split(":")[0], *(s for s in snapshots if s)]
    )
    feeds = [n.name for n in graph_def.node if n.op in ("Placeholder", "PlaceholderV2")]
    if feeds:
        raise InputError(
            f"{where}: the training step needs a feed for placeholder {feeds[0]!r}"
            + (f" (and {len(feeds) - 1} more)" if len(feeds) > 1 else "")
            + "; the model's layers may read only its Keras inputs"
        )
    kept = {n.name for n in graph_def.node}
    meta.graph_def.CopyFrom(graph_def)
    for key in list(meta.collection_def):
        if key not in _VARIABLE_COLLECTIONS:
            del meta.collection_def[key]
            continue
        values = meta.collection_def[key].bytes_list.value
        defs = [variable_pb2.VariableDef.FromString(v) for v in values]
        defs = [d for d in defs if d.variable_name.split(":")[0] in kept]
        del values[:]
        values.extend(d.SerializeToString() for d in defs)
    out = tf.Graph()
    with out.as_default():
        meta_graph.import_scoped_meta_graph(meta)  # as train.import_meta_graph, without adding a Saver's ops
        train_op, init_op = out.get_operation_by_name(train), out.get_operation_by_name(init)
        out.add_to_collection(TRAIN_OP_COLLECTION, train_op)
        out.add_to_collection(tf.compat.v1.GraphKeys.INIT_OP, init_op)
        metagraph = tf.compat.v1.train.export_meta_graph(graph=out, clear_devices=False)
    return ModelGraph(name, out, train_op, out.get_tensor_by_name(loss), metagraph, init_op)


def check_model(model, where: str) -> None:
    """Checks that `model` is a compiled tf_keras model.

    Raises:
      InputError: naming `where` and what is wrong.
    """
    if isinstance(model, tf_keras.Model):
        if getattr(model, "optimizer", None) is None or getattr(model, "loss", None) is None:
            raise InputError(f"{where}: the model is not compiled (call model.compile(optimizer=..., loss=...))")
        return
    kind = type(model)
    raise InputError(f"{where}: returned {kind.__name__}, not a compiled Keras model")
