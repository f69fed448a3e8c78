"""The costed-graph cache key follows everything the costs depend on, TensorFlow's version included."""

from graphs import pipeline
from placer.core import cluster as cluster_lib
from placer.core import configs_util


def test_key_changes_with_the_tensorflow_version(monkeypatch):
    model = configs_util.load_config("configs/nmt.py:tiny").model
    cluster = cluster_lib.load("k80x2")
    assert pipeline.tensorflow_version().startswith("tensorflow")
    first = pipeline._cache_key(model, cluster)
    assert pipeline._cache_key(model, cluster) == first
    monkeypatch.setattr(pipeline, "tensorflow_version", lambda: "tensorflow==0.0.1")
    assert pipeline._cache_key(model, cluster) != first
