"""Where a search starts: the warm start's fastest baseline, the fastest baseline of a cluster without a GPU,
and a grouping (and a reading of it) under which that baseline stays a placement the search can return.

The library behind placer-train's start (placer.rl.train_lib) and placer-extract's group counts.
"""

from __future__ import annotations

from baselines import registry as baseline_registry
from baselines import single
from placer.core import fmt
from placer.core.errors import InputError
from placer.measure import registry as measure_registry
from placer.rl import methods
from placer.rl import problem as problem_lib


def from_its_start(problem, name: str, warm, start, cluster, log=print):
    """`problem` decoding group placements relative to the baseline the method `name` starts from (its warm
    start's, or its start's: single_gpu or, without a GPU, `start`), where the groups mix that baseline's
    devices: the search then starts from the baseline itself and can always return it (Problem.with_base).

    Args:
      problem: the grouped problem.
      name: the method.
      warm, start: (step time s, Placement) or None, of the warm start and of `cpu_only_start`.
      cluster: the devices.
      log: where the line saying so goes.
    """
    if methods.uses_warm_start(name):
        begin = None if warm is None else warm[1]
    elif methods.uses_start(name):
        begin = start[1] if start is not None else single.place_start(problem.graph, cluster)
    else:
        begin = None
    if begin is None:
        return problem
    based = problem.with_base(begin.devices)
    if based.base is not None:
        mixed = int((based.base_target[based.op_group] != based.base).sum())
        log(
            f"start: the groups mix {begin.metadata.get('method')}'s devices ({mixed:,} ops off their group's "
            "majority device); a group on its majority device keeps them, so the search starts from "
            f"{begin.metadata.get('method')}'s own placement and can return to it"
        )
    return based


def cpu_only_start(name: str, graph, cluster, measurer, seed: int, train_config, log=print):
    """Where a method that starts from single_gpu starts on a cluster without a GPU: the fastest baseline that
    runs there (every registered one measured, counted against the budget, as a warm start is).

    Returns:
      (step time s, Placement) or None: the cluster has a GPU, the method does not start from single_gpu
      (or is given a warm start), or no baseline ran (the method then starts from single_cpu).
    """
    if not methods.uses_start(name) or methods.uses_warm_start(name) or cluster.indices_of_type("GPU"):
        return None
    skipped = skips_list_scheduling("all", graph.num_ops, train_config)
    log(f"start: single_gpu needs a GPU and {cluster.name} has none; {name} starts from the fastest baseline")
    start = best_baseline(graph, cluster, measurer, "all", seed, log, skip_list_scheduling=bool(skipped))
    if start is not None:
        log(f"start: {start[1].metadata.get('method')}, {fmt.step_time(start[0])} (fastest of the baselines that ran)")
    return start


def start_line(
    warm_start: str, resume: bool, init_from: str | None, skipped_above: int = 0, warm: tuple | None = None
) -> str:
    """What a run starts from: a warm start (the baseline it starts from, of those named) or none, a resumed
    or a pretrained policy.

    `skipped_above` > 0: the warm start left out the list-scheduling baselines
    because the graph has more ops than that (`skips_list_scheduling`).
    `warm`: (step time s, Placement) of the baseline it starts from.

    >>> start_line("", False, None), start_line("expert", True, None)
    ('warm start: off (uniform policy)', 'warm start: off (resumed from the checkpoint)')
    >>> start_line("all", False, None, 50000)
    'warm start: on, imitating the fastest of all (list scheduling skipped above 50,000 ops)'
    """
    if resume:
        return "warm start: off (resumed from the checkpoint)"
    if init_from is not None:
        return f"warm start: off (policy from --init_from={init_from})"
    if warm_start:
        skipped = f" (list scheduling skipped above {skipped_above:,} ops)" if skipped_above else ""
        if warm is None:
            return f"warm start: on, imitating the fastest of {warm_start}{skipped}"
        name = warm[1].metadata.get("method", "?")
        return f"warm start: on, from {name} ({fmt.step_time(warm[0])}), the fastest of {warm_start}{skipped}"
    return "warm start: off (uniform policy)"  # none asked, or none of the baselines ran


