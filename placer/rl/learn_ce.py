"""Cross-entropy search: a table of device probabilities per tie class, trained on its best samples.

The policy is the cross-entropy method's (Rubinstein, 1997), which Post
(Gao et al., NeurIPS 2018) uses to train its placement policy: tie class c
goes to device d with probability P[c, d], independently of the others. Each
round draws `population` placements from P, measures them, and moves P
toward the device frequencies of the elite by `rate`; a floor keeps every
allowed device possible. The elite is the fastest `elite` share of the
population, chosen among this round's samples and the last round's elite
(an elite kept until something faster replaces it, so that one unlucky
round cannot pull P away from the best placements found). Failed placements
(out of memory, unsupported) rank last.

P starts as a mixture of the uniform distribution over each class's allowed
devices (weight 1 - `start_mass`) and a start placement (weight
`start_mass`): single_gpu, annealing's start, or, with `init_from` (a
placer-pretrain folder), the pretrained graph policy: the device frequencies
of `prior_samples` placements drawn from it on this graph, which measures
nothing.

Once P has settled (no placement faster than the best so far for
`patience` rounds), the search restarts around its best: P becomes the same
mixture with the best placement in place of the start, and the elite is
emptied, so that the rest of the budget explores another basin instead of
re-measuring the one it settled in. The best placement itself is never
lost (the search loop keeps it).

Learning off (the ablation): P stays at its start, so the same loop draws
from a frozen distribution.

The settings (`Config`) are our choice; BENCHMARKS.md ("How cross_entropy and
ce_or_annealing were tuned") says how they were made.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from baselines import space as space_lib
from placer.core.errors import InputError
from placer.rl import learn_anneal
from placer.rl import learner as learner_lib
from placer.rl.learner import Setup

STATE = learn_anneal.STATE


@dataclasses.dataclass(frozen=True)
class Config:
    """The cross-entropy search's settings (module doc).

    Attributes:
      learning: False = the ablation: P stays at its start.
      population: placements drawn per round.
      elite: the share of them (and of the last round's elite) that P moves toward.
      rate: how far P moves toward the elite's device frequencies per round.
      floor: the least probability of an allowed device.
      start_mass: the start placement's weight in P's first mixture (the rest uniform).
      prior_samples: placements drawn from a pretrained policy to read its device shares.
      patience: rounds without a new best before P restarts around the best.
    """

    learning: bool = True
    population: int = 64
    elite: float = 0.1
    rate: float = 0.4
    floor: float = 0.002
    start_mass: float = 0.5
    prior_samples: int = 256
    patience: int = 20


class CrossEntropy:
    """The cross-entropy search as a placer.rl.learner.Learner (module doc)."""

    name = "cross_entropy"
    init_from = "policy"  # --init_from: a placer-pretrain folder
    uses_start = True  # single_gpu's table unless a policy is given (placer.rl.learner.start_placement)

    def __init__(self, setup: Setup, config: Config | None = None):
        c = config or Config()
        self.setup, self.learning = setup, c.learning
        self.population, self.rate, self.floor = int(c.population), float(c.rate), float(c.floor)
        self.elite = max(1, int(round(c.elite * self.population)))
        self.space = space_lib.Space(setup.problem.graph, setup.cluster, setup.groups, 0)
        self.rng = np.random.default_rng(setup.seed)
        self.start = (
            learner_lib.start_name(setup) if setup.init_from is None else f"pretrained policy {setup.init_from}"
        )
        self.start_mass, self.patience = float(c.start_mass), int(c.patience)
        self.start_table = self._start_distribution(c.prior_samples)  # [L, D] single_gpu or the policy's shares
        self.P = self._mixture(self.start_table)
        self.rounds = self.stale = self.restarts = 0
        self.best_t, self.best_x = np.inf, None
        self._last = None
        self.elite_x = np.zeros((0, len(self.P)), np.int64)  # [E, L] the elite kept from the last round
        self.elite_t = np.zeros(0)  # [E] their step times (s)

    def _mixture(self, table: np.ndarray) -> np.ndarray:
        """[L, D] (1 - start_mass) x uniform over the allowed devices + start_mass x `table` (rows summing to 1)."""
        allowed = self.space.allowed
        return (1 - self.start_mass) * allowed / allowed.sum(axis=1, keepdims=True) + self.start_mass * table

    def _start_distribution(self, samples: int) -> np.ndarray:
        """[L, D] single_gpu as a one-hot table, or the pretrained policy's device frequencies."""
        D = self.space.allowed.shape[1]
        if self.setup.init_from is None:
            start = learner_lib.start_classes(self.setup, self.space, learner_lib.start_placement(self.setup).devices)
            return np.eye(D)[start] * self.space.allowed
        from placer.rl import transfer_lib  # noqa: PLC0415 (TensorFlow, only when a policy is read)

        s = self.setup
        policy = transfer_lib.policy_for_trainer(
            s.problem, s.cluster, s.placer, seed=s.seed, init_from=s.init_from, source=s.source
        )
        mask = np.where(s.problem.allowed, 0.0, transfer_lib.MASKED).astype(np.float32)
        groups = policy.sample(None, None, samples, seed=(s.seed, 0), mask_bias=mask, leader=s.problem.leader)
        return _frequencies(groups[:, self.space.groups.leaders()], D) * self.space.allowed

    def propose(self, limit: int) -> np.ndarray:
        k = max(1, min(self.population, limit))
        cdf = np.cumsum(self.P, axis=1)
        u = self.rng.random((k, len(self.P), 1))
        self._last = np.minimum((u * cdf[None, :, -1:] > cdf[None]).sum(axis=2), self.P.shape[1] - 1)
        return self.space.groups.expand(self._last)

    def observe(self, devices: np.ndarray, results) -> dict:
        t = learn_anneal.step_times(results)
        cand = self._last[: len(t)]
        self.rounds += 1
        j = int(np.argmin(t))
        if t[j] < self.best_t:
            self.best_t, self.best_x, self.stale = float(t[j]), cand[j].copy(), 0
        else:
            self.stale += 1
        if self.learning:
            x, tt = np.concatenate([cand, self.elite_x]), np.concatenate([t, self.elite_t])
            keep = np.argsort(tt, kind="stable")[: self.elite]
            self.elite_x, self.elite_t = x[keep], tt[keep]
            freq = _frequencies(self.elite_x, self.P.shape[1])
            P = np.maximum((1 - self.rate) * self.P + self.rate * freq, self.floor) * self.space.allowed
            self.P = P / P.sum(axis=1, keepdims=True)
            if self.stale >= self.patience and self.best_x is not None:
                self.P = self._mixture(np.eye(self.P.shape[1])[self.best_x] * self.space.allowed)
                self.elite_x, self.elite_t = self.elite_x[:0], self.elite_t[:0]
                self.stale, self.restarts = 0, self.restarts + 1
        return {
            "mean_step_time": learn_anneal.mean_finite(t),
            "entropy": float(-(self.P * np.log(np.maximum(self.P, 1e-300))).sum(axis=1).mean()),
            "restarts": self.restarts,
        }

    def best(self):
        return None

    def finished(self) -> bool:
        return False

    def state(self) -> dict:
        """The search's state (JSON-serialisable): its table, kept elite, restart counters and generator."""
        best_x = None if self.best_x is None else self.best_x.tolist()
        return {
            "rounds": self.rounds, "P": self.P.tolist(), "elite": self.elite_x.tolist(),
            "elite_t": self.elite_t.tolist(), "search": [self.stale, self.restarts, self.best_t, best_x],
            "rng": self.rng.bit_generator.state,
        }  # fmt: skip

    def load_state(self, record: dict) -> None:
        """Restores what `state` returned.

        Raises:
          InputError: a record of another shape.
        """
        try:
            P = np.asarray(record["P"], np.float64).reshape(self.P.shape)
            elite_x = np.asarray(record["elite"], np.int64).reshape(-1, len(self.P))
            elite_t = np.asarray(record["elite_t"], np.float64).reshape(len(elite_x))
            stale, restarts, best_t, best_x = record["search"]
            best_x = None if best_x is None else np.asarray(best_x, np.int64).reshape(len(self.P))
            rounds = int(record["rounds"])
            self.rng.bit_generator.state = record["rng"]
        except (ValueError, TypeError, KeyError) as e:
            raise InputError(f"{self.setup.workdir}/{STATE}: cannot read the learner's state ({e})") from None
        self.P, self.rounds, self.elite_x, self.elite_t = P, rounds, elite_x, elite_t
        self.stale, self.restarts, self.best_t, self.best_x = int(stale), int(restarts), float(best_t), best_x

    def save(self) -> None:
        learn_anneal.write_state(self, **self.state())

    def restore(self) -> int:
        self.load_state(learn_anneal.read_own_state(self, ("P", "elite", "elite_t", "search", "rng")))
        return self.rounds

    def info(self) -> dict:
        return {
            "policy": "per-class device probabilities",
            "learning": self.learning,
            "samples_per_step": self.population,
            "start": self.start,
        }


def _frequencies(placements: np.ndarray, num_devices: int) -> np.ndarray:
    """[L, D] the share of `placements` [K, L] that put each class on each device."""
    k, n = placements.shape
    freq = np.zeros((n, num_devices))
    np.add.at(freq, (np.broadcast_to(np.arange(n), placements.shape), placements), 1.0 / max(k, 1))
    return freq
