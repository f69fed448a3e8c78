"""The suite's Keras models: each function returns a compiled tf_keras model (the `--model=FILE.py:FUNCTION` form).

Image classifiers are `tf_keras.applications` architectures with weights=None,
96x96x3 inputs and 10 classes (96 is at least every architecture's smallest
input: Xception needs 71, InceptionResNetV2 75); the batch (32) is the
suite's setting, not the model's. Sequence models take int32 token ids.
Every model is compiled with plain SGD and a sparse cross-entropy on logits,
so the training step is the same kind for all of them.
"""

from __future__ import annotations

import tf_keras

IMAGE_SIZE = 96  # pixels per side
CLASSES = 10
VOCAB = 10000  # tokens of the sequence models
SEQ_LEN = 32  # tokens per example (source and target alike)
WIDTH = 256  # hidden size of the sequence models


def _compiled(model: tf_keras.Model) -> tf_keras.Model:
    model.compile(
        optimizer=tf_keras.optimizers.legacy.SGD(0.01),
        loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def application(attr: str) -> tf_keras.Model:
    """The compiled `tf_keras.applications.<attr>` classifier (weights=None, 96x96x3, 10 classes, logits)."""
    extra = {"include_preprocessing": False} if attr.startswith(("MobileNetV3", "EfficientNetV2", "RegNet", "ConvNeXt")) else {}  # fmt: skip
    if attr.startswith("MobileNetV3"):
        extra["minimalistic"] = False
    model = getattr(tf_keras.applications, attr)(
        weights=None,
        include_top=True,
        input_shape=(IMAGE_SIZE, IMAGE_SIZE, 3),
        classes=CLASSES,
        classifier_activation=None,
        **extra,
    )
    return _compiled(model)


def resnet50() -> tf_keras.Model:
    """tf_keras.applications.ResNet50 (see `application`)."""
    return application("ResNet50")


def resnet101() -> tf_keras.Model:
    """tf_keras.applications.ResNet101 (see `application`)."""
    return application("ResNet101")


def resnet50v2() -> tf_keras.Model:
    """tf_keras.applications.ResNet50V2 (see `application`)."""
    return application("ResNet50V2")


def resnet101v2() -> tf_keras.Model:
    """tf_keras.applications.ResNet101V2 (see `application`)."""
    return application("ResNet101V2")


def vgg16() -> tf_keras.Model:
    """tf_keras.applications.VGG16 (see `application`)."""
    return application("VGG16")


def vgg19() -> tf_keras.Model:
    """tf_keras.applications.VGG19 (see `application`)."""
    return application("VGG19")


def densenet121() -> tf_keras.Model:
    """tf_keras.applications.DenseNet121 (see `application`)."""
    return application("DenseNet121")


def densenet169() -> tf_keras.Model:
    """tf_keras.applications.DenseNet169 (see `application`)."""
    return application("DenseNet169")


def mobilenet() -> tf_keras.Model:
    """tf_keras.applications.MobileNet (see `application`)."""
    return application("MobileNet")


def mobilenetv2() -> tf_keras.Model:
    """tf_keras.applications.MobileNetV2 (see `application`)."""
    return application("MobileNetV2")


def mobilenetv3small() -> tf_keras.Model:
    """tf_keras.applications.MobileNetV3Small (see `application`)."""
    return application("MobileNetV3Small")


def mobilenetv3large() -> tf_keras.Model:
    """tf_keras.applications.MobileNetV3Large (see `application`)."""
    return application("MobileNetV3Large")


def efficientnetb0() -> tf_keras.Model:
    """tf_keras.applications.EfficientNetB0 (see `application`)."""
    return application("EfficientNetB0")


def efficientnetb1() -> tf_keras.Model:
    """tf_keras.applications.EfficientNetB1 (see `application`)."""
    return application("EfficientNetB1")


def efficientnetv2b0() -> tf_keras.Model:
    """tf_keras.applications.EfficientNetV2B0 (see `application`)."""
    return application("EfficientNetV2B0")


def efficientnetv2b1() -> tf_keras.Model:
    """tf_keras.applications.EfficientNetV2B1 (see `application`)."""
    return application("EfficientNetV2B1")


def nasnetmobile() -> tf_keras.Model:
    """tf_keras.applications.NASNetMobile (see `application`)."""
    return application("NASNetMobile")


def xception() -> tf_keras.Model:
    """tf_keras.applications.Xception (see `application`)."""
    return application("Xception")


def inceptionresnetv2() -> tf_keras.Model:
    """tf_keras.applications.InceptionResNetV2 (see `application`)."""
    return application("InceptionResNetV2")


def convnexttiny() -> tf_keras.Model:
    """tf_keras.applications.ConvNeXtTiny (see `application`)."""
    return application("ConvNeXtTiny")


def regnetx002() -> tf_keras.Model:
    """tf_keras.applications.RegNetX002 (see `application`)."""
    return application("RegNetX002")


def regnety002() -> tf_keras.Model:
    """tf_keras.applications.RegNetY002 (see `application`)."""
    return application("RegNetY002")


def transformer_encoder(layers: int = 2, heads: int = 4) -> tf_keras.Model:
    """A Transformer encoder (Vaswani et al. 2017) classifying token sequences: embedding plus learned
    positions, `layers` post-norm blocks of self-attention and a 4x feed-forward, mean pooling, logits."""
    tokens = tf_keras.Input(shape=(SEQ_LEN,), dtype="int32", name="tokens")
    x = tf_keras.layers.Embedding(VOCAB, WIDTH, name="embed")(tokens)
    x = _PositionAdd(name="add_positions")(x)
    for i in range(layers):
        att = tf_keras.layers.MultiHeadAttention(heads, WIDTH // heads, name=f"attention{i}")(x, x)
        x = tf_keras.layers.LayerNormalization(name=f"norm{i}a")(x + att)
        ff = tf_keras.layers.Dense(4 * WIDTH, activation="relu", name=f"ff{i}a")(x)
        ff = tf_keras.layers.Dense(WIDTH, name=f"ff{i}b")(ff)
        x = tf_keras.layers.LayerNormalization(name=f"norm{i}b")(x + ff)
    x = tf_keras.layers.GlobalAveragePooling1D(name="pool")(x)
    return _compiled(tf_keras.Model(tokens, tf_keras.layers.Dense(CLASSES, name="logits")(x), name="transformer"))


class _PositionAdd(tf_keras.layers.Layer):
    """Adds a learned [sequence, width] position embedding to its input."""

    def build(self, input_shape):
        self.table = self.add_weight("table", shape=tuple(input_shape[1:]), initializer="uniform")

    def call(self, x):
        return x + self.table


def lstm_lm(layers: int = 2) -> tf_keras.Model:
    """An LSTM language model (Zaremba et al. 2014 shape): embedding, `layers` LSTMs, next-token logits."""
    tokens = tf_keras.Input(shape=(SEQ_LEN,), dtype="int32", name="tokens")
    x = tf_keras.layers.Embedding(VOCAB, WIDTH, name="embed")(tokens)
    for i in range(layers):
        x = tf_keras.layers.LSTM(WIDTH, return_sequences=True, unroll=True, name=f"lstm{i}")(x)
    logits = tf_keras.layers.Dense(VOCAB, name="logits")(x)
    return _compiled(tf_keras.Model(tokens, logits, name="lstm_lm"))


def seq2seq_attention() -> tf_keras.Model:
    """An LSTM encoder-decoder with Luong dot attention (Luong et al. 2015): source and (shifted) target
    tokens in, target-token logits out."""
    source = tf_keras.Input(shape=(SEQ_LEN,), dtype="int32", name="source")
    target = tf_keras.Input(shape=(SEQ_LEN,), dtype="int32", name="target")
    enc = tf_keras.layers.Embedding(VOCAB, WIDTH, name="source_embed")(source)
    enc, h, c = tf_keras.layers.LSTM(WIDTH, return_sequences=True, return_state=True, unroll=True, name="encoder")(enc)
    dec = tf_keras.layers.Embedding(VOCAB, WIDTH, name="target_embed")(target)
    dec = tf_keras.layers.LSTM(WIDTH, return_sequences=True, unroll=True, name="decoder")(dec, initial_state=[h, c])
    context = tf_keras.layers.Attention(name="attention")([dec, enc])
    x = tf_keras.layers.Concatenate(name="join")([dec, context])
    x = tf_keras.layers.Dense(WIDTH, activation="tanh", name="attentional")(x)
    logits = tf_keras.layers.Dense(VOCAB, name="logits")(x)
    return _compiled(tf_keras.Model([source, target], logits, name="seq2seq_attention"))
