"""NMT config: `--config=configs/nmt.py[:VARIANT]`.

Variants: "" = paper size with 2 layers (the first NMT row of the paper's
Table 1; the paper also uses 4 and 8), "tiny" = a graph that builds in about
a second, "layers=N" overrides the layer count of both encoder and decoder,
"batch=N" the batch size; tokens combine with commas, e.g. "tiny,layers=4".
Sources: Mirhoseini et al. 2017 section 4 and Table 1 ("paper"), Wu et al.
2016 GNMT ("GNMT"), Bahdanau et al. 2015 ("Bahdanau").
"""

import ml_collections

from configs import common


def get_config(variant: str = "") -> ml_collections.ConfigDict:
    """Returns the NMT config for `variant` (see the module docstring)."""
    tiny, over = common.parse_variant(variant)
    config = ml_collections.ConfigDict()
    m = config.model = ml_collections.ConfigDict()
    m.name = "nmt"
    m.num_layers = 2  # LSTM layers in the encoder and in the decoder each; paper: 2, 4 and 8.
    m.hidden_size = 1024  # units per LSTM layer; GNMT.
    m.embedding_size = 1024  # word embedding width; GNMT.
    m.attention_size = 1024  # hidden units of the additive attention network; GNMT, Bahdanau form.
    m.source_vocab_size = 32000  # wordpieces; GNMT (32K wordpieces, WMT'14 En-De as in the paper).
    m.target_vocab_size = 32000  # wordpieces; GNMT.
    m.batch_size = 64  # sentence pairs per step; paper Table 1 "NMT (batch 64)".
    m.source_length = 40  # source tokens per sentence (unrolled steps); our choice.
    m.target_length = 40  # target tokens per sentence (unrolled steps); our choice.
    m.optimizer = "sgd"  # sgd | adam; our choice.
    m.learning_rate = 0.5  # step size; our choice.
    m.seed = 1  # seed of the synthetic token ids; our choice.
    if tiny:
        m.hidden_size = 16  # our choice: builds and runs in about a second.
        m.embedding_size = 8
        m.attention_size = 8
        m.source_vocab_size = 50
        m.target_vocab_size = 40
        m.batch_size = 4
        m.source_length = 3
        m.target_length = 2
    m.num_layers = over.get("layers", m.num_layers)
    m.batch_size = over.get("batch", m.batch_size)
    return common.attach(config)
