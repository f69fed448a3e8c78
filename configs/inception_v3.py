"""Inception-V3 config: `--config=configs/inception_v3.py[:VARIANT]`.

Variants: "" = paper size (batch 32, 299x299 images), "tiny" = batch 2 of
75x75 images (the smallest input Keras's Inception-V3 accepts) and 10
classes, "batch=N" overrides the batch size; tokens combine with commas.
Sources: Mirhoseini et al. 2017 section 4 ("paper"), Szegedy et al. 2016
"Rethinking the Inception architecture" ("Szegedy").
"""

import ml_collections

from configs import common


def get_config(variant: str = "") -> ml_collections.ConfigDict:
    """Returns the Inception-V3 config for `variant` (see the module docstring)."""
    tiny, over = common.parse_variant(variant, keys=("batch",))
    config = ml_collections.ConfigDict()
    m = config.model = ml_collections.ConfigDict()
    m.name = "inception_v3"
    m.batch_size = 32  # images per step; paper Table 1 "Inception-V3 (batch 32)".
    m.image_size = 299  # pixels per side; Szegedy.
    m.num_classes = 1000  # ImageNet classes; paper trains on ImageNet.
    m.optimizer = "sgd"  # sgd | adam; our choice (Szegedy use RMSProp, not offered here).
    m.learning_rate = 0.045  # step size; Szegedy's initial rate.
    m.seed = 1  # seed of the synthetic images and labels; our choice.
    if tiny:
        m.batch_size = 2  # our choice: the smallest graph Keras allows.
        m.image_size = 75
        m.num_classes = 10
        m.learning_rate = 0.01
    m.batch_size = over.get("batch", m.batch_size)
    return common.attach(config)
