"""One learned placement search, end to end: load, group, run the chosen method, report.

The library behind `placer-train`, the demo and the benchmarks.
"""

from __future__ import annotations

import copy
import json
import os
import time

import numpy as np

from configs import common as config_common
from graphs import local_cluster, pipeline
from placer.core import atomic, fmt, resume_check
from placer.core.errors import InputError
from placer.measure import bounds
from placer.measure import registry as measure_registry
from placer.rl import encoders, learn_anneal, methods, search_loop, transfer_lib
from placer.rl import learner as learner_lib
from placer.rl.learn_seq2seq import apply_warm_start  # noqa: F401 (the warm start's home before the methods)
from placer.rl.reinforce import seed_everything
from placer.rl.starts import (  # noqa: F401 (placer.rl.train_lib was their home: callers' import path)
    best_baseline,
    cpu_only_start,
    from_its_start,
    placed_groups,
    prepare_problem,
    skips_list_scheduling,
    start_line,
)


def has_saved_state(workdir: str) -> bool:
    """Whether `workdir` holds a method's checkpoint: the seq2seq policy's TensorFlow checkpoint, or the
    learner.json of the methods that keep their state in numpy."""
    return any(
        os.path.exists(os.path.join(workdir, *f)) for f in (("checkpoints", "checkpoint"), (learn_anneal.STATE,))
    )


def check_fresh_workdir(workdir: str, resume: bool, log=print) -> bool:
    """Refuses to start over a workdir that holds a search, unless resuming; returns whether to resume.

    A workdir without a checkpoint (a search killed or stopped before its
    first checkpoint) holds nothing to continue: it is started over, and said
    so, with or without `resume`.
    """
    has_run = any(os.path.exists(os.path.join(workdir, f)) for f in ("run.json", search_loop.STATE))
    if not has_saved_state(workdir):
        if has_run or resume:
            log(f"{workdir}: no checkpoint to continue from; starting over")
        return False
    if has_run and not resume:
        raise InputError(f"{workdir}: holds an earlier search; pass --resume to continue it or pick another --workdir")
    return resume


# What a run writes in its workdir (placer-train's outputs), removed by --resume=restart.
RUN_FILES = (
    "run.json", "history.json", "curve.csv", "summary.json", "best_placement.json", "checkpoints", "tensorboard",
    "search.json", "best_curve.csv", "learner.json", resume_check.RECORD,
)  # fmt: skip


def run_inputs(graph, cluster, method: str, config, init_from: str | None) -> dict[str, str]:
    """What a checkpoint is made from (placer/core/resume_check.py): graph, costs, cluster, method, config."""
    placer = config.placer.to_dict()
    for key in ("method", "checkpoint_every"):  # the method is its own entry; checkpoints change no result
        placer["train"].pop(key, None)
    settings = {"placer": placer, "measure": config.measure, "init_from": init_from}
    return {
        **resume_check.graph_fields(graph),
        "cluster": resume_check.digest(cluster.to_json()),
        "method": method,
        "config": resume_check.digest(settings),
    }


def clear_run(workdir: str) -> None:
    """Removes an earlier run's files from `workdir` (RUN_FILES; nothing else), to start over."""
    resume_check.clear(workdir, RUN_FILES)