def skips_list_scheduling(methods: str, num_ops: int, train_config) -> int:
    """The op count above which a warm start of "all" leaves out the list-scheduling baselines, when it does.

    Args:
      methods: the warm start's baselines (`config.placer.train.warm_start`).
      num_ops: ops in the graph.
      train_config: `config.placer.train`; its `warm_start_list_scheduling_max_ops`
        (0 or absent = never skip) is the threshold.

    Returns:
      The threshold in ops when `methods` is "all" and the graph is larger, else 0.
    """
    limit = int(train_config.get("warm_start_list_scheduling_max_ops", 0) or 0)
    return limit if methods.strip() == "all" and 0 < limit < num_ops else 0


def prepare_problem(graph, cluster, placer_config, measurer, seed: int, log=print):
    """Groups the graph and builds the problem, keeping the warm start's placement expressible.

    With `placer_config.train.warm_start` set, the named baselines are placed
    and measured first (deterministic, so a resumed search gets the same
    groups) and the fastest one's devices colour the grouping.

    Returns:
      (Problem, Grouping, (step time s, Placement) of the warm start or None).
    """
    warm = None
    methods = placer_config.train.warm_start
    if methods:
        skipped = skips_list_scheduling(methods, graph.num_ops, placer_config.train)
        why = f" (list scheduling skipped above {skipped:,} ops)" if skipped else ""
        log(f"warm start: placing and measuring {methods}{why}")
        warm = best_baseline(graph, cluster, measurer, methods, seed, log, skip_list_scheduling=bool(skipped))
    log(f"grouping {graph.num_ops} ops (target {placer_config.grouping.get('target_groups', 0)} groups)")
    problem, groups = problem_lib.make_problem(
        graph, cluster, placer_config, op_colors=None if warm is None else warm[1].devices
    )
    return problem, groups, warm


def placed_groups(graph, cluster, placer_config, seed: int = 0, log=print):
    """What placer-train places on `graph`: the grouping of methods that choose their own start, and of the
    warm-started ones (their warm start's baselines placed and measured by the simulator, as placer-train
    with `--measure=sim` does, and the fastest's devices kept apart as `prepare_problem` keeps them).

    Returns:
      (Grouping, Grouping or None, (step time s, Placement) or None): the plain grouping, the warm-started
      methods' (None without a warm start) and the warm start's baseline.
    """
    plain = problem_lib.group_graph(graph, cluster, placer_config)
    if not placer_config.train.warm_start:
        return plain, None, None
    sim = measure_registry.make_measurer("sim", graph, cluster)
    skipped = skips_list_scheduling(placer_config.train.warm_start, graph.num_ops, placer_config.train)
    warm = best_baseline(graph, cluster, sim, placer_config.train.warm_start, seed, log, bool(skipped))
    if warm is None:
        return plain, plain, None
    return plain, problem_lib.group_graph(graph, cluster, placer_config, warm[1].devices), warm


def best_baseline(graph, cluster, measurer, methods: str, seed: int, log=print, skip_list_scheduling: bool = False):
    """The fastest of the named baselines (comma-separated, or "all": every registered one that does not
    itself search by measuring, single_gpu included) as measured by `measurer`.

    With `skip_list_scheduling`, "all" leaves out baseline_registry.LIST_SCHEDULING.

    Returns:
      (step time in seconds, Placement), or None when none of them ran.
    """
    placements = []
    if methods.strip() == "all":
        left_out = baseline_registry.MEASURED | (baseline_registry.LIST_SCHEDULING if skip_list_scheduling else set())
        names = [n for n in baseline_registry.names() if n not in left_out]
    else:
        names = [n.strip() for n in methods.split(",") if n.strip()]
    for name in names:
        try:
            placements.append(baseline_registry.get(name)(graph, cluster, seed=seed))
        except InputError as e:
            log(f"warm start: skipping {name} ({e})")
    results = measurer.measure(placements) if placements else []
    ok = [(m.step_time, p) for m, p in zip(results, placements, strict=True) if m.ok]
    if not ok:
        log("warm start: no baseline placement ran; starting from a uniform policy")
        return None
    return min(ok, key=lambda x: x[0])
