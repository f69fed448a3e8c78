"""The model registry: model name -> builder (TensorFlow is imported on build).

Each builder takes the model ConfigDict (`config.model`) and returns a
`models.common.ModelGraph`.
"""

from __future__ import annotations

import importlib

from placer.core.errors import InputError

# Model name -> module with a `build(config) -> ModelGraph`.
BUILDERS = {
    "inception_v3": "models.inception_v3",
    "nmt": "models.nmt",
    "rnnlm": "models.rnnlm",
}
MODEL_NAMES = tuple(sorted(BUILDERS))


def build(config):
    """Builds the training graph a model config describes.

    Args:
      config: the model ConfigDict (`config.model`, with field `name`); a full
        config with a `model` section is accepted too.

    Returns:
      models.common.ModelGraph.

    Raises:
      InputError: the config has no model name, or an unknown one.
    """
    if "model" in config:
        config = config.model
    name = config.get("name")
    if name not in BUILDERS:
        raise InputError(f"config field model.name: unknown model {name!r} (valid: {', '.join(MODEL_NAMES)})")
    builder = importlib.import_module(BUILDERS[name]).build
    # TF emits some ops differently while op determinism is on (a seeded search turns it on for the
    # process: NMT gains 136 ops), so every model is built with it off: one config, one graph, in
    # every process and in the costed-graph cache.
    from tensorflow.python.framework import config as tf_config  # noqa: PLC0415 (TF only on build)

    if not tf_config.is_op_determinism_enabled():
        return builder(config)
    tf_config.disable_op_determinism()
    try:
        return builder(config)
    finally:
        tf_config.enable_op_determinism()
