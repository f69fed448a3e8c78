"""The model registry: every model is a source, "module:function", "FILE.py:FUNCTION" or "FILE.keras".

The three built-in models are entries like a user's model: `BUILDERS` maps
their names to sources. A model config (`config.model`) names its source in
field `source`, or a built-in by `name`. TensorFlow is imported on build.

What a source's function returns decides how it becomes a training graph:

  * a `models.common.ModelGraph` (the built-ins: `build(model_config)`, the
    function takes the model config): used as it is;
  * a compiled tf_keras model (a user's `FUNCTION()`, no arguments, or a
    saved `.keras` file): one training step is built on synthetic data
    (models/keras_step.py), `model_config.batch_size` examples per step.
"""

from __future__ import annotations

import os

import ml_collections

from placer.core.errors import InputError

# Model name -> source of its builder, `build(model_config) -> ModelGraph`.
BUILDERS = {
    "inception_v3": "models.inception_v3:build",
    "nmt": "models.nmt:build",
    "rnnlm": "models.rnnlm:build",
}
MODEL_NAMES = tuple(sorted(BUILDERS))
DEFAULT_BATCH_SIZE = 32  # examples per step of a user's model; Mirhoseini et al. 2017 train Inception-V3 at 32.
KERAS_SUFFIX = ".keras"


def source_file(source: str) -> str | None:
    """The file a source names ("FILE.py:FUNCTION" or "FILE.keras"), or None for "module:function"."""
    if source.endswith(KERAS_SUFFIX):
        return source
    path = source.rpartition(":")[0]
    return path if path.endswith(".py") else None


def user_model_config(spec: str, batch_size: int = DEFAULT_BATCH_SIZE, seed: int = 1) -> ml_collections.ConfigDict:
    """The model config of `--model=SPEC`: "FILE.py:FUNCTION", "module:function" or "FILE.keras".

    The graph is named after the function (after the file for .keras); a
    file is named by its absolute path, so a run can be resumed from any folder.

    Raises:
      InputError: a malformed spec or a missing file.
    """
    spec = spec.strip()
    if spec.endswith(KERAS_SUFFIX):
        path, function = spec, ""
    else:
        path, sep, function = spec.rpartition(":")
        if not sep or not path or not function.isidentifier():
            raise InputError(
                f"--model: {spec!r} is neither FILE.py:FUNCTION, module:FUNCTION nor FILE.keras "
                "(e.g. --model=examples/tiny_cnn.py:tiny_cnn)"
            )
    if path.endswith((".py", KERAS_SUFFIX)):
        if not os.path.isfile(path):
            raise InputError(f"--model: {path}: no such file")
        path = os.path.abspath(path)
    c = ml_collections.ConfigDict()
    c.name = function or os.path.basename(path)[: -len(KERAS_SUFFIX)]
    c.source = f"{path}:{function}" if function else path
    c.batch_size = int(batch_size)  # examples per step (--batch_size)
    c.seed = int(seed)  # seed of the synthetic inputs and targets
    return c


def source_of(config) -> str:
    """The source a model config builds from: its `source`, else its built-in `name`'s.

    Raises:
      InputError: neither a source nor a known name.
    """
    source = config.get("source")
    if source:
        return source
    name = config.get("name")
    if name not in BUILDERS:
        raise InputError(f"config field model.name: unknown model {name!r} (valid: {', '.join(MODEL_NAMES)})")
    return BUILDERS[name]


def build(config):
    """Builds the training graph a model config describes.

    Args:
      config: the model ConfigDict (`config.model`, with field `name` and
        optionally `source`); a full config with a `model` section is accepted too.

    Returns:
      models.common.ModelGraph.

    Raises:
      InputError: no model, an unknown one, or a source that does not give a
        trainable model (the message names the file, the function and the problem).
    """
    if "model" in config:
        config = config.model
    source = source_of(config)
    # TF emits some ops differently while op determinism is on (a seeded search turns it on for the
    # process: NMT gains 136 ops), so every model is built with it off: one config, one graph, in
    # every process and in the costed-graph cache.
    from tensorflow.python.framework import config as tf_config  # noqa: PLC0415 (TF only on build)

    from models.sources import build as build_source  # noqa: PLC0415 (imports TensorFlow)

    if not tf_config.is_op_determinism_enabled():
        return build_source(source, config)
    tf_config.disable_op_determinism()
    try:
        return build_source(source, config)
    finally:
        tf_config.enable_op_determinism()
