"""NMT: an attentional LSTM encoder-decoder, statically unrolled over time.

Mirhoseini et al. 2017 (section 4) place a neural machine translation model
with attention (Bahdanau et al. 2015; sizes after Wu et al. 2016, GNMT) with
2, 4 and 8 layers. Encoder and decoder each have `num_layers` LSTM layers;
the decoder's first layer reads the target embedding and the attention
context, Bahdanau's additive attention is queried with the top decoder
layer's previous output, and the softmax reads the top output and the
context. Decoder layer i starts from encoder layer i's final state
(Sutskever et al. 2014).

Name scopes (the expert placement matches them):
  input/                       synthetic source and target ids
  encoder/embedding/, decoder/embedding/
  encoder/layer_<i>/t_<k>/     encoder layer i, source step k
  decoder/layer_<i>/t_<k>/     decoder layer i, target step k
  attention/                   keys, and attention/t_<k>/ per target step
  softmax/, loss/
"""

from __future__ import annotations

import tensorflow as tf

from models.common import LSTMLayer, ModelGraph, finish, token_ids, weight


def _zeros_var(name: str, shape: list[int]) -> tf.Variable:
    return tf.compat.v1.get_variable(name, shape, tf.float32, tf.compat.v1.zeros_initializer(), use_resource=True)


def _encoder(xs, layers, hidden, batch):
    """Runs the stacked encoder; returns top outputs and per-layer final (h, c)."""
    finals = []
    in_size = xs[0].shape[-1]
    with tf.compat.v1.variable_scope("encoder"):
        for i in range(layers):
            with tf.compat.v1.variable_scope(f"layer_{i}"):
                layer = LSTMLayer(in_size, hidden)
                h, c = layer.zero_state(batch)
                outs = []
                for k, x in enumerate(xs):
                    with tf.compat.v1.name_scope(f"t_{k}"):
                        h, c = layer.step(x, h, c)
                    outs.append(h)
            finals.append((h, c))
            xs, in_size = outs, hidden
    return xs, finals


class _Attention:
    """Bahdanau et al. 2015 additive attention over the encoder's top outputs."""

    def __init__(self, memory: list[tf.Tensor], batch: int, hidden: int, attention_size: int):
        with tf.compat.v1.variable_scope("attention"):
            self.w_query = weight("query_kernel", [hidden, attention_size]).read_value()
            w_keys = weight("keys_kernel", [hidden, attention_size])
            self.v = weight("score_vector", [attention_size]).read_value()
            self.memory = tf.stack(memory, axis=1)  # [batch, src_len, hidden]
            b, s = batch, len(memory)
            keys = tf.matmul(tf.reshape(self.memory, [-1, hidden]), w_keys)
            self.keys = tf.reshape(keys, [b, s, attention_size], name="keys")

    def context(self, query: tf.Tensor, step: int) -> tf.Tensor:
        """Returns the [batch, hidden] context for a [batch, hidden] query."""
        with tf.compat.v1.name_scope(f"attention/t_{step}/"):
            q = tf.expand_dims(tf.matmul(query, self.w_query), 1)
            scores = tf.reduce_sum(self.v * tf.tanh(self.keys + q), axis=2)
            alpha = tf.expand_dims(tf.nn.softmax(scores), 1)  # [batch, 1, src_len]
            return tf.squeeze(tf.matmul(alpha, self.memory), 1)


def build(config) -> ModelGraph:
    """Builds the NMT training graph.

    Args:
      config: the model ConfigDict with fields num_layers, hidden_size,
        embedding_size, attention_size, source_vocab_size, target_vocab_size,
        batch_size, source_length, target_length, optimizer, learning_rate
        and seed.

    Returns:
      The ModelGraph named "nmt".
    """
    layers, hidden = int(config.num_layers), int(config.hidden_size)
    emb_size, att_size = int(config.embedding_size), int(config.attention_size)
    src_vocab, tgt_vocab = int(config.source_vocab_size), int(config.target_vocab_size)
    batch, src_len, tgt_len = int(config.batch_size), int(config.source_length), int(config.target_length)
    seed = int(config.get("seed", 1))
    graph = tf.Graph()
    with graph.as_default():
        # A graph-level seed: with TF op determinism on (a seeded search), unseeded random ops are refused.
        tf.compat.v1.set_random_seed(seed)
        with tf.compat.v1.name_scope("input"):
            src = token_ids("source_ids", [batch, src_len], src_vocab, seed)
            tgt = token_ids("target_ids", [batch, tgt_len + 1], tgt_vocab, seed + 1)
            dec_in, targets = tgt[:, :tgt_len], tgt[:, 1:]
        with tf.compat.v1.variable_scope("encoder/embedding"):
            src_x = tf.unstack(tf.nn.embedding_lookup(weight("table", [src_vocab, emb_size]), src), axis=1)
        with tf.compat.v1.variable_scope("decoder/embedding"):
            tgt_x = tf.unstack(tf.nn.embedding_lookup(weight("table", [tgt_vocab, emb_size]), dec_in), axis=1)
        memory, finals = _encoder(src_x, layers, hidden, batch)
        attention = _Attention(memory, batch, hidden, att_size)
        with tf.compat.v1.variable_scope("decoder"):
            cells = []
            for i in range(layers):
                with tf.compat.v1.variable_scope(f"layer_{i}"):
                    cells.append(LSTMLayer(emb_size + hidden if i == 0 else hidden, hidden))
        states = list(finals)
        query = finals[-1][0]
        tops = []
        for k in range(tgt_len):
            ctx = attention.context(query, k)
            x = None
            for i, cell in enumerate(cells):
                with tf.compat.v1.name_scope(f"decoder/layer_{i}/t_{k}/"):
                    inp = tf.concat([tgt_x[k], ctx], axis=1) if i == 0 else x
                    h, c = cell.step(inp, *states[i])
                states[i] = (h, c)
                x = h
            query = x
            tops.append(tf.concat([x, ctx], axis=1, name=f"attention/t_{k}/output"))
        with tf.compat.v1.variable_scope("softmax"):
            w = weight("kernel", [2 * hidden, tgt_vocab])
            logits = tf.nn.bias_add(tf.matmul(tf.concat(tops, axis=0), w), _zeros_var("bias", [tgt_vocab]))
        with tf.compat.v1.name_scope("loss"):
            labels = tf.reshape(tf.transpose(targets), [-1])
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            loss = tf.reduce_mean(xent, name="loss")
        return finish("nmt", graph, loss, config)
