"""From a config or a file to a cost-annotated op graph and a placement problem.

Shared by the binaries: a model config is built with TensorFlow, extracted,
and given Grappler costs for the cluster's device types; a graph JSON file
already carries its costs. Costed graphs are cached, keyed by the model
config and the cluster's device properties, so a second run skips TF.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time

import numpy as np

from graphs.errors import InputError
from graphs.op_graph import OpGraph
from placer.cluster import Cluster

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
_SOURCES = ("models", "graphs/extract.py", "graphs/costs.py", "placer/measure/tf_util.py")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cache_key(model_config, cluster: Cluster) -> str:
    devices = sorted({(d.type, d.memory_bytes, d.speed, d.peak_gflops, d.memory_bandwidth) for d in cluster.devices})
    h = hashlib.sha256()
    h.update(json.dumps({"model": model_config.to_dict(), "devices": devices}, sort_keys=True, default=str).encode())
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
    from graphs import io as graph_io  # noqa: PLC0415

    t0 = time.time()
    if (config is None) == (graph_path is None):
        raise InputError("give exactly one of --config and --graph")
    if graph_path is not None:
        return Loaded(graph_io.load(graph_path), None, time.time() - t0)
    path = os.path.join(CACHE_DIR, f"{config.model.name}-{_cache_key(config.model, cluster)}.graph.json.gz")
    if use_cache and not need_model and os.path.exists(path):
        try:
            return Loaded(graph_io.load(path), None, time.time() - t0, cached=True)
        except InputError:
            pass  # a stale or broken cache entry is rebuilt below
    import models  # noqa: PLC0415
    from graphs import costs, extract  # noqa: PLC0415

    model = models.build(config.model)
    graph = extract.extract(model.metagraph, name=model.name)
    graph = costs.grappler_costs(model.metagraph, graph, cluster)
    if use_cache:
        graph_io.save(graph, path)
    return Loaded(graph, model, time.time() - t0)


def op_device_ok(graph: OpGraph, cluster: Cluster) -> np.ndarray:
    """[n_ops, D] bool: the op has a cost (a kernel) for the device's type."""
    return np.stack([~np.isnan(graph.cost_for(d.type)) for d in cluster.devices], axis=1)


def make_problem(graph: OpGraph, cluster: Cluster, placer_config, op_colors: np.ndarray | None = None):
    """Groups the graph and builds the policy's inputs.

    Args:
      graph: cost-annotated OpGraph.
      cluster: the target cluster.
      placer_config: `config.placer` (its grouping section is used).
      op_colors: [n_ops] device per op of a placement that must stay
        expressible group by group (the warm start's), or None.

    Returns:
      (placer.reinforce.Problem, graphs.grouping.Grouping)
    """
    from graphs import features, grouping  # noqa: PLC0415
    from placer import rl_math  # noqa: PLC0415
    from placer.reinforce import Problem  # noqa: PLC0415

    gc = placer_config.grouping
    groups = grouping.group(
        graph,
        merge_single_consumer=gc.merge_single_consumer,
        max_group_ops=gc.max_group_ops,
        target_groups=gc.get("target_groups", 0),
        op_colors=op_colors,
    )
    feats = features.features(graph, groups)
    leader = np.asarray(groups.tie, np.int32)
    # A tie class can only go where all of its groups can run.
    allowed = rl_math.group_device_mask(leader[groups.op_group], groups.num_groups, op_device_ok(graph, cluster))
    problem = Problem(
        graph=graph,
        op_group=np.asarray(groups.op_group),
        type_ids=np.asarray(feats.type_ids),
        features=np.asarray(feats.matrix(), dtype=np.float32),
        vocab_size=len(feats.vocab),
        device_names=cluster.device_names,
        allowed=allowed[leader],
        leader=leader,
        op_level=placer_config.train.get("measure_op_level", True),
    )
    return problem, groups
