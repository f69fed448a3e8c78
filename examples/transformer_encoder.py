"""A Transformer encoder (Vaswani et al. 2017) in tf_keras: 4 layers, d_model 256, classifying sequences.

    placer-extract --model=examples/transformer_encoder.py:transformer_encoder --cluster=local:4 \
        --out=encoder.graph.json.gz

Token ids in, one of 10 classes out: embedding plus learned positions, four
post-norm encoder layers (multi-head self-attention and a feed-forward
block, each with a residual connection, dropout and layer normalisation),
mean pooling and a dense classifier.
"""

import tf_keras

VOCAB = 8000  # tokens
LENGTH = 64  # tokens per sequence
D_MODEL = 256
HEADS = 8
D_FF = 1024  # feed-forward units, 4 x d_model as in Vaswani et al.
LAYERS = 4
CLASSES = 10
DROPOUT = 0.1


def _encoder_layer(x, i: int):
    attention = tf_keras.layers.MultiHeadAttention(HEADS, D_MODEL // HEADS, dropout=DROPOUT, name=f"attention_{i}")
    a = attention(x, x)
    x = tf_keras.layers.LayerNormalization(name=f"norm_a_{i}")(x + tf_keras.layers.Dropout(DROPOUT)(a))
    f = tf_keras.layers.Dense(D_FF, activation="relu", name=f"ff_in_{i}")(x)
    f = tf_keras.layers.Dense(D_MODEL, name=f"ff_out_{i}")(f)
    return tf_keras.layers.LayerNormalization(name=f"norm_f_{i}")(x + tf_keras.layers.Dropout(DROPOUT)(f))


def transformer_encoder():
    """A compiled tf_keras Transformer encoder classifier of LENGTH-token sequences."""
    tokens = tf_keras.Input(shape=(LENGTH,), dtype="int32", name="tokens")
    x = tf_keras.layers.Embedding(VOCAB, D_MODEL, name="embedding")(tokens)
    positions = tf_keras.layers.Embedding(LENGTH, D_MODEL, name="positions")(tf_keras.backend.arange(LENGTH))
    x = x + positions
    for i in range(LAYERS):
        x = _encoder_layer(x, i)
    x = tf_keras.layers.GlobalAveragePooling1D(name="pool")(x)
    logits = tf_keras.layers.Dense(CLASSES, name="logits")(x)
    model = tf_keras.Model(tokens, logits, name="transformer_encoder")
    model.compile(
        optimizer=tf_keras.optimizers.Adam(1e-4),
        loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model
