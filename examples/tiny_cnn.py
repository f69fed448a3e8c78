"""A small Keras model for the toolkit: a convolutional classifier of 16x16 images.

    placer-extract --model=examples/tiny_cnn.py:tiny_cnn --batch_size=8 --cluster=local:4 --out=tiny.graph.json.gz

The function takes no arguments and returns a compiled tf_keras (Keras 2)
model whose input shapes are fixed except the batch (docs/own_model.md).
"""

import tf_keras


def tiny_cnn(classes: int = 10):
    """A compiled tf_keras CNN: two conv + batch-norm blocks, then a dense classifier."""
    x = inputs = tf_keras.Input(shape=(16, 16, 3), name="image")
    for i, width in enumerate((8, 16)):
        x = tf_keras.layers.Conv2D(width, 3, padding="same", use_bias=False, name=f"conv{i}")(x)
        x = tf_keras.layers.BatchNormalization(name=f"bn{i}")(x)
        x = tf_keras.layers.ReLU(name=f"relu{i}")(x)
        x = tf_keras.layers.MaxPooling2D(name=f"pool{i}")(x)
    x = tf_keras.layers.Flatten(name="flatten")(x)
    outputs = tf_keras.layers.Dense(classes, name="logits")(x)
    model = tf_keras.Model(inputs, outputs, name="tiny_cnn")
    model.compile(
        optimizer=tf_keras.optimizers.SGD(0.01),
        loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model
