"""Learned methods built on baselines.search's simulated annealing, and their learning-off ablations.

Each keeps annealing's start (single_gpu), schedule and acceptance rule
(baselines.search.Annealing, with its fixed settings) and changes only which
neighbours are measured:

- `LearnedMoves`: neighbours drawn from a learned distribution over moves
  (which tie class, to which device), a log-linear model over features of the
  move in the current placement (the bytes the class exchanges with each
  device, its compute time there, the devices' loads) plus a learned logit per
  class and per (class, device). It is trained by cross-entropy on the moves
  that made the placement faster, as Post (Gao et al., NeurIPS 2018) trains
  its policy on the elite samples. Learning off: every weight stays zero, so
  the moves are annealing's uniform ones. With `init_from` (a folder where an
  earlier learned_moves search saved its state, on any graph), the shared
  feature weights start where that search left them: what was learned about
  moves transfers; the per-class logits start at zero.
- `CostModel`: `screen` times as many uniform neighbours as are measured are
  drawn, a ridge regression of step time on features of a placement (per-device
  compute load, cross-device bytes, the busiest device's compute plus
  transfer time), fitted to the placements measured so far, predicts their
  step times, and the ones measured are drawn with weights exp(-predicted /
  annealing's temperature). Screening measures nothing. Learning off: equal
  weights, which is annealing's uniform neighbours.

`Plain` is annealing itself, driven by the same loop (the reference), and
`FromWarmStart` the same annealing started from the warm start's baseline
instead of single_gpu (the reference for methods that start there).
"""

from __future__ import annotations

import json
import os

import numpy as np

from baselines import search
from placer.core import atomic
from placer.core.errors import InputError
from placer.rl import learner as learner_lib
from placer.rl import move_models
from placer.rl.learner import Setup

STATE = "learner.json"


class Plain:
    """baselines.search's simulated annealing as a placer.rl.learner.Learner."""

    name = "annealing"
    init_from = None  # what --init_from names: nothing (it starts from nothing learned)
    uses_start = True  # starts from single_gpu (placer.rl.learner.start_placement)

    def __init__(self, setup: Setup, learning: bool = True):
        if setup.init_from and not self.init_from:
            raise InputError(f"--init_from: {self.name} starts from nothing learned")
        if setup.budget <= 0:
            raise InputError(f"{self.name}: needs a budget (--max_placements or --steps) to fit its cooling to")
        self.setup, self.learning = setup, learning
        problem = setup.problem
        self.space = search.Space(problem.graph, setup.cluster, setup.groups, 0)
        self.rng = np.random.default_rng(setup.seed)
        self.anneal = search.Annealing(
            self.space, self.rng, setup.budget, search.BATCH, search.T_START, search.T_END, moves=self.moves,
            start=learner_lib.start_classes(setup, self.space, learner_lib.start_placement(setup).devices)
            if self.uses_start
            else None,
        )  # fmt: skip
        self._last = None  # [k, L] the tie classes' devices of the last proposal

    def moves(self, rng, cur: np.ndarray, k: int) -> np.ndarray:
        """[k, L] neighbours of `cur` to measure (annealing's uniform ones here)."""
        return search.uniform_moves(self.space, rng, cur, k)

    def learn(self, cand: np.ndarray, t: np.ndarray, cur: np.ndarray, cur_t: float) -> None:
        """Learns from `cand` [k, L] measured at `t` [k] s (inf = failed): neighbours of `cur` (step time
        `cur_t` s), or while no start ran (`cur` None) start candidates."""

    def propose(self, limit: int) -> np.ndarray:
        self._last = self.anneal.propose()[:limit]
        return self.space.groups.expand(self._last)

    def observe(self, devices: np.ndarray, results) -> dict:
        t = step_times(results)
        cand, cur, cur_t = self._last[: len(t)], self.anneal.cur, self.anneal.cur_t
        moved = self.anneal.observe(cand, t)
        self.rounds += 1
        if self.learning:
            self.learn(cand, t, cur, cur_t)
        return {
            "mean_step_time": mean_finite(t),
            "current_step_time": float(self.anneal.cur_t),
            "moved": bool(moved),
        }

    def best(self):
        return None

    def finished(self) -> bool:
        return self.anneal.finished()

    def state(self) -> dict:
        """The model's state beside annealing's (JSON-serialisable)."""
        return {}

    def load_state(self, state: dict) -> None:
        """Restores what `state` returned."""

    def save(self) -> None:
        write_state(
            self, budget=self.setup.budget, rounds=self.rounds, annealing=self.anneal.state(), model=self.state()
        )

    rounds = 0

    def restore(self) -> int:
        record = read_own_state(self, ("model", "annealing"))  # a larger budget continues at the saved cooling rate
        self.anneal.load_state(record["annealing"])
        self.load_state(record["model"])
        self.rounds = int(record["rounds"])
        return self.rounds

    def info(self) -> dict:
        return {"policy": self.name, "learning": self.learning, "samples_per_step": search.BATCH}


def step_times(results) -> np.ndarray:
    """[k] the measured step times (s) of `results`, inf where a placement failed or was flagged."""
    return np.array([m.step_time if m.ok and not m.flagged else np.inf for m in results], np.float64)


def mean_finite(t: np.ndarray) -> float:
    """The mean of the finite entries of `t` (s), inf when there are none."""
    ok = np.isfinite(t)
    return float(t[ok].mean()) if ok.any() else float("inf")


