"""From a config or a file to a cost-annotated op graph.

Shared by the binaries: a model config is built with TensorFlow, extracted,
and given Grappler costs for the cluster's device types; a graph JSON file
already carries its costs. Costed graphs are cached, keyed by the model
config (and a user's model file), the cluster's device properties, the code
that costs it and the installed TensorFlow version (Grappler's cost model changes between
releases), so a second run skips TF.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
import time

from models import registry
from placer.core import io as graph_io
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

CACHE_DIR = os.environ.get("PLACER_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "placer"))


@dataclasses.dataclass
class Loaded:
    """A graph ready to place.

    Attributes:
      graph: the cost-annotated OpGraph.
      model: the built `models.ModelGraph`, or None when read from a file or the cache.
      seconds: wall time spent building, extracting and costing (s).
      cached: True when the graph came from the cache.
    """

    graph: OpGraph
    model: object | None
    seconds: float
    cached: bool = False


# The code that makes a costed graph: a change to any of it invalidates the cache.
_SOURCES = ("models", "graphs/extract.py", "graphs/costs.py", "graphs/tf_util.py")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tensorflow_version() -> str:
    """The installed TensorFlow distribution's version, read without importing TF ("" if none)."""
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-macos"):
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


def _cache_key(model_config, cluster: Cluster) -> str:
    devices = sorted({(d.type, d.memory_bytes, d.speed, d.peak_gflops, d.memory_bandwidth) for d in cluster.devices})
    h = hashlib.sha256()
    key = {"model": model_config.to_dict(), "devices": devices, "tensorflow": tensorflow_version()}
    h.update(json.dumps(key, sort_keys=True, default=str).encode())
    user_file = registry.source_file(model_config.get("source") or "")
    if user_file and os.path.isfile(user_file):  # a user's model file: its text is part of the key
        with open(user_file, "rb") as fh:
            h.update(fh.read())
    for source in _SOURCES:
        path = os.path.join(_ROOT, source)
        files = (
            sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".py"))
            if os.path.isdir(path)
            else [path]
        )
        for f in files:
            with open(f, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()[:16]


def require_costs(graph: OpGraph, cluster: Cluster, source: str) -> None:
    """Checks that a graph read from a file has op costs for every device type of the cluster.

    A device type without costs would otherwise be left idle without a word.

    Raises:
      InputError: naming `source` and the device types the costs lack.
    """
    need = list(dict.fromkeys(d.type for d in cluster.devices))
    if not graph.device_types or graph.compute_cost.size == 0:
        raise InputError(
            f"{source}: graph {graph.name!r} has no op costs (field 'device_types' is empty); "
            f"write it with placer-extract --costs=grappler --cluster={cluster.name}"
        )
    missing = [t for t in need if t not in graph.device_types]
    if missing:
        raise InputError(
            f"{source}: graph {graph.name!r} has op costs for {', '.join(graph.device_types)}, none for these "
            f"device types of cluster {cluster.name!r} ({', '.join(missing)}); write it with placer-extract "
            f"--cluster={cluster.name}"
        )


def load_graph(
    cluster: Cluster, *, config=None, graph_path: str | None = None, need_model: bool = False, use_cache: bool = True
) -> Loaded:
    """Returns the cost-annotated graph given by a config or a graph JSON file.

    Args:
      cluster: the target cluster (its device types select the cost columns).
      config: a model config (with a `model` section), or None.
      graph_path: a graph JSON file (docs/formats.md), or None.
      need_model: build the TF model even when the cache has the graph (the
        grappler and session backends need it).
      use_cache: read and write the costed-graph cache.

    Raises:
      InputError: neither or both sources given, or a bad file.
    """
    t0 = time.time()
    if (config is None) == (graph_path is None):
        raise InputError("give exactly one of --config and --graph")
    if graph_path is not None:
        graph = graph_io.load(graph_path)
        require_costs(graph, cluster, graph_path)
        return Loaded(graph, None, time.time() - t0)
    path = os.path.join(CACHE_DIR, f"{config.model.name}-{_cache_key(config.model, cluster)}.graph.json.gz")
    if use_cache and not need_model and os.path.exists(path):
        try:
            return Loaded(graph_io.load(path), None, time.time() - t0, cached=True)
        except InputError:
            pass  # a stale or broken cache entry is rebuilt below
    import models  # noqa: PLC0415 (TensorFlow: only a config is built; a graph file needs none)
    from graphs import costs, extract  # noqa: PLC0415

    model = models.build(config.model)
    graph = extract.extract(model.metagraph, name=model.name)
    graph = costs.grappler_costs(model.metagraph, graph, cluster)
    if use_cache:
        graph_io.save(graph, path)
    return Loaded(graph, model, time.time() - t0)