def run(
    config,
    *,
    workdir: str,
    steps: int,
    seed: int = 0,
    resume: bool | str = False,
    graph_path: str | None = None,
    progress: bool = True,
    log=print,
    max_seconds: float = 0.0,
    init_from: str | None = None,
    max_placements: int = 0,
    graph=None,
) -> dict:
    """Runs the learned placement method `config.placer.train.method`; writes best_placement.json and summary.json.

    Args:
      config: a model config with `placer`, `cluster` and `measure` fields
        (the model section is ignored when `graph_path` is given).
      workdir: output folder (checkpoints, curves, results).
      steps: total rounds of the method (a round proposes and measures one batch; for the
        seq2seq policy, one policy-gradient step), counting resumed ones; 0 = no limit.
      seed: seeds the method's weights and draws.
      resume: continue the search saved in `workdir` (True), or "restart": continue it only when
        its inputs are unchanged, else start over (placer/core/resume_check.py).
      graph_path: a graph JSON file to place instead of the config's model.
      progress: show a progress line.
      log: where to print the summary lines.
      max_seconds: stop after this much wall time (0 = no limit).
      init_from: a placer-pretrain policy folder to fine-tune (the graph policy).
      max_placements: stop after this many measured placements in all, a warm start's
        included (0 = no limit).
      graph: an OpGraph already loaded (costs for the cluster's device types) to place instead of the
        config's model; the simulator measures it (placer-place).

    Returns:
      The summary dict that is also written to summary.json.

    Raises:
      InputError: bad limits, method, cluster, measure kind, or a checkpoint that does not match.
    """
    limits = search_loop.Limits(rounds=steps, placements=max_placements, seconds=max_seconds)
    limits.check()
    name = config.placer.train.get("method", methods.DEFAULT)
    methods.config_for(name, config.placer)  # an unknown method or learning=False without learning: before any work
    if init_from is not None and methods.init_from(name) is None:
        takers = ", ".join(m for m in methods.names() if methods.init_from(m))
        raise InputError(f"--init_from: method {name} starts from nothing learned (these can: {takers})")
    _check_options(config)
    asked = resume
    resume = check_fresh_workdir(workdir, bool(resume), log)
    seed_everything(seed)
    t0 = time.time()
    source = graph_path or (graph.name if graph is not None else config.model.name)
    cluster, graph, inner = _load(config, graph_path, log, graph)
    made_from = run_inputs(graph, cluster, name, config, init_from)
    if resume and not resume_check.check(workdir, made_from, asked, log):
        clear_run(workdir)
        resume = False
    if not resume:
        resume_check.record(workdir, made_from)
    measurer = search_loop.CountingMeasurer(inner)
    placer = config.placer
    if not methods.uses_warm_start(name) or resume:
        placer = copy.deepcopy(placer)
        placer.train.warm_start = "" if not methods.uses_warm_start(name) else placer.train.warm_start
    problem, groups, warm = prepare_problem(graph, cluster, placer, measurer, seed, log)
    level = measure_registry.level_of(inner, problem.placement(np.zeros(problem.num_groups, np.int64)))
    log(
        f"{graph.name}: {graph.num_ops} ops, {groups.num_groups} groups ({groups.num_leaders} placed, the rest "
        f"tied), {cluster.num_devices} devices ({cluster.name}), measure={config.measure} ({level} level), "
        f"method={name}; prepared in {fmt.seconds(time.time() - t0)}"
    )
    skipped = skips_list_scheduling(placer.train.warm_start, graph.num_ops, placer.train)
    if methods.uses_warm_start(name) or resume:
        log(start_line(placer.train.warm_start if warm is not None else "", resume, init_from, skipped, warm))
    else:
        log(f"warm start: not used by {name}, which chooses its own start")
    if init_from is not None and methods.init_from(name) == "policy":
        log(f"policy from {init_from}: {transfer_lib.trained_on(transfer_lib.read_description(init_from))}")
    budget = max_placements or steps * int(placer.train.samples_per_step)
    start = cpu_only_start(name, graph, cluster, measurer, seed, placer.train, log)
    problem = from_its_start(problem, name, warm, start, cluster, log)
    setup = learner_lib.Setup(
        problem, groups, cluster, placer, measurer, workdir, seed=seed, budget=budget, warm=None if resume else warm,
        start=None if resume else start, init_from=init_from, source=source, log=log,
    )  # fmt: skip
    loop = search_loop.Loop(
        methods.build(name, setup), problem, measurer, workdir, placer.train.checkpoint_every,
        {"method": name, "learner": name, "cluster": cluster.name, "measure": config.measure, "level": level},
    )  # fmt: skip
    start = loop.restore() if resume else 0
    if resume and loop._done(limits, time.time()):
        log(f"{workdir}: finished at step {start} ({loop.placements} placements); nothing to do, nothing changed")
        return _read_json(os.path.join(workdir, "summary.json"))
    if resume:
        log(f"resumed at step {start} ({loop.placements} placements), best so far {fmt.step_time(loop.best_t)}")
    t_train = time.time()
    with measure_registry.measuring(inner, save=lambda: loop.save(time.time()), step=lambda: loop.rounds):
        last = loop.run(limits, progress=progress)
    summary = _summary(loop, name, graph, groups, cluster, config.measure, seed, start, time.time() - t_train, last)
    atomic.write_text(os.path.join(workdir, "summary.json"), json.dumps(summary, indent=1, default=str))
    _log_result(summary, last, log)
    return summary