def identity(learner) -> dict:
    """What a learner's saved state must match to be restored: its method, learning on or off, the graph
    (fingerprint) and its number of tie classes."""
    return {
        "method": learner.name,
        "learning": learner.learning,
        "fingerprint": learner.setup.problem.graph.fingerprint(),
        "classes": int(learner.space.allowed.shape[0]),
    }


def write_state(learner, **fields) -> None:
    """Writes `learner`'s identity and `fields` (JSON-serialisable) to its workdir's learner.json, atomically."""
    os.makedirs(learner.setup.workdir, exist_ok=True)
    atomic.write_text(os.path.join(learner.setup.workdir, STATE), json.dumps({**identity(learner), **fields}))


def read_own_state(learner, keys) -> dict:
    """The learner.json `write_state` wrote for `learner`, holding `keys`.

    Raises:
      InputError: missing, unreadable, or made for another method, setting, graph or grouping.
    """
    path = os.path.join(learner.setup.workdir, STATE)
    record = read_state(path, keys)
    for key, value in identity(learner).items():
        if record.get(key) != value:
            raise InputError(f"{path}: made for another {key} ({record.get(key)!r}, this run has {value!r})")
    return record


def read_state(path: str, keys=("model", "annealing")) -> dict:
    """A learner.json that a learner's `save` wrote, holding `keys`.

    Raises:
      InputError: missing, unreadable or not such a file.
    """
    try:
        with open(path) as f:
            record = json.load(f)
        for key in keys:
            record[key]  # noqa: B018 (present)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"{path}: cannot read the learner's state ({e})") from None
    return record


class FromWarmStart(Plain):
    """Annealing started from the warm start's fastest baseline (placer-train's `warm_start`), not single_gpu.

    The start is the baseline's majority device per tie class, which placer-train's problem reads as the
    baseline itself where the groups mix its devices (Problem.with_base), measured once more (it counts,
    like the baselines the warm start measured); without a warm start, or on resuming, this is `Plain`.
    """

    name = "annealing_warm"
    uses_warm_start = True

    def __init__(self, setup: Setup, learning: bool = True):
        super().__init__(setup, learning)
        self._start = None
        if setup.warm is not None:
            start = learner_lib.start_classes(setup, self.space, setup.warm[1].devices)
            devices = self.space.groups.expand(start[None])
            t = step_times(setup.problem.measure(setup.measurer, devices))
            if np.isfinite(t[0]):
                self.anneal.observe(start[None], t)
                self._start = (float(t[0]), devices[0])

    def best(self):
        return self._start


class LearnedMoves(Plain):
    """Annealing with moves drawn from a distribution learned on the moves that helped (module doc)."""

    name = "learned_moves"
    init_from = "learned_moves"  # --init_from: the workdir of an earlier learned_moves search

    def __init__(self, setup: Setup, learning: bool = True):
        super().__init__(setup, learning)
        self.model = move_models.MoveModel(self.space, setup.problem, setup.cluster)
        if setup.init_from:
            self.model.load_shared(read_state(os.path.join(setup.init_from, STATE))["model"])

    def moves(self, rng, cur, k):
        return self.model.sample(rng, cur, k)

    def learn(self, cand, t, cur, cur_t):
        if cur is not None:
            self.model.learn(cur, cand, t < cur_t)

    def state(self):
        return self.model.state()

    def load_state(self, state):
        self.model.load_state(state)


class CostModel(Plain):
    """Annealing whose neighbours are screened by a fitted cost model (module doc)."""

    name = "cost_model"

    def __init__(self, setup: Setup, learning: bool = True, screen: int = 8):
        super().__init__(setup, learning)
        self.screen = int(screen)
        self.model = move_models.StepTimeModel(self.space, setup.problem, setup.cluster)

    def moves(self, rng, cur, k):
        many = search.uniform_moves(self.space, rng, cur, self.screen * k)
        many = np.unique(many, axis=0)
        # k of them drawn without replacement with weights exp(-predicted step time / annealing's
        # temperature) (Gumbel top-k): near uniform while it is hot, the predicted best as it cools,
        # so the screen keeps annealing's uphill moves early on.
        keys = rng.gumbel(size=len(many))
        if self.learning and self.model.fitted:
            keys -= self.model.predict(many) / self.anneal.temp
        return many[np.argsort(-keys, kind="stable")[:k]]

    def learn(self, cand, t, cur, cur_t):
        self.model.add(cand, t)

    def state(self):
        return self.model.state()

    def load_state(self, state):
        self.model.load_state(state)


class RandomSearch(Plain):
    """baselines.search's random search (uniform placements of the tie classes), driven by the same loop."""

    name = "random_search"
    uses_start = False  # draws every placement uniformly

    def propose(self, limit: int) -> np.ndarray:
        self._last = self.space.random(self.rng, min(search.BATCH, limit))
        return self.space.groups.expand(self._last)

    def observe(self, devices, results) -> dict:
        self.rounds += 1
        t = np.array([m.step_time if m.ok else np.inf for m in results])
        return {"mean_step_time": mean_finite(t)}

    def finished(self) -> bool:
        return False

    def save(self) -> None:
        """Random search keeps no state worth a checkpoint but its generator, saved with annealing's."""
        super().save()
