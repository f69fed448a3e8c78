"""Cross-entropy or annealing, whichever the first placements favour.

The first round measures single_gpu and `probe` samples of the cross-entropy
start (placer.rl.learn_ce). If more than `share` of them are faster than
single_gpu (or single_gpu fails), the cross-entropy search goes on, the probe
being its first round. Else the search anneals from single_gpu
(baselines.search.Annealing, cooled over the rest of the budget), each move
taking a tie class to another allowed device, both drawn half uniformly and
half from a proposal table Q[class, device] (`move_odds`). Q starts as the
pretrained policy's device shares (`init_from`) or uniform, and moves `rate`
of the way toward the destination of every measured move that made the
placement faster (the cross-entropy update on improving moves, as in Post,
Gao et al., NeurIPS 2018).

While the search descends, V[c, d] holds the last measured relative change
of the step time when class c moved to d from the current placement; the
round's neighbours are drawn without repeats from Q's odds times
exp(-V / `TAU`), and the last two are compounds of the moves measured to help
(`compounds`). Learning off (the ablation): both tables stay at their start
and V stays empty. The settings and the seeds they were chosen on are in
BENCHMARKS.md ("How cross_entropy and ce_or_annealing were tuned").
"""

from __future__ import annotations

import dataclasses

import numpy as np

from baselines import search
from placer.core import fmt
from placer.core.errors import InputError
from placer.rl import learn_anneal, learn_ce
from placer.rl import learner as learner_lib
from placer.rl.learner import Setup

TAU = 0.002  # the move values' temperature: a move measured 0.2% slower is drawn e (2.7) times less often


@dataclasses.dataclass(frozen=True)
class Config:
    """The search's settings (module doc).

    Attributes:
      learning: False = the ablation: the cross-entropy table, Q and V stay at their start.
      probe: samples of the cross-entropy start measured in the first round.
      share: the fraction of them faster than single_gpu above which cross-entropy goes on.
      rate: how far Q moves toward an improving move's destination.
    """

    learning: bool = True
    probe: int = 16
    share: float = 0.25
    rate: float = 0.05


