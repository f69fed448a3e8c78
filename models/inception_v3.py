"""Inception-V3 (Szegedy et al. 2016) training graph, from tf_keras.applications.

Mirhoseini et al. 2017 (section 4) place Inception-V3 at batch size 32. The
Keras model is built inside a fresh tf.Graph in graph mode; the loss is the
cross-entropy on synthetic images and labels made in the graph, and a
tf.compat.v1.train optimizer adds the backward pass and the update. Batch-norm
moving averages run with every step. Layer names are Keras's own
("conv2d_<n>", "batch_normalization_<n>", "mixed<n>", "predictions"); the
input tensors sit under input/ and the loss under loss/.
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras

from models.common import ModelGraph, finish


def build(config) -> ModelGraph:
    """Builds the Inception-V3 training graph.

    Args:
      config: the model ConfigDict with fields batch_size, image_size (pixels
        per side, at least 75 for Keras's Inception-V3), num_classes,
        optimizer, learning_rate and seed.

    Returns:
      The ModelGraph named "inception_v3".
    """
    batch, size, classes = int(config.batch_size), int(config.image_size), int(config.num_classes)
    seed = int(config.get("seed", 1))
    graph = tf.Graph()
    with graph.as_default():
        # A graph-level seed: with TF op determinism on (a seeded search), unseeded random ops are refused.
        tf.compat.v1.set_random_seed(seed)
        with tf.compat.v1.name_scope("input"):
            images = tf.random.stateless_uniform(
                [batch, size, size, 3], seed=[seed, 0], minval=-1.0, maxval=1.0, name="images"
            )
            labels = tf.random.stateless_uniform(
                [batch], seed=[seed, 1], minval=0, maxval=classes, dtype=tf.int32, name="labels"
            )
        # Building on `input_tensor` (not calling the model on it) keeps one
        # copy of the forward ops and no Keras Input placeholder; the learning
        # phase scope puts batch norm in training mode.
        with tf_keras.backend.learning_phase_scope(1):
            model = tf_keras.applications.InceptionV3(
                weights=None, include_top=True, input_tensor=images, classes=classes, classifier_activation=None
            )
        logits = model.output
        with tf.compat.v1.name_scope("loss"):
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            loss = tf.reduce_mean(xent, name="loss")
        updates = [u if isinstance(u, tf.Operation) else u.op for u in model.updates]
        return finish("inception_v3", graph, loss, config, extra_updates=updates)
