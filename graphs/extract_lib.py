"""The library behind `placer-extract`: a training graph, extracted and given op costs, and its summary.

A graph file is only useful to the other binaries with costs for the target
cluster's device types, so extraction attaches them: Grappler's analytical
model for each device type of the cluster (the default, cached as
graphs/pipeline.py caches it for `placer-train --config`), or times profiled
on this machine's own devices, or none (for looking at the ops alone).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time

from placer.core import fmt, grouping
from placer.core import io as graph_io
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

COSTS = ("grappler", "profile", "none")
_GROUPING_KEYS = ("merge_single_consumer", "max_group_ops", "target_groups", "scope_depth", "colocate_gradients")


@dataclasses.dataclass
class Extracted:
    """A graph and how it was made.

    Attributes:
      graph: the op graph, with costs unless `costs` is "none".
      grouping_options: the config's grouping settings (empty for a file).
      seconds: wall time of building, extracting and costing (s); None for a file.
    """

    graph: OpGraph
    grouping_options: dict
    seconds: float | None


def from_file(path: str) -> Extracted:
    """Reads a graph JSON file (no extraction, no new costs)."""
    return Extracted(graph_io.load(path), {}, None)


def from_config(config, cluster: Cluster, costs: str) -> Extracted:
    """Builds the config's model, extracts it and attaches `costs` ("grappler", "profile" or "none").

    Raises:
      InputError: an unknown model or costs kind.
    """
    _check_costs(costs)
    g = config.get("placer", {}).get("grouping", {})
    options = {k: g[k] for k in _GROUPING_KEYS if k in g}
    start = time.perf_counter()
    if costs == "grappler":
        from graphs import pipeline  # noqa: PLC0415 (TensorFlow)

        graph = pipeline.load_graph(cluster, config=config).graph
    else:
        import models  # noqa: PLC0415 (TensorFlow)
        from graphs import extract  # noqa: PLC0415

        built = models.build(config)
        graph = _costed(extract.extract(built.metagraph, name=built.name), built.metagraph, cluster, costs)
    return Extracted(graph, options, time.perf_counter() - start)


def from_metagraph(path: str, name: str | None, cluster: Cluster, costs: str) -> Extracted:
    """Extracts a MetaGraphDef file (binary or text) and attaches `costs`."""
    _check_costs(costs)
    from graphs import extract  # noqa: PLC0415 (TensorFlow)

    start = time.perf_counter()
    meta = extract.load_metagraph(path)
    graph = extract.extract(meta, name=name or os.path.basename(path).split(".")[0])
    return Extracted(_costed(graph, meta, cluster, costs), {}, time.perf_counter() - start)


def _check_costs(costs: str) -> None:
    if costs not in COSTS:
        raise InputError(f"--costs: unknown kind {costs!r} (valid: {', '.join(COSTS)})")


def _costed(graph: OpGraph, metagraph, cluster: Cluster, costs: str) -> OpGraph:
    from graphs import costs as costs_lib  # noqa: PLC0415 (TensorFlow)

    if costs == "grappler":
        return costs_lib.grappler_costs(metagraph, graph, cluster)
    if costs == "profile":
        return costs_lib.profiled_costs(metagraph, graph)
    return graph


def summary(extracted: Extracted, target_groups: int | None, top_types: int, num_devices: int = 5) -> list[str]:
    """Groups the graph and returns the lines `placer-extract` prints.

    Args:
      extracted: the graph and its config's grouping options.
      target_groups: overrides the config's group count (None: the config's, else 256).
      top_types: how many of the most common op types to list.
      num_devices: devices the groups will be placed on; sets the grouping's
        floor (placer.core.grouping.group_floor).
    """
    graph = extracted.graph
    options = dict(extracted.grouping_options)
    options.setdefault("target_groups", 256)
    if target_groups is not None:
        options["target_groups"] = target_groups
    options.pop("min_groups", None)
    options["min_groups"] = grouping.group_floor(options["target_groups"], num_devices)
    start = time.perf_counter()
    groups = grouping.group(graph, **options)
    group_s = time.perf_counter() - start
    n_control = int(graph.edge_control.sum())
    types = collections.Counter(graph.types.tolist())
    sizes = groups.sizes()
    lines = [
        f"graph: {graph.name}",
        f"ops: {graph.num_ops} ({_in_step(graph)})",
        f"edges: {graph.num_edges} ({graph.num_edges - n_control} data, {n_control} control)",
        f"groups: {groups.num_groups} (largest {int(sizes.max()) if len(sizes) else 0} ops, "
        f"{groups.num_leaders} tie classes, floor {options['min_groups']}, scope depth {options.get('scope_depth', 0)})",
        f"op types: {len(types)}",
        "top op types: " + ", ".join(f"{t} {c}" for t, c in types.most_common(top_types)),
        "costs: " + (", ".join(graph.device_types) if graph.device_types else "none"),
    ]
    if extracted.seconds is not None:
        lines.append(f"extraction time: {fmt.seconds(extracted.seconds)}")
    lines.append(f"grouping time: {fmt.seconds(group_s)}")
    return lines


def _in_step(graph: OpGraph) -> str:
    """How many ops a training step runs (the rest cost nothing in the simulator)."""
    if not graph.device_types:
        return "not costed: which run in the step is not known"
    step = graph.num_ops if graph.in_step is None else int(graph.in_step.sum())
    return f"{step} in the training step, {graph.num_ops - step} outside it"