class CrossEntropyOrAnnealing:
    """The search of the module doc as a placer.rl.learner.Learner."""

    name = "ce_or_annealing"
    init_from = "policy"  # --init_from: a placer-pretrain folder
    uses_start = True  # measures single_gpu first (placer.rl.learner.start_placement)

    def __init__(self, setup: Setup, config: Config | None = None):
        c = config or Config()
        if setup.budget <= 0:
            raise InputError(f"{self.name}: needs a budget (--max_placements or --steps) to fit its cooling to")
        self.setup, self.learning, self.rate = setup, c.learning, float(c.rate)
        self.probe, self.share = max(1, int(c.probe)), float(c.share)
        self.ce = learn_ce.CrossEntropy(setup, learn_ce.Config(learning=c.learning))
        self.space, self.rng = self.ce.space, self.ce.rng
        allowed = self.space.allowed
        uniform = allowed / allowed.sum(axis=1, keepdims=True)
        self.Q = (self.ce.start_table if setup.init_from else uniform).copy()  # [L, D] the annealing branch's table
        self.start = learner_lib.start_classes(setup, self.space, learner_lib.start_placement(setup).devices)
        self.V = np.zeros_like(self.Q)  # [L, D] measured relative step-time change per move (module doc)
        self.descending = True  # whether the annealing branch's last round moved to a faster placement
        self.branch = None  # "cross_entropy" or "annealing" once the first round is measured
        self.anneal = None
        self.rounds = 0
        self._last = None

    def _annealing(self) -> search.Annealing:
        # The first round's placements are spent; single_gpu, its start, counts as annealing's first.
        budget = max(1, self.setup.budget - self.probe)
        return search.Annealing(self.space, self.rng, budget, search.BATCH, search.T_START, search.T_END, self.moves)

    def class_odds(self, cur: np.ndarray) -> np.ndarray:
        """[L] the chance that a move takes each tie class: half uniform over the movable, half by Q's mass off cur."""
        movable = self.space.movable()
        off = np.where(movable, 1.0 - self.Q[np.arange(len(cur)), cur], 0.0)
        uniform = movable / movable.sum()
        return 0.5 * uniform + 0.5 * (off / off.sum() if off.sum() > 0 else uniform)

    def device_odds(self, cur: np.ndarray) -> np.ndarray:
        """[L, D] where a move of each class goes: half uniform over its other allowed devices, half by Q there."""
        allowed = self.space.allowed
        other = allowed & (np.arange(allowed.shape[1]) != cur[:, None])
        uniform = other / np.maximum(other.sum(axis=1, keepdims=True), 1)
        q = np.where(other, self.Q, 0.0)
        total = q.sum(axis=1, keepdims=True)
        return 0.5 * uniform + 0.5 * np.where(total > 0, q / np.where(total > 0, total, 1.0), uniform)

    def move_odds(self, cur: np.ndarray) -> np.ndarray:
        """[L, D] the chance of each move from `cur`: the class by `class_odds`, then the device by `device_odds`."""
        return self.class_odds(cur)[:, None] * self.device_odds(cur)

    def moves(self, rng, cur: np.ndarray, k: int) -> np.ndarray:
        """[k, L] neighbours of `cur`, one move each, drawn by `move_odds` (weighed by V while descending)."""
        if self.learning and self.descending:
            return self.valued_moves(rng, cur, k)
        dest = self.device_odds(cur)
        cand = np.repeat(cur[None], k, axis=0)
        for i, c in enumerate(rng.choice(len(cur), size=k, p=self.class_odds(cur))):
            cand[i, c] = rng.choice(dest.shape[1], p=dest[c])
        return cand

    def valued_moves(self, rng, cur: np.ndarray, k: int) -> np.ndarray:
        """[<= k, L] distinct moves drawn by `move_odds` times exp(-V / TAU), the last two replaced by `compounds`."""
        odds = self.move_odds(cur)
        v = np.where(odds > 0, self.V, np.inf)
        w = (odds * np.exp(-(v - v.min()) / TAU)).ravel()
        pick = rng.choice(w.size, size=min(k, np.count_nonzero(w)), replace=False, p=w / w.sum())
        cand = np.repeat(cur[None], len(pick), axis=0)
        cand[np.arange(len(pick)), pick // odds.shape[1]] = pick % odds.shape[1]
        for j, x in enumerate(self.compounds(cur)[: len(cand)]):
            cand[len(cand) - 1 - j] = x
        return cand

    def compounds(self, cur: np.ndarray) -> list[np.ndarray]:
        """Placements moving several classes at once: every class V says a move helps takes its best move; then
        only the better half of them (at least 2). None when fewer than 2 classes have a helping move."""
        v = np.where(self.move_odds(cur) > 0, self.V, np.inf)
        best = v.argmin(axis=1)
        gain = v[np.arange(len(cur)), best]
        helped = np.flatnonzero(gain < 0)
        helped = helped[np.argsort(gain[helped], kind="stable")]
        out = []
        for classes in (helped, helped[: max(2, len(helped) // 2)]) if len(helped) >= 2 else ():
            x = cur.copy()
            x[classes] = best[classes]
            if not any(np.array_equal(x, y) for y in out):
                out.append(x)
        return out

    def propose(self, limit: int) -> np.ndarray:
        if self.branch is None:
            self.ce.propose(max(1, min(self.probe, limit - 1)))
            self._last = np.concatenate([self.start[None], self.ce._last])[:limit]
        elif self.branch == "cross_entropy":
            return self.ce.propose(limit)
        else:
            self._last = self.anneal.propose()[:limit]
        return self.space.groups.expand(self._last)

    def observe(self, devices: np.ndarray, results) -> dict:
        t = learn_anneal.step_times(results)
        cand = self._last[: len(t)]
        self.rounds += 1
        mean = learn_anneal.mean_finite(t)
        if self.branch == "cross_entropy":
            return {**self.ce.observe(devices, results), "branch": 0}
        if self.branch is None:
            probe = t[1:]
            faster = int((probe < t[0]).sum())
            self.setup.log(
                f"{self.name}: {faster} of {len(probe)} cross-entropy samples beat its start "
                f"{learner_lib.start_name(self.setup)} ({fmt.step_time(t[0])})"
            )
            if not np.isfinite(t[0]) or (len(probe) and (probe < t[0]).mean() > self.share):
                self.setup.log(f"{self.name}: branch cross_entropy (more than {self.share:.0%} beat the start)")
                self.branch = "cross_entropy"
                self.ce._last = cand[1:]
                return {**self.ce.observe(devices[1:], results[1:]), "branch": 0}
            self.setup.log(f"{self.name}: branch annealing from its start (at most {self.share:.0%} beat it)")
            self.branch, self.anneal = "annealing", self._annealing()
            self.anneal.observe(cand[:1], t[:1])
            return {"mean_step_time": mean, "branch": 1}
        cur, cur_t = self.anneal.cur, self.anneal.cur_t
        self.anneal.observe(cand, t)
        if self.learning:
            self.learn(cand, t, cur, cur_t, self.anneal.cur)
        self.descending = bool(self.anneal.cur_t < cur_t)
        return {"mean_step_time": mean, "current_step_time": float(self.anneal.cur_t), "branch": 1}

    def learn(self, cand: np.ndarray, t: np.ndarray, cur: np.ndarray, cur_t: float, new: np.ndarray) -> None:
        """After annealing's step from `cur` (`cur_t` s) to `new`: Q moves `rate` of the way toward d for every
        neighbour (class c moved to d) faster than `cur`; V takes every one-class neighbour's relative change
        (a failure counts as +100%), then forgets the classes that moved."""
        for x in cand[t < cur_t]:
            for c in np.flatnonzero(x != cur):
                self.Q[c] *= 1 - self.rate
                self.Q[c, x[c]] += self.rate
        for x, tx in zip(cand, t, strict=True):
            (moved,) = np.nonzero(x != cur)
            if len(moved) == 1:
                self.V[moved[0], x[moved[0]]] = (tx - cur_t) / cur_t if np.isfinite(tx) else 1.0
        self.V[new != cur] = 0.0

    def best(self):
        return None

    def finished(self) -> bool:
        return self.branch == "annealing" and self.anneal.finished()

    def save(self) -> None:
        learn_anneal.write_state(
            self, rounds=self.rounds, branch=self.branch, ce=self.ce.state(), Q=self.Q.tolist(), V=self.V.tolist(),
            descending=self.descending, annealing=None if self.anneal is None else self.anneal.state(),
        )  # fmt: skip

    def restore(self) -> int:
        record = learn_anneal.read_own_state(self, ("branch", "ce", "Q", "V", "descending", "annealing"))
        if record["branch"] not in (None, "cross_entropy", "annealing"):
            raise InputError(f"{self.setup.workdir}/{learn_anneal.STATE}: unknown branch {record['branch']!r}")
        self.ce.load_state(record["ce"])
        self.branch = record["branch"]
        try:
            self.Q = np.asarray(record["Q"], np.float64).reshape(self.Q.shape)
            self.V = np.asarray(record["V"], np.float64).reshape(self.V.shape)
        except (ValueError, TypeError) as e:
            raise InputError(
                f"{self.setup.workdir}/{learn_anneal.STATE}: cannot read the learner's state ({e})"
            ) from None
        if self.branch == "annealing":
            self.anneal = self._annealing()
            self.anneal.load_state(record["annealing"])
        self.descending = bool(record["descending"])
        self.rounds = int(record["rounds"])
        return self.rounds

    def info(self) -> dict:
        return {
            "policy": "cross-entropy table, or annealing with a proposal table and measured move values",
            "learning": self.learning,
            "samples_per_step": self.ce.population,
            "start": self.ce.start,
            "branch": self.branch,
        }
