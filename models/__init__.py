"""TensorFlow builders of the training graphs: RNNLM, NMT, Inception-V3, and a user's Keras model.

`import models` is cheap: TensorFlow is imported only when `build` runs (or
`ModelGraph` is first used).

    from configs import nmt
    graph = models.build(nmt.get_config("tiny").model)
    graph = models.build(models.registry.user_model_config("examples/tiny_cnn.py:tiny_cnn", batch_size=8))
"""

from models.registry import MODEL_NAMES, build

__all__ = ["MODEL_NAMES", "ModelGraph", "build"]


def __getattr__(name):
    if name == "ModelGraph":
        from models.common import ModelGraph  # noqa: PLC0415 (imports TF on demand)

        return ModelGraph
    raise AttributeError(f"module 'models' has no attribute {name!r}")
