"""One entry point for the measurement backends (sim, grappler, session) and the engines they run on.

The TF-backed ones are imported only when asked for, so the simulator keeps
working where TensorFlow is not installed. A search measures in this process
(engine "inprocess") or on Ray actors (engine "ray", placer.measure.ray_pool;
Ray is imported only then).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from placer.core.cluster import Cluster
from placer.core.errors import InputError, RunStopped
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.measure.pool import Engine, WorkersLost
from placer.measure.simulator import Simulator


def _grappler():
    from placer.measure import grappler  # noqa: PLC0415 (TensorFlow)

    return grappler


def _session():
    from placer.measure import session  # noqa: PLC0415 (TensorFlow)

    return session


def _ray_pool():
    from placer.measure import ray_pool  # noqa: PLC0415 (Ray, an optional extra)

    return ray_pool


def _tf_session():
    from graphs import tf_session  # noqa: PLC0415 (TensorFlow)

    return tf_session


def _local_cluster():
    from graphs import local_cluster  # noqa: PLC0415 (TensorFlow)

    return local_cluster


# The modules loaded on first use (TensorFlow's or Ray's), by name. Each loader is a plain import
# statement, so the layer contracts and tests/test_import_cycles.py see these imports.
LAZY: dict[str, Callable] = {
    "grappler": _grappler,
    "session": _session,
    "ray_pool": _ray_pool,
    "tf_session": _tf_session,
    "local_cluster": _local_cluster,
}


def lazy(name: str):
    """The module `name` of LAZY, imported now if it was not."""
    return LAZY[name]()


def _sim(graph, cluster, model, metagraph, **options):
    return Simulator(graph, cluster, **options)


def _source(kind, model, metagraph):
    source = metagraph if metagraph is not None else model
    if source is None:
        raise InputError(f"measure={kind} needs the TF model (a --config), not just a graph file")
    return source


def _grappler_measurer(graph, cluster, model, metagraph, **options):
    source = _source("grappler", model, metagraph)
    return lazy("grappler").GrapplerMeasurer(getattr(source, "metagraph", source), graph, cluster, **options)


def _session_measurer(graph, cluster, model, metagraph, **options):
    return lazy("session").SessionMeasurer(_source("session", model, metagraph), graph, cluster, **options)


KINDS = {"sim": _sim, "grappler": _grappler_measurer, "session": _session_measurer}
ENGINES = ("inprocess", "ray")


class MeasurerFactory:
    """Builds a worker's measurer of one kind; picklable, so a Ray actor builds it in its own process.

    Args:
      kind: "sim", "grappler" or "session" (KINDS).
      **options: passed to the backend (e.g. warmup, steps, timeout_s for session).
    """

    def __init__(self, kind: str = "sim", **options):
        self.kind = kind
        self.options = options

    def __call__(self, graph, cluster, model: bytes | None = None):
        """The measurer of `graph` on `cluster`.

        Args:
          graph: the job's OpGraph.
          cluster: the job's Cluster; for "session", the devices of the
            machine measuring it (e.g. "local:N", N logical CPUs).
          model: the job's serialized MetaGraphDef (`SerializeToString`), for
            the TF backends; None for the simulator.
        """
        if self.kind == "sim":
            return Simulator(graph, cluster, **self.options)
        # TensorFlow is imported here, in the worker, never by this module: the in-process and Ray
        # engines load without it, and a fresh Ray actor sets its CPU devices before TF sets them up.
        if self.kind == "session":
            _own_cpus(sum(d.type == "CPU" for d in cluster.devices))
        metagraph = None if model is None else lazy("tf_session").meta_graph_pb2.MetaGraphDef.FromString(model)
        return make_measurer(self.kind, graph, cluster, metagraph=metagraph, **self.options)


def _own_cpus(n: int) -> None:
    """Splits this worker process's CPU into `n` logical devices, if TF has not set up its devices yet.

    When it has (an earlier job of this process, or the caller's own TF use),
    sessions still get `n` CPU devices: SessionMeasurer sets the count in
    each session's ConfigProto.
    """
    try:
        lazy("local_cluster").configure_logical_cpus(max(n, 1))
    except RuntimeError:
        pass  # devices already set up with another count: the session's ConfigProto decides


def make_measurer(
    kind: str,
    graph: OpGraph,
    cluster: Cluster,
    *,
    model=None,
    metagraph=None,
    engine: Engine | None = None,
    owns_engine: bool = False,
    **options,
) -> Measurer:
    """Returns the measurement backend `kind` for `graph` on `cluster`.

    Args:
      kind: "sim" (placer.measure.simulator), "grappler" (Grappler's virtual
        cluster) or "session" (real tf.compat.v1.Session runs).
      graph: the op graph, with costs for the simulator.
      cluster: the devices and links.
      model: models.ModelGraph (or a builder) for the TF backends.
      metagraph: the MetaGraphDef for the TF backends (wins over `model`).
      engine: None to measure in this process, or a Ray engine from
        `open_engine` whose actors each build their own `kind` backend (its
        options were given there).
      owns_engine: the measurer's close() stops `engine`.
      **options: passed to the backend's constructor (in this process).

    Raises:
      InputError: an unknown kind (the message lists the valid ones), or a TF
        backend without a model.
    """
    if kind not in KINDS:
        raise InputError(f"unknown measure kind {kind!r} (valid: {', '.join(KINDS)})")
    if engine is None:
        return KINDS[kind](graph, cluster, model, metagraph, **options)
    if engine.factory.kind != kind:
        raise ValueError(f"measure={kind} on an engine that builds {engine.factory.kind!r} measurers")
    serialized = None
    if kind != "sim":
        serialized = lazy("tf_session").as_metagraph(_source(kind, model, metagraph)).SerializeToString()
    return lazy("ray_pool").RayMeasurer(engine, graph, cluster, serialized, owns_engine=owns_engine)


def check_engine(engine: str, workers: int, ray_address: str = "") -> None:
    """Checks an engine choice before any work: the name, the worker count, Ray installed for "ray".

    Raises:
      InputError: naming the flag; for a missing Ray, with the install command.
    """
    if engine not in ENGINES:
        raise InputError(f"--engine={engine}: unknown engine (valid: {', '.join(ENGINES)})")
    if workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    if engine == "inprocess" and workers != 1:
        raise InputError(f"--workers={workers} needs --engine=ray (in process, placements are measured one by one)")
    if engine == "inprocess" and ray_address:
        raise InputError(f"--ray_address={ray_address} needs --engine=ray")
    if engine == "ray":
        lazy("ray_pool").import_ray()


def open_engine(kind: str, *, engine: str = "inprocess", workers: int = 1, ray_address: str = "", **options):
    """The workers a search measures on: None for "inprocess", else `workers` Ray actors.

    Each actor builds its own `kind` backend with `options` for every graph it
    measures. Placements whose actor died are measured again on another (up to
    `workers` times), then raise WorkersLost.

    Args:
      kind: the backend, as for make_measurer.
      engine: "inprocess" or "ray".
      workers: Ray actors, each holding one `placer_slot` resource.
      ray_address: the Ray cluster to join; "" starts a local Ray unless one is running.
      **options: the backend's constructor options.

    Returns:
      None, or a placer.measure.ray_pool.RayEngine to pass to make_measurer.

    Raises:
      InputError: as check_engine; a cluster that cannot be reached or offers too few slots.
    """
    check_engine(engine, workers, ray_address)
    if engine == "inprocess":
        return None
    factory = MeasurerFactory(kind, **options)
    return lazy("ray_pool").RayEngine(
        workers, address=ray_address or None, flag="--workers", factory=factory, max_retries=workers, fatal_loss=True
    )


def engine_options(config) -> dict:
    """The engine fields of a run config (`engine`, `workers`, `ray_address`; defaults where absent)."""
    return {
        "engine": config.get("engine", "inprocess"),
        "workers": int(config.get("workers", 1)),
        "ray_address": config.get("ray_address", ""),
    }


@contextlib.contextmanager
def measuring(closable, *, save: Callable[[], None], step: Callable[[], int]):
    """Wraps a search's loop: closes `closable` (a measurer or engine; None: nothing) when the loop
    ends, and when the measurement workers are lost, saves the search and stops it.

    Args:
      closable: what to close at the end (its `close()`, if it has one).
      save: writes the search's checkpoint and files.
      step: the search's step count (to say where it stopped).

    Raises:
      RunStopped: the workers were lost; one line: what happened, the saved step, how to continue.
    """
    try:
        yield
    except WorkersLost as e:
        save()
        raise RunStopped(f"{e}; stopped at step {step()}, checkpoint written; continue with --resume") from None
    finally:
        close = getattr(closable, "close", None)
        if close is not None:
            close()


def level_of(measurer: Measurer, placement) -> str:
    """The model level a step time of `placement` comes from: "group" or "op".

    The simulator names its own (placer.measure.simulator.Simulator.level:
    group level for a placement that places its groups whole); Grappler and
    sessions run every op on its own, "op".
    """
    level = getattr(measurer, "level", None)
    return level(placement) if callable(level) else "op"
