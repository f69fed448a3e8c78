"""Same-budget search baselines: random search and simulated annealing over groups.

A learned placer is only worth its cost if it beats simple search given the
same number of measured placements. Both searches place the co-location groups
of placer.core.grouping (the same groups the RL policy places, by default with
the same target and floor), one device per tie class, and measure every
candidate with the `Measurer` they are given (in placer-compare and
bench/rl.py: the simulator the learner uses).

- "random_search": `budget` placements drawn uniformly, each tie class on a
  device all of its ops have kernels for; the fastest is kept. The same
  draws, without measuring, are `baselines.space.random_group_devices`.
- "local_search": simulated annealing (Kirkpatrick et al., Science 1983)
  started from single_gpu (single_cpu on a cluster without a GPU; or, when
  that does not run, the fastest random placement that does). Each round proposes `batch` neighbours, each moving
  one tie class to another allowed device; the fastest neighbour replaces the
  current placement if it is faster, or else with probability exp(-delta / T),
  delta the step-time increase in seconds and T a temperature falling
  geometrically from `t_start` to `t_end` times single_gpu's step time over
  the budget.

Neither imports TensorFlow or the learner; the measurer is passed in. The
candidates reach it as device arrays (placer.core.measurement.measure_devices);
only the best becomes a Placement.
"""

from __future__ import annotations

import numpy as np

from baselines import common, single
from baselines.space import Space, uniform_moves
from placer.core import grouping as grouping_lib
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

# Annealing's settings (our choices, fixed before any learned method was tuned): neighbours per
# round, and the first and last temperature as fractions of the start's step time.
BATCH = 16
T_START = 0.02
T_END = 0.0005

_OPTIONS = ("measurer", "budget", "batch", "groups", "target_groups", "on_measured")


