"""The paper's method as a learner: a seq2seq policy sampling whole placements, trained by REINFORCE.

Mirhoseini et al., ICML 2017, section 3 (placer.rl.reinforce.Trainer does the
work). With `init_from`, the pretrained graph policy (placer.rl.graph_policy)
is fine-tuned instead. A warm start imitates the fastest baseline first.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from baselines import space
from placer.core import fmt
from placer.rl import search_loop, transfer_lib
from placer.rl.learner import Setup
from placer.rl.reinforce import Trainer


@dataclasses.dataclass(frozen=True)
class Config:
    """The seq2seq method's own settings: none; its policy and update read `config.placer.policy` and `train`."""


class Seq2Seq:
    """placer.rl.learner.Learner over placer.rl.reinforce.Trainer (its checkpoints, history and curve.csv)."""

    uses_warm_start = True
    init_from = "policy"  # --init_from: a placer-pretrain folder

    def __init__(self, setup: Setup, config: Config | None = None):
        del config  # no settings of its own (Config)
        self.setup = setup
        problem = setup.problem
        policy = transfer_lib.policy_for_trainer(
            problem, setup.cluster, setup.placer, seed=setup.seed, init_from=setup.init_from, source=setup.source
        )
        metadata = {"cluster": setup.cluster.name, "method": "seq2seq"}
        self.trainer = Trainer(
            problem, setup.measurer, setup.placer, setup.workdir, seed=setup.seed, metadata=metadata, policy=policy
        )
        self.warm_start = None  # what summary.json says of the imitation
        self._started = False

    def _start(self) -> None:
        """Imitates the warm start (once, before the first proposal of a fresh search)."""
        self._started = True
        if self.setup.warm is not None and int(self.trainer.step.numpy()) == 0:
            tc = self.setup.placer.train
            self.warm_start = apply_warm_start(self.trainer, self.setup.problem, self.setup.warm, tc, self.setup.log)

    def propose(self, limit: int) -> np.ndarray:
        if not self._started:
            self._start()
        return self.trainer.sample()[:limit]

    def observe(self, devices: np.ndarray, results) -> dict:
        return self.trainer.learn(devices, results)

    def best(self):
        if not self._started:
            self._start()
        t = float(self.trainer.best_time.numpy())
        return (t, self.trainer.best_devices.numpy()) if np.isfinite(t) else None

    def finished(self) -> bool:
        return False

    def save(self) -> None:
        self.trainer.save()

    def restore(self) -> int:
        self._started = True
        return self.trainer.restore()

    def info(self) -> dict:
        info = self.trainer.run_info()
        return {
            "policy": info["policy"],
            "encoder": info["encoder"],
            "algorithm": info["algorithm"],
            "samples_per_step": int(self.trainer.tc.samples_per_step),
            "warm_start": self.warm_start,
        }


def loop_for(problem, cluster, measurer, placer, workdir: str, *, seed: int = 0) -> search_loop.Loop:
    """The search loop of this method on `problem` from a uniform policy (no warm start, no init_from).

    `placer` is `config.placer`; `measurer` is wrapped to be counted. `loop.run(search_loop.Limits(rounds=N))`
    takes N policy-gradient steps in all; `loop.restore()` first continues the search saved in `workdir`;
    `loop.learner.trainer` is the Trainer.
    """
    os.makedirs(workdir, exist_ok=True)
    counting = search_loop.CountingMeasurer(measurer)
    setup = Setup(problem, None, cluster, placer, counting, workdir, seed=seed)
    metadata = {"method": "seq2seq", "learner": "seq2seq", "cluster": cluster.name}
    return search_loop.Loop(Seq2Seq(setup), problem, counting, workdir, placer.train.checkpoint_every, metadata)


def apply_warm_start(trainer: Trainer, problem, warm, tc, log) -> dict:
    """Imitates the warm-start placement, recorded as the best at step 0; returns what summary.json says of it.

    Args:
      trainer: the Trainer, before its first step.
      problem: its placement problem (grouped with the warm placement's devices as colours).
      warm: (step time in seconds or None, Placement), as placer.rl.train_lib.best_baseline returns.
      tc: the config's `placer.train` section (warm_start_steps, warm_start_learning_rate).
      log: where the summary line goes.
    """
    step_time, placement = warm
    classes = space.class_devices(placement.devices, problem.leader[problem.op_group], problem.allowed)
    target = classes.astype(np.int32)[problem.leader]
    copy = problem.placement(target)
    if not np.array_equal(copy.devices, placement.devices):
        # The grouping could not keep the baseline's devices apart (a large graph grouped without
        # its colours): the policy imitates each group's majority device, a different placement,
        # so that one is measured (and counted) and recorded instead of the baseline's time.
        (m,) = trainer.measurer.measure([copy])
        step_time = m.step_time if m.failure is None else None
        log(
            f"warm start: the groups mix the baseline's devices; their majority placement measures {fmt.step_time(m.step_time)}"
        )
    nll, taken, equal = trainer.warm_start(
        target[problem.leader], tc.warm_start_steps, tc.warm_start_learning_rate, step_time=step_time
    )
    method = placement.metadata.get("method")
    log(
        f"warm start: imitated {method} ({fmt.step_time(step_time or float('inf'))}, recorded as the best at step 0) "
        f"for {taken} steps, final NLL {nll:.3f}; the greedy placement {'equals' if equal else 'still differs from'} it"
        + ("" if equal else f" (step cap {tc.warm_start_steps})")
    )
    return {"method": method, "step_time": step_time, "imitation_steps": taken, "nll": nll, "greedy_equal": equal}
