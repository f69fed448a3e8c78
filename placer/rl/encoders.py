"""Encoders that read the groups for the placement policy, behind one registry.

An encoder maps the projected group inputs [1, G, H] (op-type embedding and
numeric features, in group order) to encoder states [1, G, H] that the
decoder attends over. A new encoder is one new class here (or in its own
file) plus one entry in ENCODERS; `config.placer.policy.encoder` picks it,
and run.json and summary.json record the name.

Shapes: G groups, H hidden units.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf
import tf_keras as keras

from placer.core.errors import InputError
from placer.rl import graph_policy, recurrence


class BiLSTMEncoder(keras.layers.Layer):
    """The paper's encoder (Mirhoseini et al. 2017, section 2): a bidirectional LSTM over the groups.

    Args:
      hidden_size: H; each direction has H // 2 units.
      seed: weight initialisation seed.
    """

    def __init__(self, hidden_size: int, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        init = keras.initializers.GlorotUniform(seed=seed)
        half = max(1, hidden_size // 2)
        self.rnn = keras.layers.Bidirectional(
            keras.layers.LSTM(half, return_sequences=True, kernel_initializer=init),
            backward_layer=keras.layers.LSTM(half, return_sequences=True, go_backwards=True, kernel_initializer=init),
        )

    def call(self, x):
        """[B, G, H] inputs -> [B, G, 2 * (H // 2)] states.

        The Keras layers hold the weights (and checkpoints name them); both
        directions run in one recurrence (placer.rl.recurrence), the backward
        one over the reversed groups, and its states are reversed back, as
        `keras.layers.Bidirectional` returns them.
        """
        if not self.rnn.built:  # as calling the layer would: same weight names and, per seed, values
            with tf.name_scope(self.rnn.name):
                self.rnn.build(x.shape)
        fw, bw = self.rnn.forward_layer.cell, self.rnn.backward_layer.cell
        b, g, width = tf.shape(x)[0], tf.shape(x)[1], tf.shape(x)[2]
        rows = tf.reshape(tf.transpose(x, [1, 0, 2]), [-1, width])  # [G B, H], group-major
        # Both directions' input gates in one product per direction, rows reshaped (not a batched
        # product, whose kernel gradient would be summed over G afterwards).
        z_fw = tf.reshape(tf.matmul(rows, fw.kernel) + fw.bias, [g, b, -1])
        z_bw = tf.reverse(tf.reshape(tf.matmul(rows, bw.kernel) + bw.bias, [g, b, -1]), [0])
        h = recurrence.lstm(tf.stack([z_fw, z_bw], 1), tf.stack([fw.recurrent_kernel, bw.recurrent_kernel]))
        return tf.transpose(tf.concat([h[:, 0], tf.reverse(h[:, 1], [0])], -1), [1, 0, 2])  # h: [G, 2, B, H // 2]


ENCODERS: dict[str, Callable[..., keras.layers.Layer]] = {
    "bilstm": BiLSTMEncoder,
    # Message passing over the group graph; the trainer pairs it with the device-scoring decoder
    # (placer.rl.graph_policy.GraphPolicy), which serves any device count.
    "gnn": graph_policy.GraphEncoder,
}


def check(name: str) -> None:
    """Raises InputError (one line, the valid names) unless `name` is a registered encoder."""
    if name not in ENCODERS:
        raise InputError(f"--config.placer.policy.encoder: unknown encoder {name!r} (valid: {', '.join(ENCODERS)})")


def build(name: str, hidden_size: int, seed: int | None = None) -> keras.layers.Layer:
    """Returns the encoder registered as `name`.

    Raises:
      InputError: unknown name (the message lists the valid ones).
    """
    check(name)
    return ENCODERS[name](hidden_size, seed=seed)
