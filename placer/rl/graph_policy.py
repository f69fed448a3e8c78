"""A placement policy that reads the group graph and scores devices by their features (tf-keras).

The encoder is message passing over the group graph (Gilmer et al. 2017,
"Neural Message Passing"; used for placement by Placeto, Addanki et al. 2019,
and GDP, Zhou et al. 2019): each layer sums messages from producers (forward
edges) and from consumers (backward edges), each message a function of the
neighbour's state and the bytes on the edge, divided by the degree so that
the scale does not grow with the graph. The decoder embeds every device from
its features (type, speed, memory, links, rank among its type) and scores
each group state against each device embedding, as GiPH (Hu et al. 2023)
does, so the same weights serve any number of devices. Groups are placed
independently given the graph encoding; a group tied to an earlier one takes
its device.

Shapes: G groups, E edges, K samples, D devices, H hidden units.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tf_keras as keras

from placer.rl import graph_features

NAME = "graph_device_scoring"


class GraphEncoder(keras.layers.Layer):
    """`layers` rounds of degree-normalised message passing along forward and backward edges.

    Args:
      hidden_size: H.
      seed: weight initialisation seed.
      layers: rounds of message passing.
    """

    def __init__(self, hidden_size: int, seed: int | None = None, layers: int = 3, **kwargs):
        super().__init__(**kwargs)
        init = keras.initializers.GlorotUniform(seed=seed)
        dense = lambda: keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init)  # noqa: E731
        self.forward = [dense() for _ in range(layers)]
        self.backward = [dense() for _ in range(layers)]
        self.update = [
            keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init) for _ in range(layers)
        ]

    def call(self, inputs):
        """(h [G, H], src [E], dst [E], edges [E, 1]) -> [G, H] states."""
        h, src, dst, edges = inputs
        g = tf.shape(h)[0]
        ones = tf.ones_like(edges[:, 0])
        in_deg = tf.maximum(tf.math.unsorted_segment_sum(ones, dst, g), 1.0)[:, None]
        out_deg = tf.maximum(tf.math.unsorted_segment_sum(ones, src, g), 1.0)[:, None]
        for fwd, bwd, upd in zip(self.forward, self.backward, self.update, strict=True):
            m_in = fwd(tf.concat([tf.gather(h, src), edges], axis=-1))
            m_out = bwd(tf.concat([tf.gather(h, dst), edges], axis=-1))
            agg_in = tf.math.unsorted_segment_sum(m_in, dst, g) / in_deg
            agg_out = tf.math.unsorted_segment_sum(m_out, src, g) / out_deg
            h = h + upd(tf.concat([h, agg_in, agg_out], axis=-1))
        return h


class GraphPolicy(keras.Model):
    """Graph encoder plus device-scoring decoder; one set of weights for any graph and cluster.

    Args:
      hidden_size: H.
      layers: message-passing rounds.
      temperature: logits are divided by it (a variable, like the seq2seq policy's).
      tanh_constant: logits bounded to (-c, c); 0 disables it.
      seed: weight initialisation seed.
    """

    encoder_name = "gnn"
    policy_name = NAME

    def __init__(self, *, hidden_size=64, layers=3, temperature=1.0, tanh_constant=5.0, seed=None):
        super().__init__()
        init = keras.initializers.GlorotUniform(seed=seed)
        self.hidden_size = int(hidden_size)
        self.num_layers = int(layers)
        self.temperature = tf.Variable(float(temperature), trainable=False, dtype=tf.float32, name="temperature")
        self.tanh_constant = float(tanh_constant)
        self.group_in = keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init)
        self.encoder = GraphEncoder(hidden_size, seed=seed, layers=layers)
        self.graph_proj = keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init)
        self.device_in = keras.layers.Dense(hidden_size, activation="tanh", kernel_initializer=init)
        self.device_out = keras.layers.Dense(hidden_size, kernel_initializer=init)
        self.query = keras.layers.Dense(hidden_size, kernel_initializer=init)
        self.context: tuple | None = None  # bound GraphInputs tensors, for the seq2seq trainer's interface
        self.group_bias_scale = 0.0  # see `bind`
        self.group_bias: tf.Variable | None = None

    # ----- core -------------------------------------------------------------

    def raw_logits(self, groups, src, dst, edges, devices) -> tf.Tensor:
        """[G, D] scores of each group on each device before the temperature and the bound."""
        h = self.encoder((self.group_in(groups), src, dst, edges))
        pooled = tf.reduce_mean(h, axis=0, keepdims=True)  # the whole graph, so scores see its load
        q = self.query(tf.concat([h, tf.repeat(self.graph_proj(pooled), tf.shape(h)[0], axis=0)], axis=-1))
        k = self.device_out(self.device_in(devices))
        return tf.matmul(q, k, transpose_b=True) / tf.sqrt(float(self.hidden_size))

    def logits(self, groups, src, dst, edges, devices) -> tf.Tensor:
        """[G, D] logits of each group on each device: raw / temperature, bounded to (-c, c) by c tanh(x / c)."""
        logits = self.raw_logits(groups, src, dst, edges, devices) / self.temperature
        if self.tanh_constant > 0:
            logits = self.tanh_constant * tf.tanh(logits / self.tanh_constant)
        return logits

    def unsaturate(self, quantile: float = 90.0) -> float:
        """Raises the temperature so that the bound inputs' logits leave tanh's flat ends; returns it.

        The temperature becomes at least the `quantile` percentile of |raw
        logits| / tanh_constant over the bound graph's groups and devices, so
        most logits sit within the bound and their gradients flow again; the
        order of each group's devices is kept. Unchanged without a bound.
        """
        if self.tanh_constant > 0:
            raw = np.abs(self.raw_logits(*self.context).numpy())
            needed = float(np.percentile(raw, quantile)) / self.tanh_constant
            self.temperature.assign(max(float(self.temperature.numpy()), needed))
        return float(self.temperature.numpy())

    def scores(self, ctx, actions, mask_bias, leader) -> tuple[tf.Tensor, tf.Tensor]:
        """([K] log p of the placements over leader groups, [K] mean entropy per leader group, nats)."""
        logits = self.logits(*ctx) + tf.cast(mask_bias, tf.float32)
        logp = tf.nn.log_softmax(logits, axis=-1)  # [G, D]
        g = tf.shape(logp)[0]
        own = tf.cast(tf.equal(leader, tf.range(g)), tf.float32)
        picked = tf.gather_nd(logp, tf.stack([tf.broadcast_to(tf.range(g), tf.shape(actions)), actions], axis=-1))
        entropy = -tf.reduce_sum(tf.math.multiply_no_nan(logp, tf.exp(logp)), axis=-1)
        n = tf.maximum(tf.reduce_sum(own), 1.0)
        return tf.reduce_sum(picked * own, axis=1), tf.fill([tf.shape(actions)[0]], tf.reduce_sum(entropy * own) / n)

    def draw(self, ctx, mask_bias, leader, num_samples, noise_std, greedy, seed) -> tf.Tensor:
        """[K, G] int32 device per group: sampled (or argmax when `greedy`); tied groups copy their leader."""
        logits = self.logits(*ctx) + tf.cast(mask_bias, tf.float32)
        g, d = tf.shape(logits)[0], tf.shape(logits)[1]
        noisy = logits[None] + noise_std * tf.random.stateless_normal([num_samples, g, d], seed=seed + [0, 1])
        flat = tf.reshape(noisy, [-1, d])
        sampled = tf.reshape(tf.random.stateless_categorical(flat, 1, seed=seed, dtype=tf.int32), [num_samples, g])
        best = tf.argmax(noisy, axis=-1, output_type=tf.int32)
        picked = tf.where(greedy, best, sampled)
        return tf.gather(picked, leader, axis=1)

    # ----- the seq2seq trainer's interface (placer.rl.reinforce.Trainer) --------

    def bind(self, inputs: graph_features.GraphInputs, group_bias_scale: float = 0.0) -> None:
        """Fixes the graph and cluster the trainer's calls refer to.

        Args:
          inputs: the graph and cluster.
          group_bias_scale: when > 0, the trainer's calls add `group_bias_scale`
            times a [G, D] table, zero at first and trained with the rest: a
            preference of each group for each device on this graph alone,
            which the shared weights (one set for every graph) learn slowly.
        """
        self.context = to_tensors(inputs)
        self.group_bias_scale = float(group_bias_scale)
        if self.group_bias_scale > 0:
            shape = [inputs.groups.shape[0], inputs.devices.shape[0]]
            self.group_bias = tf.Variable(tf.zeros(shape), name="group_bias")

    def set_temperature(self, value: float) -> None:
        self.temperature.assign(float(value))

    def _bias(self, mask_bias):
        """The mask's bias (none: zeros) plus the scaled group bias table when `bind` made one."""
        g, d = int(self.context[0].shape[0]), int(self.context[4].shape[0])
        bias = tf.zeros([g, d]) if mask_bias is None else tf.cast(mask_bias, tf.float32)
        if self.group_bias is not None:
            bias = bias + self.group_bias_scale * self.group_bias
        return bias

    def _lead(self, leader):
        g = int(self.context[0].shape[0])
        return tf.range(g) if leader is None else tf.convert_to_tensor(leader, tf.int32)

    def log_probs(self, type_ids, features, actions, mask_bias=None, leader=None):
        """As PlacementPolicy.log_probs; `type_ids` and `features` are ignored (the bound inputs are read)."""
        del type_ids, features
        return self.scores(
            self.context, tf.convert_to_tensor(actions, tf.int32), self._bias(mask_bias), self._lead(leader)
        )

    def sample(self, type_ids, features, num_samples, *, seed=(0, 0), noise_std=0.0, mask_bias=None, leader=None):
        """As PlacementPolicy.sample on the bound inputs: [K, G] int32."""
        del type_ids, features
        s = tf.constant(seed, tf.int32)
        out = self.draw(self.context, self._bias(mask_bias), self._lead(leader), num_samples, noise_std, False, s)
        return out.numpy()

    def greedy(self, type_ids, features, mask_bias=None, leader=None):
        """As PlacementPolicy.greedy on the bound inputs: [G] int32."""
        del type_ids, features
        s = tf.constant([0, 0], tf.int32)
        return self.draw(self.context, self._bias(mask_bias), self._lead(leader), 1, 0.0, True, s).numpy()[0]


def build(policy_config, seed: int | None = None) -> GraphPolicy:
    """A GraphPolicy from `config.placer.policy` (hidden_size, gnn_layers, temperature, tanh_constant), built."""
    policy = GraphPolicy(
        hidden_size=policy_config.get("gnn_hidden_size", 64),
        layers=policy_config.get("gnn_layers", 3),
        temperature=policy_config.get("gnn_temperature", 1.0),
        tanh_constant=policy_config.get("gnn_tanh_constant", 3.0),
        seed=seed,
    )
    f = graph_features.group_width()
    ctx = (
        tf.zeros([2, f]),
        tf.constant([0], tf.int32),
        tf.constant([1], tf.int32),
        tf.zeros([1, 1]),
        tf.zeros([2, len(graph_features.DEVICE_COLUMNS)]),
    )
    policy.logits(*ctx)
    return policy


def sample_numpy(policy: GraphPolicy, ctx, mask_bias: np.ndarray, leader: np.ndarray, k: int, seed, greedy=False):
    """[K, G] int32 placements of a context tuple of tensors (see `to_tensors`)."""
    out = policy.draw(
        ctx,
        tf.constant(mask_bias, tf.float32),
        tf.constant(leader, tf.int32),
        k,
        0.0,
        tf.constant(greedy),
        tf.constant(seed, tf.int32),
    )
    return out.numpy()


def to_tensors(inputs: graph_features.GraphInputs) -> tuple:
    """The GraphInputs as the tuple of tensors `GraphPolicy.logits` takes."""
    return (
        tf.constant(inputs.groups),
        tf.constant(inputs.edge_src),
        tf.constant(inputs.edge_dst),
        tf.constant(inputs.edges),
        tf.constant(inputs.devices),
    )
