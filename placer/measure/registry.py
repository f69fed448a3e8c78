"""One entry point for the measurement backends: sim, grappler, session.

The TF-backed ones are imported only when asked for, so the simulator keeps
working where TensorFlow is not installed.
"""

from __future__ import annotations

import importlib

from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.measure.simulator import Simulator


def _sim(graph, cluster, model, metagraph, **options):
    return Simulator(graph, cluster, **options)


def _source(kind, model, metagraph):
    source = metagraph if metagraph is not None else model
    if source is None:
        raise InputError(f"measure={kind} needs the TF model (a --config), not just a graph file")
    return source


def _grappler(graph, cluster, model, metagraph, **options):
    mod = importlib.import_module("placer.measure.grappler")
    source = _source("grappler", model, metagraph)
    return mod.GrapplerMeasurer(getattr(source, "metagraph", source), graph, cluster, **options)


def _session(graph, cluster, model, metagraph, **options):
    mod = importlib.import_module("placer.measure.session")
    return mod.SessionMeasurer(_source("session", model, metagraph), graph, cluster, **options)


KINDS = {"sim": _sim, "grappler": _grappler, "session": _session}


def make_measurer(kind: str, graph: OpGraph, cluster: Cluster, *, model=None, metagraph=None, **options) -> Measurer:
    """Returns the measurement backend `kind` for `graph` on `cluster`.

    Args:
      kind: "sim" (placer.measure.simulator), "grappler" (Grappler's virtual
        cluster) or "session" (real tf.compat.v1.Session runs).
      graph: the op graph, with costs for the simulator.
      cluster: the devices and links.
      model: models.ModelGraph (or a builder) for the TF backends.
      metagraph: the MetaGraphDef for the TF backends (wins over `model`).
      **options: passed to the backend's constructor.

    Raises:
      InputError: an unknown kind (the message lists the valid ones), or a TF
        backend without a model.
    """
    if kind not in KINDS:
        raise InputError(f"unknown measure kind {kind!r} (valid: {', '.join(KINDS)})")
    return KINDS[kind](graph, cluster, model, metagraph, **options)


def level_of(measurer: Measurer, placement) -> str:
    """The model level a step time of `placement` comes from: "group" or "op".

    The simulator names its own (placer.measure.simulator.Simulator.level:
    group level for a placement that places its groups whole); Grappler and
    sessions run every op on its own, "op".
    """
    level = getattr(measurer, "level", None)
    return level(placement) if callable(level) else "op"
