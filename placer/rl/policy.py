"""The placement policy: a seq2seq LSTM with content-based attention (tf-keras).

Mirhoseini et al. (ICML 2017), section 2: the encoder reads the co-located
groups as a sequence (op-type embedding, output-shape and adjacency features);
the decoder emits one device per group, fed the embedding of the device it
chose for the previous group, and attends over the encoder states. Sampling
controls follow TF's hierarchical placer: a softmax temperature, a tanh
constant bounding the logits, and Gaussian noise on the logits.

Shapes: G groups, K samples, D devices, H hidden units.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tf_keras as keras

from placer.rl import encoders, recurrence

# The policy's name in run.json and summary.json.
NAME = "seq2seq_attention"


class PlacementPolicy(keras.Model):
    """Seq2seq attentional LSTM that maps G groups to G devices.

    The attention is applied after the decoder LSTM (Luong et al. 2015,
    "general" content-based scores), so with the sampled devices known the
    whole decoder runs as one sequence for the REINFORCE gradient; sampling
    runs step by step with the same weights.

    Args:
      vocab_size: op-type vocabulary size (id 0 = out of vocabulary).
      num_devices: D, devices to choose from (from the cluster spec).
      hidden_size: H, LSTM units (the encoder's two directions share H).
      type_embedding_size: width of the op-type embedding.
      device_embedding_size: width of the device embedding fed to the decoder.
      temperature: logits are divided by it before the tanh bound (a
        variable: `set_temperature` anneals it).
      tanh_constant: logits bounded to (-c, c) by c * tanh(x); 0 disables it.
      encoder: name of the group encoder in placer.rl.encoders.
    """

    def __init__(
        self,
        vocab_size: int,
        num_devices: int,
        *,
        hidden_size: int = 512,
        type_embedding_size: int = 32,
        device_embedding_size: int = 32,
        temperature: float = 10.0,
        tanh_constant: float = 5.0,
        seed: int | None = None,
        encoder: str = "bilstm",
    ):
        super().__init__()
        init = keras.initializers.GlorotUniform(seed=seed)
        self.num_devices = int(num_devices)
        self.hidden_size = int(hidden_size)
        self.temperature = tf.Variable(float(temperature), trainable=False, dtype=tf.float32, name="temperature")
        self.tanh_constant = float(tanh_constant)
        self.type_embedding = keras.layers.Embedding(vocab_size, type_embedding_size, embeddings_initializer=init)
        self.input_proj = keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init)
        self.encoder_name = encoder
        self.encoder = encoders.build(encoder, hidden_size, seed=seed)
        self.encoder_proj = keras.layers.Dense(hidden_size, kernel_initializer=init)
        # Index D is the start token fed before the first group.
        self.device_embedding = keras.layers.Embedding(
            num_devices + 1, device_embedding_size, embeddings_initializer=init
        )
        self.decoder = keras.layers.LSTM(hidden_size, return_sequences=True, return_state=True, kernel_initializer=init)
        self.attention_w = keras.layers.Dense(hidden_size, use_bias=False, kernel_initializer=init)
        self.combine = keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init)
        self.output_layer = keras.layers.Dense(num_devices, kernel_initializer=init)

    # ----- pieces ---------------------------------------------------------

    def encode(self, type_ids: tf.Tensor, features: tf.Tensor) -> tf.Tensor:
        """Encodes the groups.

        Args:
          type_ids: [G] int32 op-type ids.
          features: [G, F] float32 numeric features.

        Returns:
          [1, G, H] encoder states.
        """
        x = tf.concat([self.type_embedding(type_ids), tf.cast(features, tf.float32)], axis=-1)
        x = self.input_proj(x[tf.newaxis])
        return self.encoder_proj(self.encoder(x))

    def _keys(self, enc: tf.Tensor) -> tf.Tensor:
        """Attention keys [G, H]: the encoder states through the attention matrix, once per call.

        Luong's "general" score dec W enc^T is computed as dec (enc W^T)^T, which
        costs G H^2 multiply-adds instead of K T H^2 (the same product, summed in
        another order).
        """
        if not self.attention_w.built:
            self.attention_w.build((None, self.hidden_size))
        return tf.matmul(enc[0], self.attention_w.kernel, transpose_b=True)

    def _values(self, enc: tf.Tensor) -> tf.Tensor:
        """Attention values [G, H]: the encoder states through the combine layer's context half, once per call.

        combine([dec, context]) = tanh(dec Wd + context Wc + b) with context = a enc
        (a the attention weights), and (a enc) Wc = a (enc Wc): the context's product
        with Wc costs G H^2 multiply-adds here instead of K T H^2.
        """
        if not self.combine.built:  # built here, in the order calling the layers did: same weights per seed
            self.combine.build((None, self.hidden_size + enc.shape[-1]))
            self.output_layer.build((None, self.hidden_size))
        return tf.matmul(enc[0], self.combine.kernel[self.hidden_size :])

    def _logits(self, dec: tf.Tensor, enc: tf.Tensor, keys: tf.Tensor, values: tf.Tensor | None = None) -> tf.Tensor:
        """Bounded logits from decoder states [..., H], encoder states [1, G, H] and keys [G, H] -> [..., D].

        `values` are `_values(enc)`, computed here when not given. Every product is a 2-D one over the
        decoder states' rows (a batched product broadcast over them would sum its weight gradient afterwards).
        """
        if values is None:
            values = self._values(enc)
        rows = tf.reshape(dec, [-1, self.hidden_size])
        attention = tf.nn.softmax(tf.matmul(rows, keys, transpose_b=True), axis=-1)  # [rows, G]
        hidden = tf.matmul(rows, self.combine.kernel[: self.hidden_size]) + tf.matmul(attention, values)
        hidden = tf.tanh(hidden + self.combine.bias)
        logits = tf.matmul(hidden, self.output_layer.kernel) + self.output_layer.bias
        logits = tf.reshape(logits, tf.concat([tf.shape(dec)[:-1], [self.num_devices]], 0)) / self.temperature
        if self.tanh_constant > 0:
            logits = self.tanh_constant * tf.tanh(logits)
        return logits

    def _input_gates(self, enc: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The decoder LSTM's input part, split by input: ([D + 1, 4H] per previous device, [G, 4H] per group).

        The decoder's input is [device embedding, group encoding]; the encoding is
        the same for all K samples, so its product with the kernel is taken once
        per group rather than once per sample (bias included), and the device part
        is a table of D + 1 rows.
        """
        e = self.device_embedding.output_dim
        if not self.decoder.built:  # built here, after the encoder, as calling the layers did: same weights per seed
            self.device_embedding.build((None,))
            self.decoder.build((None, None, e + self.hidden_size))
        cell = self.decoder.cell
        per_device = tf.matmul(self.device_embedding.embeddings, cell.kernel[:e])
        per_group = tf.matmul(enc[0], cell.kernel[e:]) + cell.bias
        return per_device, per_group

    def _cell(self, z_in: tf.Tensor, h: tf.Tensor, c: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One LSTM step from the input gates [K, 4H]: Keras's gate order (i, f, g, o), sigmoid and tanh."""
        z = z_in + tf.matmul(h, self.decoder.cell.recurrent_kernel)
        i, f, g, o = tf.split(z, 4, axis=-1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        return tf.sigmoid(o) * tf.tanh(c), c

    def _decode(self, enc: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        """Decoder states [K, G, H] with the devices `actions` [K, G] fed back (teacher forcing)."""
        k = tf.shape(actions)[0]
        prev = tf.concat([tf.fill([k, 1], self.num_devices), actions[:, :-1]], axis=1)
        per_device, per_group = self._input_gates(enc)
        z_in = tf.gather(per_device, tf.transpose(prev)) + per_group[:, tf.newaxis]  # [G, K, 4H]
        return tf.transpose(recurrence.lstm(z_in, self.decoder.cell.recurrent_kernel), [1, 0, 2])

    # ----- public API -------------------------------------------------------

    def set_temperature(self, value: float) -> None:
        """Sets the softmax temperature used by sampling and the updates."""
        self.temperature.assign(float(value))

    def log_probs(self, type_ids, features, actions, mask_bias=None, leader=None) -> tuple[tf.Tensor, tf.Tensor]:
        """Log-probabilities of given placements, differentiable.

        Args:
          type_ids: [G] int32.
          features: [G, F] float32.
          actions: [K, G] int32 device per group.
          mask_bias: [G, D] float32 added to the logits (large negative = device not allowed).
          leader: [G] int32 tie leader of each group; a group tied to an earlier
            one copies its device, so only leaders (leader[g] == g) count.

        Returns:
          ([K] sum of log p over leader groups, [K] mean entropy per leader group in nats).
        """
        actions = tf.convert_to_tensor(actions, tf.int32)
        enc = self.encode(type_ids, features)
        logits = self._logits(self._decode(enc, actions), enc, self._keys(enc))
        if mask_bias is not None:
            logits += tf.cast(mask_bias, tf.float32)[tf.newaxis]
        logp = tf.nn.log_softmax(logits, axis=-1)
        chosen = tf.reduce_sum(tf.one_hot(actions, self.num_devices) * logp, axis=-1)
        entropy = -tf.reduce_sum(tf.math.multiply_no_nan(logp, tf.exp(logp)), axis=-1)
        if leader is None:
            return tf.reduce_sum(chosen, axis=1), tf.reduce_mean(entropy, axis=1)
        own = tf.cast(tf.equal(tf.convert_to_tensor(leader, tf.int32), tf.range(tf.shape(actions)[1])), tf.float32)
        return (
            tf.reduce_sum(chosen * own, axis=1),
            tf.reduce_sum(entropy * own, axis=1) / tf.maximum(tf.reduce_sum(own), 1.0),
        )

    @tf.function(reduce_retracing=True, autograph=False)  # the loop written out: converting it costs a second
    def _sample(self, type_ids, features, mask_bias, leader, num_samples, noise_std, greedy, seed):
        enc = self.encode(type_ids, features)
        keys = self._keys(enc)
        per_device, per_group = self._input_gates(enc)
        values = self._values(enc)
        k = num_samples

        def step(t, h, c, prev, out):
            h, c = self._cell(tf.gather(per_device, prev) + per_group[t], h, c)
            logits = self._logits(h, enc, keys, values)
            logits += noise_std * tf.random.stateless_normal(tf.shape(logits), seed=seed + tf.stack([t, 0]))
            logits += mask_bias[t][tf.newaxis]
            sampled = tf.random.stateless_categorical(logits, 1, seed=seed + tf.stack([0, t]), dtype=tf.int32)[:, 0]
            prev = tf.where(greedy, tf.argmax(logits, axis=-1, output_type=tf.int32), sampled)
            # A group tied to an earlier one copies its device.
            prev = tf.cond(leader[t] != t, lambda: out.read(leader[t]), lambda: prev)
            return t + 1, h, c, prev, out.write(t, prev)

        g = tf.shape(type_ids)[0]
        zeros = tf.zeros([k, self.hidden_size])
        out = tf.TensorArray(tf.int32, size=g, clear_after_read=False, element_shape=tf.TensorShape([None]))
        start = (tf.constant(0), zeros, zeros, tf.fill([k], self.num_devices), out)
        out = tf.while_loop(lambda t, *_: t < g, step, start)[-1]
        return tf.transpose(out.stack())

    def sample(
        self,
        type_ids: np.ndarray,
        features: np.ndarray,
        num_samples: int,
        *,
        seed: tuple[int, int] = (0, 0),
        noise_std: float = 0.0,
        mask_bias: np.ndarray | None = None,
        leader: np.ndarray | None = None,
    ) -> np.ndarray:
        """Samples K placements.

        Args:
          type_ids: [G] int32.
          features: [G, F] float32.
          num_samples: K.
          seed: stateless RNG seed pair; the same seed gives the same samples.
          noise_std: standard deviation of Gaussian noise added to the logits.
          mask_bias: [G, D] added to the logits (large negative = not allowed).
          leader: [G] tie leader per group (an earlier group, or itself); a
            tied group takes its leader's device.

        Returns:
          [K, G] int32 device index per group.
        """
        return self._sample(
            tf.constant(type_ids, tf.int32),
            tf.constant(features, tf.float32),
            self._bias(mask_bias, len(type_ids)),
            self._leader(leader, len(type_ids)),
            tf.constant(num_samples, tf.int32),
            tf.constant(noise_std, tf.float32),
            tf.constant(False),
            tf.constant(seed, tf.int32),
        ).numpy()

    def greedy(
        self,
        type_ids: np.ndarray,
        features: np.ndarray,
        mask_bias: np.ndarray | None = None,
        leader: np.ndarray | None = None,
    ) -> np.ndarray:
        """The most likely device per group, step by step: [G] int32, deterministic."""
        return self._sample(
            tf.constant(type_ids, tf.int32),
            tf.constant(features, tf.float32),
            self._bias(mask_bias, len(type_ids)),
            self._leader(leader, len(type_ids)),
            tf.constant(1, tf.int32),
            tf.constant(0.0),
            tf.constant(True),
            tf.constant([0, 0], tf.int32),
        ).numpy()[0]

    @staticmethod
    def _leader(leader, g: int) -> tf.Tensor:
        return tf.range(g, dtype=tf.int32) if leader is None else tf.constant(leader, tf.int32)

    def _bias(self, mask_bias, g: int) -> tf.Tensor:
        if mask_bias is None:
            return tf.zeros([g, self.num_devices], tf.float32)
        return tf.constant(mask_bias, tf.float32)


def build_policy(
    vocab_size: int, feature_dim: int, num_devices: int, config, seed: int | None = None
) -> PlacementPolicy:
    """Creates a policy from `config.placer.policy` and builds its weights.

    Args:
      vocab_size: op-type vocabulary size.
      feature_dim: F, width of the numeric group features.
      num_devices: D.
      config: the policy ConfigDict (hidden_size, embedding sizes, temperature, tanh_constant).
      seed: weight initialisation seed.
    """
    policy = PlacementPolicy(
        vocab_size,
        num_devices,
        hidden_size=config.hidden_size,
        type_embedding_size=config.type_embedding_size,
        device_embedding_size=config.device_embedding_size,
        temperature=config.temperature,
        tanh_constant=config.tanh_constant,
        seed=seed,
        encoder=config.get("encoder", "bilstm"),
    )
    policy.log_probs(np.zeros(2, np.int32), np.zeros((2, feature_dim), np.float32), np.zeros((1, 2), np.int32))
    return policy
