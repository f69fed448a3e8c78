"""Same-budget search baselines: random search and simulated annealing over groups.

A learned placer is only worth its cost if it beats simple search given the
same number of measured placements. Both searches place the co-location groups
of placer.core.grouping (the same groups the RL policy places, by default with
the same target and floor), one device per tie class, and measure every
candidate with the `Measurer` they are given (in placer-compare and
bench/rl.py: the simulator the learner uses).

- "random_search": `budget` placements drawn uniformly, each tie class on a
  device all of its ops have kernels for; the fastest is kept. The same
  draws, without measuring, are `random_group_devices`.
- "local_search": simulated annealing (Kirkpatrick et al., Science 1983)
  started from single_gpu (or, when that does not run, the fastest random
  placement that does). Each round proposes `batch` neighbours, each moving
  one tie class to another allowed device; the fastest neighbour replaces the
  current placement if it is faster, or else with probability exp(-delta / T),
  delta the step-time increase in seconds and T a temperature falling
  geometrically from `t_start` to `t_end` times single_gpu's step time over
  the budget.

Neither imports TensorFlow or the learner; the measurer is passed in.
"""

from __future__ import annotations

import numpy as np

from baselines import common, single
from placer.core import grouping as grouping_lib
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


class _Space:
    """The groups to place and the devices each tie class may use."""

    def __init__(self, graph: OpGraph, cluster: Cluster, groups: grouping_lib.Grouping | None, target_groups: int):
        if groups is None:
            floor = grouping_lib.group_floor(target_groups, cluster.num_devices)
            groups = grouping_lib.group(graph, target_groups=target_groups, min_groups=floor)
        self.graph, self.cluster, self.groups = graph, cluster, groups
        cls = groups.leader_index()[groups.op_group]
        bad = np.zeros((groups.num_leaders, cluster.num_devices), bool)
        np.logical_or.at(bad, cls, ~common.supported(graph, cluster))
        bad[bad.all(axis=1)] = False  # nowhere runs it: let the measurer report the failure
        self.allowed = ~bad  # [L, D]

    def placement(self, leader_devices: np.ndarray, method: str, **metadata) -> Placement:
        """The op-level placement of a device per tie class."""
        dev = self.groups.expand(leader_devices)[self.groups.op_group]
        return common.finish(self.graph, self.cluster, dev, method, **metadata)

    def random(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """[k, L] uniformly drawn allowed devices."""
        return _draw(self.allowed, rng, k)

    def from_ops(self, op_devices: np.ndarray) -> np.ndarray:
        """[L] the device of each tie class by majority of its ops."""
        votes = np.zeros(self.allowed.shape)
        np.add.at(votes, (self.groups.leader_index()[self.groups.op_group], op_devices), 1.0)
        return np.where(self.allowed, votes, -1.0).argmax(axis=1)


def _draw(allowed: np.ndarray, rng: np.random.Generator, k: int) -> np.ndarray:
    """[k, L] for each row of `allowed` [L, D] a device drawn uniformly among its True entries."""
    return (rng.random((k, *allowed.shape)) * allowed).argmax(axis=2)


def random_group_devices(
    graph: OpGraph,
    cluster: Cluster,
    groups: grouping_lib.Grouping,
    k: int,
    rng: np.random.Generator,
    devices=None,
) -> np.ndarray:
    """[k, G] device per group of `k` random placements, as random_search draws them.

    Each tie class goes to a device drawn uniformly among those with kernels
    for all of its ops (any device where none has), its groups with it.

    Args:
      graph: the op graph.
      cluster: the target cluster.
      groups: the grouping of `graph` to place.
      k: number of placements.
      rng: the random generator.
      devices: indices of the devices to draw from (default: all).

    Returns:
      [k, G] int device indices.
    """
    allowed = _Space(graph, cluster, groups, 0).allowed
    if devices is not None:
        keep = np.zeros(cluster.num_devices, dtype=bool)
        keep[np.asarray(devices, dtype=np.int64)] = True
        allowed = allowed & keep
        allowed[~allowed.any(axis=1)] = keep  # none of them has kernels: any of them (the measurer reports it)
    return groups.expand(_draw(allowed, rng, k))


_OPTIONS = ("measurer", "budget", "batch", "groups", "target_groups", "on_measured")


def _check(method: str, measurer, budget: int) -> None:
    if measurer is None:
        raise InputError(f"{method}: needs a measurer (placer-compare and bench/rl.py pass theirs)")
    if int(budget) <= 0:
        raise InputError(f"{method}: budget must be a positive number of placements, got {budget}")


def _times(measurer: Measurer, placements: list[Placement]) -> np.ndarray:
    return np.array([m.step_time if m.ok else np.inf for m in measurer.measure(placements)], dtype=np.float64)


def _start(space: _Space, measurer: Measurer, rng: np.random.Generator, budget: int, batch: int):
    """(start, its step time, placements measured): single_gpu, or when that fails
    (e.g. out of memory) the fastest random placement that runs."""
    cur = space.from_ops(single.place_single_gpu(space.graph, space.cluster).devices)
    (cur_t,) = _times(measurer, [space.placement(cur, "local_search")])
    done = 1
    while not np.isfinite(cur_t) and done < budget:
        cand = space.random(rng, min(batch, budget - done))
        t = _times(measurer, [space.placement(c, "local_search") for c in cand])
        done += len(cand)
        cur, cur_t = cand[int(t.argmin())], float(t.min())
    return cur, float(cur_t), done


def place_random_search(
    graph: OpGraph,
    cluster: Cluster,
    *,
    seed=None,
    measurer: Measurer | None = None,
    budget: int = 256,
    batch: int = 16,
    groups: grouping_lib.Grouping | None = None,
    target_groups: int = 256,
    on_measured=None,
    **options,
) -> Placement:
    """The fastest of `budget` uniformly drawn group placements.

    Args:
      graph: the op graph (not modified).
      cluster: the target cluster.
      seed: seeds the draws (None = 0).
      measurer: measures the candidates (required).
      budget: number of placements measured.
      batch: placements measured per call.
      groups: the grouping to place; default: placer.core.grouping with
        `target_groups` and the floor for this cluster.
      target_groups: the grouping target when `groups` is not given.
      on_measured: optional callback(measured so far, best step time in s) after each batch.
      **options: none (others are refused).

    Returns:
      The best placement; metadata records step_time (s) and budget.

    Raises:
      InputError: no measurer, a non-positive budget, or no candidate ran.
    """
    common.refuse_options("random_search", options, _OPTIONS)
    _check("random_search", measurer, budget)
    space = _Space(graph, cluster, groups, target_groups)
    rng = np.random.default_rng(0 if seed is None else seed)
    best_t, best = np.inf, None
    done = 0
    while done < budget:
        cand = space.random(rng, min(batch, budget - done))
        t = _times(measurer, [space.placement(c, "random_search") for c in cand])
        done += len(cand)
        if t.min() < best_t:
            best_t, best = float(t.min()), cand[int(t.argmin())]
        if on_measured is not None:
            on_measured(done, best_t)
    if best is None:
        raise InputError(f"random_search: none of {budget} placements of {graph.name} ran")
    return space.placement(best, "random_search", step_time=best_t, budget=int(budget))


def place_local_search(
    graph: OpGraph,
    cluster: Cluster,
    *,
    seed=None,
    measurer: Measurer | None = None,
    budget: int = 256,
    batch: int = 16,
    t_start: float = 0.02,
    t_end: float = 0.0005,
    groups: grouping_lib.Grouping | None = None,
    target_groups: int = 256,
    on_measured=None,
    **options,
) -> Placement:
    """Simulated annealing from single_gpu, one tie class moved per neighbour (module doc).

    Args:
      graph, cluster, seed, measurer, budget, batch, groups, target_groups,
        on_measured: as in `place_random_search`; the start counts against
        the budget.
      t_start: first temperature, as a fraction of the start's step time.
      t_end: last temperature, as a fraction of the start's step time.
      **options: none (others are refused).

    Returns:
      The best placement seen; metadata records step_time (s) and budget.

    Raises:
      InputError: no measurer, a non-positive budget, or the start failed.
    """
    common.refuse_options("local_search", options, (*_OPTIONS, "t_start", "t_end"))
    _check("local_search", measurer, budget)
    space = _Space(graph, cluster, groups, target_groups)
    rng = np.random.default_rng(0 if seed is None else seed)
    cur, cur_t, done = _start(space, measurer, rng, budget, batch)
    if not np.isfinite(cur_t):
        raise InputError(f"local_search: neither single_gpu nor {budget - 1} random placements of {graph.name} ran")
    best, best_t = cur.copy(), float(cur_t)
    rounds = max(1, -(-(budget - 1) // batch))
    cool = (t_end / t_start) ** (1.0 / max(1, rounds - 1))
    temp = t_start * best_t
    movable = np.flatnonzero(space.allowed.sum(axis=1) > 1)
    while done < budget and len(movable):
        k = min(batch, budget - done)
        cand = np.repeat(cur[None], k, axis=0)
        which = rng.choice(movable, size=k)
        for i, g in enumerate(which):
            choices = np.flatnonzero(space.allowed[g] & (np.arange(cluster.num_devices) != cur[g]))
            cand[i, g] = rng.choice(choices)
        t = _times(measurer, [space.placement(c, "local_search") for c in cand])
        done += k
        j = int(t.argmin())
        if t[j] < cur_t or rng.random() < np.exp(-(t[j] - cur_t) / temp):
            cur, cur_t = cand[j], float(t[j])
        if cur_t < best_t:
            best, best_t = cur.copy(), cur_t
        temp *= cool
        if on_measured is not None:
            on_measured(done, best_t)
    return space.placement(best, "local_search", step_time=best_t, budget=int(budget))
