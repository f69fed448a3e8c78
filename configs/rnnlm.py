"""RNNLM config: `--config=configs/rnnlm.py[:VARIANT]`.

Variants: "" = paper size (2 layers), "tiny" = a graph that builds in about
a second, "layers=N" overrides the layer count (the paper uses 2 and 4),
"batch=N" the batch size; tokens combine with commas, e.g. "tiny,layers=4".
Sources: Mirhoseini et al. 2017 section 4 and Table 1 ("paper"), Jozefowicz
et al. 2016 "Exploring the limits of language modeling" ("Jozefowicz").
"""

import ml_collections

from configs import common


def get_config(variant: str = "") -> ml_collections.ConfigDict:
    """Returns the RNNLM config for `variant` (see the module docstring)."""
    tiny, over = common.parse_variant(variant)
    config = ml_collections.ConfigDict()
    m = config.model = ml_collections.ConfigDict()
    m.name = "rnnlm"
    m.num_layers = 2  # LSTM layers; paper: 2 and 4.
    m.hidden_size = 2048  # units per LSTM layer; Jozefowicz (LSTM-2048-512).
    m.embedding_size = 512  # word embedding width; Jozefowicz (the 512 of LSTM-2048-512).
    m.vocab_size = 40000  # words; our choice: a dense softmax (Jozefowicz's 793K words needs sampled softmax).
    m.batch_size = 64  # sequences per step; paper Table 1 "RNNLM (batch 64)".
    m.num_steps = 20  # unrolled time steps; Jozefowicz (truncated BPTT over 20 steps).
    m.optimizer = "sgd"  # sgd | adam; our choice (plain SGD as in Zaremba et al. 2014).
    m.learning_rate = 1.0  # SGD step size; Zaremba et al. 2014.
    m.seed = 1  # seed of the synthetic token ids; our choice.
    if tiny:
        m.hidden_size = 16  # our choice: builds and runs in about a second.
        m.embedding_size = 8
        m.vocab_size = 50
        m.batch_size = 4
        m.num_steps = 3
        m.learning_rate = 0.5
    m.num_layers = over.get("layers", m.num_layers)
    m.batch_size = over.get("batch", m.batch_size)
    return common.attach(config)
