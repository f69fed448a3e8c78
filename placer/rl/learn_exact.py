"""The exact placer as a placer-train method: annealing for a hint, then CP-SAT (placer.measure.exact).

The budget of measured placements, less one, goes to `learn_anneal.FromWarmStart`
(annealing from the warm start's baseline) as usual; then the CP-SAT model of
the groups is solved for `config.placer.train.exact_seconds` from the best of
what annealing and the warm start measured, and the solver's best simulated
placement is the last one the loop measures. The solve's proven bound, model
makespan, certified bound and status go into summary.json (`info`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from placer.core.errors import InputError
from placer.measure import exact
from placer.rl import learn_anneal
from placer.rl.learner import Setup


class Exact(learn_anneal.FromWarmStart):
    """Annealing over all but one of the budget's placements, then a CP-SAT solve hinted by its best."""

    name = "exact"

    def __init__(self, setup: Setup, config: learn_anneal.Config | None = None):
        exact.require_ortools()
        if setup.budget < 2:
            raise InputError(f"{self.name}: needs a budget of 2 placements or more (--max_placements or --steps)")
        super().__init__(dataclasses.replace(setup, budget=setup.budget - 1), config)
        self.setup = setup
        train = setup.placer.train
        self.seconds = float(train.get("exact_seconds", 60.0))
        self.workers = int(train.get("exact_workers", 1))
        self.best_seen: tuple[float, np.ndarray] | None = self._start
        self.result: exact.Result | None = None
        self.solved = self.measured = False

    def propose(self, limit: int) -> np.ndarray:
        if not self.anneal.finished() and limit > 1:
            return super().propose(limit - 1)
        return self._solve()[None]

    def observe(self, devices: np.ndarray, results) -> dict:
        if self.solved:
            self.rounds += 1
            self.measured = True
            return {"mean_step_time": learn_anneal.mean_finite(learn_anneal.step_times(results))}
        t = learn_anneal.step_times(results)
        j = int(np.argmin(t)) if len(t) else 0
        if len(t) and np.isfinite(t[j]) and (self.best_seen is None or t[j] < self.best_seen[0]):
            self.best_seen = (float(t[j]), np.asarray(devices[j]).copy())
        return super().observe(devices, results)

    def _solve(self) -> np.ndarray:
        """[G] devices per group of the solver's best simulated placement (the best hint when it found none)."""
        problem = self.setup.problem
        op_group = np.asarray(problem.op_group, np.int64)
        hints = [] if self.best_seen is None else [np.asarray(self.best_seen[1], np.int64)[op_group]]
        if self.setup.warm is not None:
            hints.append(np.asarray(self.setup.warm[1].devices, np.int64))
        self.setup.log(f"exact: CP-SAT for {self.seconds:g} s over {int(op_group.max()) + 1} groups")
        _, self.result = exact.place(
            problem.graph,
            self.setup.cluster,
            seed=self.setup.seed,
            op_group=op_group,
            hints=hints,
            time_limit=self.seconds,
            workers=self.workers,
        )
        self.solved = True
        self.setup.log(f"exact: {self.result.describe()}")
        if self.result.devices is None:
            fallback = self.best_seen[1] if self.best_seen is not None else np.zeros(int(op_group.max()) + 1, np.int64)
            return np.asarray(fallback)
        first = np.full(int(op_group.max()) + 1, -1)
        first[op_group[::-1]] = np.arange(len(op_group))[::-1]
        return np.asarray(self.result.devices)[first]

    def finished(self) -> bool:
        return self.measured

    def restore(self) -> int:
        raise InputError(f"{self.name}: a solve is not resumed; start a new workdir")

    def info(self) -> dict:
        out = {"policy": self.name, "exact_seconds": self.seconds, "exact_workers": self.workers}
        r = self.result
        if r is not None:
            out.update(
                exact_status=r.status,
                exact_level=r.level,
                exact_step_time=None if r.devices is None else r.step_time,
                exact_model_makespan=None if r.devices is None else r.makespan,
                exact_proven_bound=r.proven_bound,
                exact_certified_bound=r.certified_bound,
                exact_solve_seconds=r.wall,
            )
        return out
