"""baselines.search's searches as learners, driven by placer.rl.search_loop.

`Annealing` is baselines.search.Annealing itself (local_search's annealing,
the same draws for the same seed), `FromWarmStart` the same annealing
started from the warm start's baseline instead of single_gpu, and
`RandomSearch` the baseline's uniform draws. Also the learner.json helpers
that every numpy learner saves its state with.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from baselines import search
from baselines import space as space_lib
from placer.core import atomic
from placer.core.errors import InputError
from placer.rl import learner as learner_lib
from placer.rl.learner import Setup

STATE = "learner.json"


@dataclasses.dataclass(frozen=True)
class Config:
    """The searches' settings: baselines.search's (fixed before any learned method was tuned).

    Attributes:
      batch: placements per round (annealing's neighbours, random search's draws).
      t_start, t_end: annealing's first and last temperature, as fractions of its start's step time.
    """

    batch: int = search.BATCH
    t_start: float = search.T_START
    t_end: float = search.T_END


class Annealing:
    """baselines.search's simulated annealing as a placer.rl.learner.Learner."""

    name = "annealing"
    init_from = None  # what --init_from names: nothing (it starts from nothing learned)
    uses_start = True  # starts from single_gpu (placer.rl.learner.start_placement)

    def __init__(self, setup: Setup, config: Config | None = None):
        config = config or Config()
        if setup.init_from and not self.init_from:
            raise InputError(f"--init_from: {self.name} starts from nothing learned")
        if setup.budget <= 0:
            raise InputError(f"{self.name}: needs a budget (--max_placements or --steps) to fit its cooling to")
        self.setup, self.config = setup, config
        problem = setup.problem
        self.space = space_lib.Space(problem.graph, setup.cluster, setup.groups, 0)
        self.rng = np.random.default_rng(setup.seed)
        self.anneal = search.Annealing(
            self.space, self.rng, setup.budget, config.batch, config.t_start, config.t_end,
            start=learner_lib.start_classes(setup, self.space, learner_lib.start_placement(setup).devices)
            if self.uses_start
            else None,
        )  # fmt: skip
        self._last = None  # [k, L] the tie classes' devices of the last proposal

    def propose(self, limit: int) -> np.ndarray:
        self._last = self.anneal.propose()[:limit]
        return self.space.groups.expand(self._last)

    def observe(self, devices: np.ndarray, results) -> dict:
        t = step_times(results)
        moved = self.anneal.observe(self._last[: len(t)], t)
        self.rounds += 1
        return {
            "mean_step_time": mean_finite(t),
            "current_step_time": float(self.anneal.cur_t),
            "moved": bool(moved),
        }

    def best(self):
        return None

    def finished(self) -> bool:
        return self.anneal.finished()

    def save(self) -> None:
        write_state(self, budget=self.setup.budget, rounds=self.rounds, annealing=self.anneal.state())

    rounds = 0

    def restore(self) -> int:
        record = read_own_state(self, ("annealing",))  # a larger budget continues at the saved cooling rate
        self.anneal.load_state(record["annealing"])
        self.rounds = int(record["rounds"])
        return self.rounds

    def info(self) -> dict:
        return {"policy": self.name, "samples_per_step": self.config.batch}


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
        "learning": getattr(learner, "learning", None),
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


def read_state(path: str, keys=("annealing",)) -> dict:
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


class FromWarmStart(Annealing):
    """Annealing started from the warm start's fastest baseline (placer-train's `warm_start`), not single_gpu.

    The start is the baseline's majority device per tie class, which placer-train's problem reads as the
    baseline itself where the groups mix its devices (Problem.with_base), measured once more (it counts,
    like the baselines the warm start measured); without a warm start, or on resuming, this is `Annealing`.
    """

    name = "annealing_warm"
    uses_warm_start = True

    def __init__(self, setup: Setup, config: Config | None = None):
        super().__init__(setup, config)
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


class RandomSearch(Annealing):
    """baselines.search's random search (uniform placements of the tie classes), driven by the same loop."""

    name = "random_search"
    uses_start = False  # draws every placement uniformly

    def propose(self, limit: int) -> np.ndarray:
        self._last = self.space.random(self.rng, min(self.config.batch, limit))
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