def _check(method: str, measurer, budget: int) -> None:
    if measurer is None:
        raise InputError(f"{method}: needs a measurer (placer-compare and bench/rl.py pass theirs)")
    if int(budget) <= 0:
        raise InputError(f"{method}: budget must be a positive number of placements, got {budget}")


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
      The best placement; metadata records step_time (s), budget and
      samples (placements measured).

    Raises:
      InputError: no measurer, a non-positive budget, or no candidate ran.
    """
    common.refuse_options("random_search", options, _OPTIONS)
    _check("random_search", measurer, budget)
    space = Space(graph, cluster, groups, target_groups)
    rng = np.random.default_rng(0 if seed is None else seed)
    best_t, best = np.inf, None
    done = 0
    while done < budget:
        cand = space.random(rng, min(batch, budget - done))
        t = space.times(measurer, cand)
        done += len(cand)
        if t.min() < best_t:
            best_t, best = float(t.min()), cand[int(t.argmin())]
        if on_measured is not None:
            on_measured(done, best_t)
    if best is None:
        raise InputError(f"random_search: none of {budget} placements of {graph.name} ran")
    return space.placement(best, "random_search", step_time=best_t, budget=int(budget), samples=done)


class Annealing:
    """Simulated annealing's state, driven one batch at a time (module doc).

    `propose` returns the next placements to measure and `observe` takes their
    step times, so the caller owns the measuring (place_local_search below, or
    a learner that changes how neighbours are drawn through `moves`).

    Args:
      space: the tie classes and their allowed devices.
      rng: the search's random generator (shared with `moves`).
      budget: placements the whole search may measure (sets the cooling rate).
      batch: neighbours per round.
      t_start, t_end: first and last temperature, as fractions of the start's step time.
      moves: callable(rng, cur [L], k) -> [k, L] neighbours; default `baselines.space.uniform_moves`.
      start: [L] the tie classes' devices measured first; default single_gpu's (`single.place_start`).
    """

    def __init__(
        self, space: Space, rng, budget: int, batch: int, t_start: float, t_end: float, moves=None, start=None
    ):
        self.space, self.rng, self.budget, self.batch = space, rng, int(budget), int(batch)
        # [L] the first placement measured: single_gpu (single_cpu without a GPU) unless given
        self.start = space.from_ops(single.place_start(space.graph, space.cluster).devices) if start is None else start
        self.t_start, self.t_end = float(t_start), float(t_end)
        self.moves = moves or (lambda r, cur, k: uniform_moves(space, r, cur, k))
        self.done = 0
        self.cur: np.ndarray | None = None
        self.cur_t = np.inf
        self.best, self.best_t = None, np.inf
        self.temp = self.cool = 0.0
        self.movable = bool(space.movable().any())

    @property
    def started(self) -> bool:
        """Whether a start that runs has been found (annealing proper has begun)."""
        return self.temp > 0

    def finished(self) -> bool:
        """Whether the budget is spent, or nothing can move."""
        return self.done >= self.budget or (self.started and not self.movable)

    def propose(self) -> np.ndarray:
        """[k, L] the next placements to measure: single_gpu first, random ones while no start ran, then neighbours."""
        if self.done == 0:
            return np.asarray(self.start)[None]
        k = min(self.batch, self.budget - self.done)
        if not self.started:
            return self.space.random(self.rng, k)
        return self.moves(self.rng, self.cur, k)

    def observe(self, cand: np.ndarray, t: np.ndarray) -> bool:
        """Takes the step times (s, inf = failed) of `propose`'s placements; returns whether the current one moved."""
        self.done += len(cand)
        j = int(np.argmin(t))
        if not self.started:
            if np.isfinite(t[j]):
                self.cur, self.cur_t = cand[j].copy(), float(t[j])
                self.best, self.best_t = self.cur.copy(), self.cur_t
                rounds = max(1, -(-(self.budget - 1) // self.batch))
                self.cool = (self.t_end / self.t_start) ** (1.0 / max(1, rounds - 1))
                self.temp = self.t_start * self.best_t
            return self.started
        moved = bool(t[j] < self.cur_t or self.rng.random() < np.exp(-(t[j] - self.cur_t) / self.temp))
        if moved:
            self.cur, self.cur_t = cand[j], float(t[j])
        if self.cur_t < self.best_t:
            self.best, self.best_t = self.cur.copy(), self.cur_t
        self.temp *= self.cool
        return moved

    def state(self) -> dict:
        """A JSON-serialisable copy of the search's state (the generator's included)."""
        arr = lambda a: None if a is None else np.asarray(a).tolist()  # noqa: E731
        return {
            "done": self.done, "cur": arr(self.cur), "cur_t": self.cur_t, "best": arr(self.best),
            "best_t": self.best_t, "temp": self.temp, "cool": self.cool, "rng": self.rng.bit_generator.state,
        }  # fmt: skip

    def load_state(self, state: dict) -> None:
        """Restores what `state` returned."""
        self.done, self.cur_t, self.best_t = int(state["done"]), float(state["cur_t"]), float(state["best_t"])
        self.temp, self.cool = float(state["temp"]), float(state["cool"])
        self.cur = None if state["cur"] is None else np.asarray(state["cur"], np.int64)
        self.best = None if state["best"] is None else np.asarray(state["best"], np.int64)
        self.rng.bit_generator.state = state["rng"]


def place_local_search(
    graph: OpGraph,
    cluster: Cluster,
    *,
    seed=None,
    measurer: Measurer | None = None,
    budget: int = 256,
    batch: int = BATCH,
    t_start: float = T_START,
    t_end: float = T_END,
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
      The best placement seen; metadata records step_time (s), budget and
      samples (placements measured, fewer than budget only when no tie
      class can move).

    Raises:
      InputError: no measurer, a non-positive budget, or the start failed.
    """
    common.refuse_options("local_search", options, (*_OPTIONS, "t_start", "t_end"))
    _check("local_search", measurer, budget)
    space = Space(graph, cluster, groups, target_groups)
    search = Annealing(space, np.random.default_rng(0 if seed is None else seed), budget, batch, t_start, t_end)
    while not search.finished():
        cand = search.propose()
        search.observe(cand, space.times(measurer, cand))
        if on_measured is not None and search.started:
            on_measured(search.done, search.best_t)
    if not search.started:
        raise InputError(f"local_search: neither its start nor {budget - 1} random placements of {graph.name} ran")
    return space.placement(
        search.best, "local_search", step_time=search.best_t, budget=int(budget), samples=search.done
    )
