"""Jobs files of `placer-search`: concurrent placement searches, checked up front.

A jobs file is an ml_collections config file whose `get_config()` returns a
ConfigDict with `jobs`, a list of job ConfigDicts (format in docs/formats.md,
"Jobs file"). Everything a job names (its model config or graph file, its
cluster, the placer fields it overrides) is read and checked here, so a bad
file fails with one InputError before any search starts. No TensorFlow.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import stat

import ml_collections

from configs import common
from placer.core import checks, configs_util
from placer.core import cluster as cluster_lib
from placer.core import io as graph_io
from placer.core.errors import InputError

JOB_FIELDS = ("name", "config", "graph", "cluster", "arrival_s", "steps", "seed", "max_slots")
TOP_FIELDS = ("jobs", "measure_seconds", "measure_timeout_s", "max_retries", "session_warmup", "session_steps")
# Placer fields a job may not override: samples per step is the job's slot count.
_FIXED = ("samples_per_step",)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclasses.dataclass
class JobSpec:
    """One placement search of a jobs file.

    Attributes:
      name: unique job name (letters, digits, `_.-`), also its folder name.
      config_spec: model config `path[:variant]`, or None.
      graph_path: graph JSON file, or None (exactly one of the two is set).
      cluster: cluster preset name or JSON path.
      arrival_s: seconds after the start of the run at which the search starts.
      steps: iterations the search runs (then it is finished; sooner if its method finishes).
      seed: seeds the policy weights and the sampling.
      max_slots: most slots (= placements measured per iteration) it can use.
      config: the full model config (with `placer`, `cluster`, `measure`), overrides applied.
    """

    name: str
    config_spec: str | None
    graph_path: str | None
    cluster: str
    arrival_s: float
    steps: int
    seed: int
    max_slots: int
    config: object


@dataclasses.dataclass
class Workload:
    """A checked jobs file.

    Attributes:
      path: the jobs file.
      jobs: the searches, in arrival order (ties keep file order).
      measure_seconds: seconds a slot is held per measured placement on top of
        the measurement itself (emulates a real device's run time with the simulator; 0 = none).
      measure_timeout_s: seconds after which a measurement counts as hung.
      max_retries: times a placement whose worker died is measured again elsewhere.
      session_warmup: untimed steps per placement measured in a real session (--measure=session).
      session_steps: timed steps per placement measured in a real session; their median is the step time.
    """

    path: str
    jobs: list[JobSpec]
    measure_seconds: float = 0.0
    measure_timeout_s: float = 60.0
    max_retries: int = 1
    session_warmup: int = 2
    session_steps: int = 5


def _overridable() -> dict[str, tuple[str, object]]:
    """Leaf name -> (section, default) of the placer fields a job may override."""
    out = {}
    pc = common.placer_config()
    for section in ("grouping", "policy", "train"):
        for key, value in pc[section].items():
            if key not in _FIXED:
                out[key] = (section, value)
    return out


def _number(where: str, value, *, integer: bool = False, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        kind = "an integer" if integer else "a number"
        raise InputError(f"{where}: must be {kind}, got {value!r}")
    if not math.isfinite(value):
        raise InputError(f"{where}: must be finite, got {value!r}")
    if minimum is not None and value < minimum:
        raise InputError(f"{where}: must be >= {minimum}, got {value!r}")
    return value


def _as_dict(job, where: str) -> dict:
    if hasattr(job, "to_dict"):
        return job.to_dict()
    if isinstance(job, dict):
        return dict(job)
    raise InputError(f"{where}: a job must be a ConfigDict or dict, got {type(job).__name__}")


def load_workload(path: str, *, load_models: bool = True) -> Workload:
    """Reads and checks a jobs file.

    Args:
      path: the jobs file (an ml_collections config file, optionally `path:variant`).
      load_models: also load each job's model config file (the graphs are
        built later, by `placer.sharing.search.prepare`).

    Returns:
      The Workload, jobs sorted by arrival.

    Raises:
      InputError: naming the file, job and field of the first problem.
    """
    file = path.split(":", 1)[0]
    if not file.endswith(".py"):
        hint = "; a trace CSV is replayed by python -m bench.slaq_replay" if file.endswith(".csv") else ""
        raise InputError(f"{file}: a jobs file is a Python config file (.py){hint}")
    try:  # a Python file run to build the config: within the byte cap, and a regular file
        found = os.stat(configs_util.resolve_spec(path).partition(":")[0])
        size, mode = found.st_size, found.st_mode
    except OSError:
        size, mode = 0, stat.S_IFREG  # load_config names what is missing
    if not stat.S_ISREG(mode):
        raise InputError(f"{file}: not a regular file; a jobs file is a Python config file (.py)")
    if size > checks.max_input_bytes():
        raise InputError(
            f"{file}: {size} bytes, over the cap of {checks.max_input_bytes() / 2**20:g} MiB; if it is genuine, "
            "raise --max_input_mib"
        )
    root = configs_util.load_config(path)
    top = _as_dict(root, path)
    for key in top:
        if key not in TOP_FIELDS:
            raise InputError(f"{path}: unknown field {key!r} (valid: {', '.join(TOP_FIELDS)})")
    jobs = top.get("jobs")
    if not isinstance(jobs, list | tuple) or not jobs:
        raise InputError(f"{path}: field 'jobs' must be a non-empty list of jobs")
    checks.within_cap(len(jobs), "jobs", f"{path}: jobs")
    work = Workload(path, [])
    if "measure_seconds" in top:
        work.measure_seconds = float(_number(f"{path}: measure_seconds", top["measure_seconds"], minimum=0))
    if "measure_timeout_s" in top:
        work.measure_timeout_s = float(_number(f"{path}: measure_timeout_s", top["measure_timeout_s"], minimum=1e-3))
    if "max_retries" in top:
        work.max_retries = int(_number(f"{path}: max_retries", top["max_retries"], integer=True, minimum=0))
    for key, least in (("session_warmup", 0), ("session_steps", 1)):
        if key in top:
            setattr(work, key, int(_number(f"{path}: {key}", top[key], integer=True, minimum=least)))
    over = _overridable()
    names: set[str] = set()
    clusters: dict[str, object] = {}
    for i, raw in enumerate(jobs):
        work.jobs.append(_load_job(path, i, raw, over, names, clusters, load_models=load_models))
    work.jobs.sort(key=lambda j: j.arrival_s)
    return work


def _load_job(
    path: str, i: int, raw, over: dict, names: set[str], clusters: dict[str, object], *, load_models: bool
) -> JobSpec:
    """Checks jobs[i] of a jobs file (adding its name to `names`, its cluster to `clusters`)."""
    job = _as_dict(raw, f"{path}: jobs[{i}]")
    name = job.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(f"{path}: jobs[{i}].name: must be a non-empty name of letters, digits, '_.-', got {name!r}")
    where = f"{path}: job {name!r}"
    if name in names:
        raise InputError(f"{where}: duplicate name")
    names.add(name)
    for key in job:
        if key not in JOB_FIELDS and key not in over:
            raise InputError(
                f"{where}: unknown field {key!r} (valid: {', '.join(JOB_FIELDS)}, "
                f"or a placer field: {', '.join(sorted(over))})"
            )
    spec, graph = job.get("config"), job.get("graph")
    if (spec is None) == (graph is None):
        raise InputError(f"{where}: give exactly one of 'config' and 'graph'")
    for key, value in (("config", spec), ("graph", graph)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InputError(f"{where}: {key} must be a file path, got {value!r}")
    if graph is not None:
        try:
            graph_io.load(graph)
        except InputError as e:
            raise InputError(f"{where}: graph: {e}") from None
        config = common.attach(ml_collections.ConfigDict())
    elif load_models:
        try:
            config = configs_util.load_config(spec)
        except InputError as e:
            raise InputError(f"{where}: config: {e}") from None
        if "placer" not in config:
            config = common.attach(config)
    else:
        config = common.attach(ml_collections.ConfigDict())
    cluster = job.get("cluster", config.get("cluster", "k80x4"))
    if not isinstance(cluster, str):
        raise InputError(f"{where}: cluster must be a preset name or JSON path, got {cluster!r}")
    try:
        if cluster_lib.is_local(cluster):  # this machine's devices, read at run time
            cluster_lib.local_cpus(cluster)
        elif cluster not in clusters:
            clusters[cluster] = cluster_lib.load(cluster)
    except InputError as e:
        raise InputError(f"{where}: cluster: {e}") from None
    config.cluster = cluster
    config.measure = "sim"
    for key, value in job.items():
        if key in over:
            section, default = over[key]
            config.placer[section][key] = _override(f"{where}: {key}", value, default)
    max_slots = job.get("max_slots", config.placer.train.samples_per_step)
    return JobSpec(
        name=name,
        config_spec=spec,
        graph_path=graph,
        cluster=cluster,
        arrival_s=float(_number(f"{where}: arrival_s", job.get("arrival_s", 0.0), minimum=0)),
        steps=int(_number(f"{where}: steps", job.get("steps", 50), integer=True, minimum=1)),
        seed=int(_number(f"{where}: seed", job.get("seed", 0), integer=True)),
        max_slots=int(_number(f"{where}: max_slots", max_slots, integer=True, minimum=1)),
        config=config,
    )


def _override(where: str, value, default):
    """Checks an override against the type of the field's default."""
    if isinstance(default, str):
        if not isinstance(value, str):
            raise InputError(f"{where}: must be a string, got {value!r}")
        return value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise InputError(f"{where}: must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        return int(_number(where, value, integer=True, minimum=0))
    return float(_number(where, value))


MEASURES = ("sim", "grappler", "session")  # placer-search --measure


def check_measure(work: Workload, measure: str) -> None:
    """Checks that every job can be measured by `measure` (the TF backends need a model config).

    Raises:
      InputError: an unknown kind, or the first job given as a graph file under a TF backend.
    """
    if measure not in MEASURES:
        raise InputError(f"unknown measure {measure!r} (valid: {', '.join(MEASURES)})")
    if measure == "sim":
        return
    for spec in work.jobs:
        if spec.graph_path is not None:
            raise InputError(
                f"{work.path}: job {spec.name!r}: --measure={measure} runs the job's TF model, "
                f"and a graph file ({spec.graph_path}) has none; give the job a 'config'"
            )


def local_cpu_count(work: Workload) -> int | None:
    """The most logical CPUs a job's "local:N" cluster asks for; None when no job names one."""
    counts = [cluster_lib.local_cpus(j.cluster) for j in work.jobs if cluster_lib.is_local(j.cluster)]
    counts = [n for n in counts if n is not None]
    return max(counts) if counts else None
