"""Model functions for the tests of --model=FILE.py:FUNCTION: a tiny model that trains, and one per mistake."""

import keras
import tensorflow as tf
import tf_keras


def mlp():
    """4 features -> Dense(8) -> batch norm -> ReLU -> Dense(3) softmax; SGD on sparse cross-entropy.

    The last layer starts at zero: the first step's softmax is uniform, whatever the random weights before it.
    """
    x = inputs = tf_keras.Input(shape=(4,), name="features")
    x = tf_keras.layers.Dense(8, name="hidden")(x)
    x = tf_keras.layers.BatchNormalization(name="bn")(x)
    x = tf_keras.layers.ReLU(name="relu")(x)
    outputs = tf_keras.layers.Dense(3, activation="softmax", kernel_initializer="zeros", name="probabilities")(x)
    model = tf_keras.Model(inputs, outputs, name="mlp")
    model.compile(optimizer=tf_keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    return model


def two_heads():
    """Two inputs (token ids, floats) and two outputs (classes, a regression), losses by output name."""
    tokens = tf_keras.Input(shape=(5,), dtype="int32", name="tokens")
    extra = tf_keras.Input(shape=(2,), name="extra")
    x = tf_keras.layers.GlobalAveragePooling1D()(tf_keras.layers.Embedding(7, 4, name="embed")(tokens))
    x = tf_keras.layers.Concatenate()([x, extra])
    classes = tf_keras.layers.Dense(3, activation="softmax", name="classes")(x)
    value = tf_keras.layers.Dense(1, name="value")(x)
    model = tf_keras.Model([tokens, extra], [classes, value])
    model.compile(tf_keras.optimizers.Adam(0.01), loss={"classes": "categorical_crossentropy", "value": "mse"})
    return model


def takes_arguments(width):
    return mlp()


def raises():
    raise RuntimeError("out of coffee")


def not_a_model():
    return "a model, honestly"


def uncompiled():
    return tf_keras.Sequential([tf_keras.Input(shape=(4,)), tf_keras.layers.Dense(2)])


def unknown_shape():
    model = tf_keras.Sequential([tf_keras.Input(shape=(None, 4)), tf_keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    return model


def needs_feed():
    scale = tf.compat.v1.placeholder(tf.float32, [], name="scale")
    x = inputs = tf_keras.Input(shape=(4,))
    x = tf_keras.layers.Lambda(lambda t: t * scale)(x)
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(x))
    model.compile("sgd", "mse")
    return model


def keras3_mlp():
    """The mlp in Keras 3 (`keras`, the TensorFlow backend)."""
    x = inputs = keras.Input(shape=(4,))
    x = keras.layers.Dense(8, name="k3_hidden")(x)
    x = keras.layers.BatchNormalization(name="k3_bn")(x)
    outputs = keras.layers.Dense(3, activation="softmax", name="k3_logits")(keras.layers.ReLU()(x))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    return model


def keras3_uncompiled():
    return keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(2)])