def _check_options(config) -> None:
    """Checks the config's named choices (update rule, schedules, encoder) before any work."""
    config_common.check_placer_config(config.placer)
    encoders.check(config.placer.policy.get("encoder", "bilstm"))


def _load(config, graph_path: str | None, log=print, graph=None):
    """(cluster, costed graph, measurer) of a run."""
    cluster = local_cluster.load(config.cluster)
    if graph is not None:
        if config.measure != "sim":
            raise InputError(f"measure={config.measure}: a graph given in memory is measured by the simulator only")
        pipeline.require_costs(graph, cluster, graph.name)
        loaded = pipeline.Loaded(graph, None, 0.0)
    else:
        loaded = pipeline.load_graph(
            cluster, config=None if graph_path else config, graph_path=graph_path, need_model=config.measure != "sim"
        )
        log(f"{loaded.graph.name}: {loaded.graph.num_ops} ops loaded in {fmt.seconds(loaded.seconds)}")
    engine = measure_registry.open_engine(config.measure, **measure_registry.engine_options(config))
    measurer = measure_registry.make_measurer(
        config.measure, loaded.graph, cluster, model=loaded.model, engine=engine, owns_engine=True
    )
    return cluster, loaded.graph, measurer


def _summary(loop, name, graph, groups, cluster, kind, seed, start, wall, last) -> dict:
    """The dict written to summary.json."""
    bound = bounds.bound(graph, cluster)
    lb = bound.value
    best = loop.best_t if np.isfinite(loop.best_t) else None
    rounds = loop.rounds - start
    outside = wall - (loop.measurer.seconds - loop.measured_at_start)  # this process: all but measuring
    return {
        "graph": graph.name,
        "fingerprint": graph.fingerprint(),
        "ops": graph.num_ops,
        "groups": groups.num_groups,
        "cluster": cluster.name,
        "measure": kind,
        "level": loop.metadata.get("level"),
        "method": name,
        **loop.learner.info(),
        "steps": loop.rounds,
        "placements": loop.placements,
        "seed": seed,
        "best_step_time": best,
        "lower_bound": lb,
        "lower_bound_binds": bound.binds,
        "lower_bound_text": bound.describe(),
        "critical_path": bound.critical_path,
        "load_bound": bound.load,
        "ratio_to_lower_bound": best / lb if best is not None and lb > 0 else None,
        "train_seconds": wall,
        "measure_seconds": loop.measure_seconds(),
        "overhead_seconds_per_placement": outside / max(1, loop.measurer.count - loop.count_at_start),
        "learner_seconds_per_placement": loop.learner_seconds / max(1, loop.measurer.count - loop.count_at_start),
        **_after_first_round(loop),
        "seconds_to_within_5pct": _time_to_within(loop.curve, best, 0.05),
        "steps_per_second": rounds / max(wall, 1e-9),
        "curve": loop.curve,
        "last_step": last,
    }


def _after_first_round(loop) -> dict:
    """The method's own seconds in this process's first round (tracing and compiling included), and per placement after it."""
    first_s, first_n = loop.first_round or (0.0, 0)
    later = loop.measurer.count - loop.count_at_start - first_n
    after = (loop.learner_seconds - first_s) / later if later > 0 else None
    return {"learner_seconds_first_round": first_s, "learner_seconds_per_placement_after_first_round": after}


def _log_result(summary: dict, last: dict, log) -> None:
    best, lb, wall = summary["best_step_time"], summary["lower_bound"], summary["train_seconds"]
    if best is not None:
        log(
            f"best step time {fmt.step_time(best)}, {best / lb:.2f}x the lower bound ({summary['lower_bound_text']}; "
            f"1x is the best possible); {summary['steps']} steps in {fmt.seconds(wall)}"
        )
    elif last:
        log(
            f"no placement ran: every sample failed ({', '.join(last.get('failures', [])) or 'unknown'}); "
            f"{summary['steps']} steps in {fmt.seconds(wall)}"
        )
    else:  # stopped before its first step
        log(f"no step taken: nothing measured yet; {summary['steps']} steps")


def _read_json(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _time_to_within(curve, best: float | None, tol: float) -> float | None:
    """Seconds until the best step time first came within `tol` of the final best."""
    for _, t, seconds in curve if best is not None else ():
        if t <= best * (1 + tol):
            return seconds
    return None
