"""A jobs file's searches made ready to run: each job's cost-annotated graph and placement problem."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from graphs import local_cluster, pipeline
from placer.core.errors import InputError, one_line
from placer.sharing.jobs import JobSpec, Workload


@dataclasses.dataclass
class Prepared:
    """A job with its graph, cluster and placement problem built (or the error that stopped it).

    Attributes:
      model: the serialized MetaGraphDef (bytes) the TF backends measure, else None.
      measure: the backend measuring it: "sim", "grappler" or "session".
    """

    spec: JobSpec
    graph: object = None
    cluster: object = None
    problem: object = None
    groups: object = None
    error: str = ""
    model: bytes | None = None
    measure: str = "sim"


def prepare(work: Workload, *, measure: str = "sim", log: Callable = print) -> list[Prepared]:
    """Builds every job's cost-annotated graph and placement problem (TF for model configs).

    A job whose preparation raises anything but InputError (e.g. its model
    fails to build) is kept with its error and fails alone when it starts.

    Args:
      work: the checked jobs file.
      measure: the backend, "sim", "grappler" or "session"; the TF ones get
        each job's model built and serialized for the workers.
      log: where progress lines go.

    Raises:
      InputError: a job's graph or cluster cannot be used, or it has no model
        for a TF backend; the message names the job.
    """
    from placer.rl import methods
    from placer.rl import problem as problem_lib
    from placer.sharing import jobs as jobs_lib

    jobs_lib.check_measure(work, measure)
    out = []
    for spec in work.jobs:
        method = spec.config.placer.train.get("method", methods.DEFAULT)
        try:
            methods.config_for(method, spec.config.placer)  # a known method, learning off only where it learns
            cluster = local_cluster.load(spec.cluster)
            loaded = pipeline.load_graph(
                cluster,
                config=None if spec.graph_path else spec.config,
                graph_path=spec.graph_path,
                need_model=measure != "sim",
            )
            problem, groups = problem_lib.make_problem(loaded.graph, cluster, spec.config.placer)
            model = None if measure == "sim" else loaded.model.metagraph.SerializeToString()
        except InputError as e:
            raise InputError(f"{work.path}: job {spec.name!r}: {e}") from None
        except Exception as e:  # noqa: BLE001 (the search fails, the others run)
            log(f"{spec.name}: cannot prepare: {one_line(e)}")
            out.append(Prepared(spec, error=one_line(e), measure=measure))
            continue
        log(
            f"{spec.name}: {loaded.graph.name}, {loaded.graph.num_ops} ops, {groups.num_groups} groups, "
            f"{cluster.num_devices} devices ({cluster.name}), arrives at {spec.arrival_s:g} s, {method}, "
            f"{spec.steps} steps from scratch (no warm start)"
        )
        out.append(Prepared(spec, loaded.graph, cluster, problem, groups, model=model, measure=measure))
    return out
