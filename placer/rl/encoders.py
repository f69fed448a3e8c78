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

import tf_keras as keras

from placer.core.errors import InputError
from placer.rl import graph_policy


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
        """[1, G, H] inputs -> [1, G, 2 * (H // 2)] states."""
        return self.rnn(x)


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
