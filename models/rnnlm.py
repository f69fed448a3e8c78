"""RNNLM: a multi-layer LSTM language model, statically unrolled over time.

Mirhoseini et al. 2017 (section 4) place an RNNLM (Zaremba et al. 2014;
Jozefowicz et al. 2016) with 2 and 4 LSTM layers. Every time step of every
layer is its own ops under `rnn/layer_<i>/t_<k>/`, so each LSTM cell of the
grid can go to its own device, as in the paper.

Name scopes (the expert placement matches them):
  input/             synthetic token ids
  embedding/         the embedding table and its lookup
  rnn/layer_<i>/     layer i's weights; t_<k>/ its step k
  softmax/           output projection over the vocabulary
  loss/              cross-entropy
"""

from __future__ import annotations

import tensorflow as tf

from models.common import LSTMLayer, ModelGraph, finish, token_ids, weight


def build(config) -> ModelGraph:
    """Builds the RNNLM training graph.

    Args:
      config: the model ConfigDict with fields num_layers, hidden_size,
        embedding_size, vocab_size, batch_size, num_steps, optimizer,
        learning_rate and seed.

    Returns:
      The ModelGraph named "rnnlm".
    """
    layers, hidden = int(config.num_layers), int(config.hidden_size)
    emb_size, vocab = int(config.embedding_size), int(config.vocab_size)
    batch, steps = int(config.batch_size), int(config.num_steps)
    graph = tf.Graph()
    with graph.as_default():
        # A graph-level seed: with TF op determinism on (a seeded search), unseeded random ops are refused.
        tf.compat.v1.set_random_seed(int(config.get("seed", 1)))
        with tf.compat.v1.name_scope("input"):
            ids = token_ids("ids", [batch, steps + 1], vocab, int(config.get("seed", 1)))
            inputs, targets = ids[:, :steps], ids[:, 1:]
        with tf.compat.v1.variable_scope("embedding"):
            table = weight("table", [vocab, emb_size])
            xs = tf.unstack(tf.nn.embedding_lookup(table, inputs), axis=1)
        with tf.compat.v1.variable_scope("rnn"):
            in_size = emb_size
            for i in range(layers):
                with tf.compat.v1.variable_scope(f"layer_{i}"):
                    layer = LSTMLayer(in_size, hidden)
                    h, c = layer.zero_state(batch)
                    outs = []
                    for k in range(steps):
                        with tf.compat.v1.name_scope(f"t_{k}"):
                            h, c = layer.step(xs[k], h, c)
                        outs.append(h)
                xs, in_size = outs, hidden
        with tf.compat.v1.variable_scope("softmax"):
            w = weight("kernel", [hidden, vocab])
            b = tf.compat.v1.get_variable(
                "bias", [vocab], tf.float32, tf.compat.v1.zeros_initializer(), use_resource=True
            )
            logits = tf.nn.bias_add(tf.matmul(tf.concat(xs, axis=0), w), b)  # [steps * batch, vocab], time-major
        with tf.compat.v1.name_scope("loss"):
            labels = tf.reshape(tf.transpose(targets), [-1])
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            loss = tf.reduce_mean(xent, name="loss")
        return finish("rnnlm", graph, loss, config)
