"""Pieces shared by the model builders: the ModelGraph type, an unrolled LSTM
cell, synthetic inputs and the training step.

Every builder makes a fresh `tf.Graph` in graph mode (tf.compat.v1). Inputs
are made inside the graph from stateless random ops with a fixed seed, so one
`session.run(train_op)` is one training step on the same batch, with no
placeholders to feed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2

from placer.core.errors import InputError

# Collection holding the training step, so a MetaGraphDef carries it.
TRAIN_OP_COLLECTION = "train_op"


@dataclasses.dataclass(frozen=True)
class ModelGraph:
    """A model's training graph.

    Attributes:
      name: model name ("rnnlm", "nmt", "inception_v3").
      graph: the tf.Graph holding forward, backward and optimizer update ops.
      train_op: one training step (forward, backward, update).
      loss: the scalar float32 training loss.
      metagraph: MetaGraphDef of `graph`, with `train_op` in the collection
        "train_op" and the variable initializer in "init_op".
      init_op: initializes every variable; run it once before `train_op`.
    """

    name: str
    graph: tf.Graph
    train_op: tf.Operation
    loss: tf.Tensor
    metagraph: meta_graph_pb2.MetaGraphDef
    init_op: tf.Operation | None = None


def weight(name: str, shape: list[int], scale: float = 0.08) -> tf.Variable:
    """Creates a float32 resource variable initialised uniformly in [-scale, scale].

    Args:
      name: variable name inside the current variable scope.
      shape: variable shape.
      scale: half-width of the uniform initialiser (0.08 as in Sutskever et al. 2014).
    """
    return tf.compat.v1.get_variable(
        name,
        shape=shape,
        dtype=tf.float32,
        initializer=tf.compat.v1.random_uniform_initializer(-scale, scale),
        use_resource=True,
    )


def lstm_step(
    x: tf.Tensor, h: tf.Tensor, c: tf.Tensor, kernel: tf.Tensor, bias: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """One time step of an LSTM cell, as explicit ops (no fused kernel, no loop).

    The gates follow Zaremba et al. 2014; the forget-gate bias starts at 1.0
    (Jozefowicz et al. 2015) through the bias initialiser.

    Args:
      x: [batch, input] float32 input.
      h: [batch, hidden] previous output.
      c: [batch, hidden] previous cell state.
      kernel: [input + hidden, 4 * hidden] weights (already read).
      bias: [4 * hidden] bias.

    Returns:
      (h_new, c_new), each [batch, hidden].
    """
    z = tf.nn.bias_add(tf.matmul(tf.concat([x, h], axis=1), kernel), bias)
    i, j, f, o = tf.split(z, 4, axis=1)
    c_new = c * tf.sigmoid(f) + tf.sigmoid(i) * tf.tanh(j)
    h_new = tf.tanh(c_new) * tf.sigmoid(o)
    return h_new, c_new


class LSTMLayer:
    """The weights of one LSTM layer, read once, used at every time step.

    Creates variables `<scope>/kernel` and `<scope>/bias` in the current
    variable scope; each `step` is called inside its own `t_<k>` name scope
    by the caller.
    """

    def __init__(self, input_size: int, hidden_size: int):
        self.hidden_size = hidden_size
        self.kernel_var = weight("kernel", [input_size + hidden_size, 4 * hidden_size])
        forget_one = np.zeros(4 * hidden_size, np.float32)
        forget_one[2 * hidden_size : 3 * hidden_size] = 1.0  # gate order i, j, f, o
        self.bias_var = tf.compat.v1.get_variable(
            "bias", dtype=tf.float32, initializer=tf.constant(forget_one), use_resource=True
        )
        self.kernel = self.kernel_var.read_value()
        self.bias = self.bias_var.read_value()

    def zero_state(self, batch_size: int) -> tuple[tf.Tensor, tf.Tensor]:
        """Returns (h, c) zeros of shape [batch, hidden]."""
        z = tf.zeros([batch_size, self.hidden_size], tf.float32, name="zero_state")
        return z, z

    def step(self, x: tf.Tensor, h: tf.Tensor, c: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One time step; see `lstm_step`."""
        return lstm_step(x, h, c, self.kernel, self.bias)


def token_ids(name: str, shape: list[int], vocab_size: int, seed: int) -> tf.Tensor:
    """Synthetic int32 token ids in [0, vocab_size), the same on every run.

    Stateless random ops keep the batch fixed across steps, so a falling loss
    shows the model learns, and no large constant sits in the GraphDef.
    """
    return tf.random.stateless_uniform(shape, seed=[seed, 0], minval=0, maxval=vocab_size, dtype=tf.int32, name=name)


def make_optimizer(name: str, learning_rate: float) -> tf.compat.v1.train.Optimizer:
    """Returns a tf.compat.v1 optimizer: "sgd" (plain gradient descent) or "adam".

    Raises:
      InputError: unknown optimizer name (field model.optimizer).
    """
    if name == "sgd":
        return tf.compat.v1.train.GradientDescentOptimizer(learning_rate)
    if name == "adam":
        return tf.compat.v1.train.AdamOptimizer(learning_rate)
    raise InputError(f"config field model.optimizer: unknown optimizer {name!r} (valid: adam, sgd)")


def finish(name: str, graph: tf.Graph, loss: tf.Tensor, config, extra_updates=()) -> ModelGraph:
    """Adds the backward pass, the optimizer update and the initializer.

    Gradients come from `tf.compat.v1.gradients` (through `minimize`), so each
    gradient op is named `gradients/<forward op name>_grad/...`.

    Args:
      name: model name.
      graph: the graph being built (must be the default graph).
      loss: scalar loss.
      config: the model ConfigDict (fields optimizer, learning_rate).
      extra_updates: ops to run with each step (batch-norm moving averages).

    Returns:
      The finished ModelGraph.
    """
    opt = make_optimizer(config.get("optimizer", "sgd"), float(config.get("learning_rate", 0.1)))
    variables = graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)
    # GATE_NONE: no identity "gate" ops around each gradient (they would add a
    # fifth of the graph's ops and only fix the order of gradient reads).
    grads_and_vars = opt.compute_gradients(loss, var_list=variables, gate_gradients=opt.GATE_NONE)
    update = opt.apply_gradients(grads_and_vars)
    if extra_updates:
        with tf.control_dependencies([update, *extra_updates]):
            train_op = tf.no_op(name="train_op")
    else:
        train_op = update
    init_op = tf.compat.v1.global_variables_initializer()
    graph.clear_collection(TRAIN_OP_COLLECTION)  # apply_gradients put its own op there
    graph.add_to_collection(TRAIN_OP_COLLECTION, train_op)
    graph.add_to_collection(tf.compat.v1.GraphKeys.INIT_OP, init_op)
    # clear_devices=False: the builders set no devices, and clearing takes a
    # per-node Python path in TF that grows quadratically with the op count.
    metagraph = tf.compat.v1.train.export_meta_graph(graph=graph, clear_devices=False)
    return ModelGraph(name=name, graph=graph, train_op=train_op, loss=loss, metagraph=metagraph, init_op=init_op)
