"""REINFORCE trainer of the placement policy (Mirhoseini et al., ICML 2017, section 3).

Each step samples K placements of the groups, measures them together through
the `Measurer` protocol, and updates the policy with the reward -sqrt(step
time) against a moving-average baseline. The best placement seen so far, the
policy, the optimizer and the baseline survive a restart.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import tensorflow as tf
import tf_keras as keras

from placer.core import atomic
from placer.core.placement import Placement
from placer.rl import policy as policy_lib
from placer.rl import rl_math
from placer.rl.problem import Problem
from placer.rl.rl_math import use_xla
from placer.rl.run_files import (  # noqa: F401 (seed_everything re-exported)
    Summaries,
    checkpoint_to_restore,
    curve_csv,
    read_history,
    restore_intact,
    save_checkpoint,
    seed_everything,
)

MASKED = -1e9  # logit bias of a device a group cannot run on


class Trainer:
    """Trains a policy on one problem and keeps the best placement.

    The search loop (placer.rl.search_loop) drives it as the seq2seq method (placer.rl.learn_seq2seq):
    `sample`, measure, `learn`, `save`.

    Args:
      problem: the groups to place.
      measurer: anything with `measure(placements) -> list[Measurement]`.
      config: `config.placer` (policy and train sections).
      workdir: where checkpoints, TensorBoard events and results go.
      seed: seeds the policy weights and the sampling.
      metadata: added to the best placement's metadata (cluster, backend).
      policy: a built policy with the same interface to train instead of a new seq2seq one
        (placer.rl.graph_policy.GraphPolicy, bound to this problem).
    """

    def __init__(self, problem: Problem, measurer, config, workdir: str, *, seed: int = 0, metadata=None, policy=None):
        self.problem = problem
        self.measurer = measurer
        self.tc = config.train
        self.pc = config.policy
        self.workdir = workdir
        self.seed = int(seed)
        self.metadata = dict(metadata or {})
        d = len(problem.device_names)
        self.mask_bias = np.where(problem.allowed, 0.0, MASKED).astype(np.float32)
        strength = float(self.pc.get("compute_prior", 0.0))
        if strength and problem.seconds is not None:  # docs/rl.md, "A start that knows the devices"
            self.mask_bias += rl_math.compute_prior(problem.seconds, strength)
        self.policy = policy or policy_lib.build_policy(
            problem.vocab_size, problem.features.shape[1], d, config.policy, seed=seed
        )
        lr = self.tc.learning_rate
        if self.tc.lr_decay_steps > 0:
            lr = keras.optimizers.schedules.ExponentialDecay(lr, self.tc.lr_decay_steps, self.tc.lr_decay_rate)
        self.optimizer = keras.optimizers.Adam(lr, global_clipnorm=self.tc.clip_norm)
        # Slots made now, not inside the first update: a tf.function that creates variables is traced twice.
        self.optimizer.build(self.policy.trainable_variables)
        batch = tf.TensorSpec([None], tf.float32)  # one trace whatever the batch size (slots vary under SLAQ)
        signature = [tf.TensorSpec([None, problem.num_groups], tf.int32), batch, batch, batch]
        signature += [tf.TensorSpec([], tf.bool), batch, tf.TensorSpec([], tf.float32)]
        self._update = tf.function(
            self._update_step, input_signature=signature, jit_compile=self.uses_xla(), autograph=False
        )
        self.step = tf.Variable(0, dtype=tf.int64, name="step")
        self.baseline = tf.Variable(0.0, dtype=tf.float64, name="baseline")
        self.has_baseline = tf.Variable(False, name="has_baseline")
        self.best_time = tf.Variable(np.inf, dtype=tf.float64, name="best_time")
        self.best_devices = tf.Variable(np.zeros(problem.num_groups, np.int32), name="best_devices")
        # Self-imitation memory: the best distinct placements measured so far (rows with -inf are empty);
        # checkpointed only when it is on, so runs without it resume from older checkpoints.
        self.memory_size = int(self.tc.get("elite_memory", 0))
        k = max(1, self.memory_size)
        self.memory_devices = tf.Variable(np.zeros((k, problem.num_groups), np.int32), name="memory_devices")
        self.memory_rewards = tf.Variable(np.full(k, -np.inf), dtype=tf.float64, name="memory_rewards")
        memory = {"memory_devices": self.memory_devices, "memory_rewards": self.memory_rewards}
        self.checkpoint = tf.train.Checkpoint(
            policy=self.policy,
            optimizer=self.optimizer,
            step=self.step,
            baseline=self.baseline,
            has_baseline=self.has_baseline,
            best_time=self.best_time,
            best_devices=self.best_devices,
            **(memory if self.memory_size > 0 else {}),
        )
        self.manager = tf.train.CheckpointManager(self.checkpoint, os.path.join(workdir, "checkpoints"), max_to_keep=2)
        self.summaries = Summaries(workdir, problem.device_names)
        self.history: list[dict] = []
        self.t0 = time.time()
        self._type_ids = tf.constant(problem.type_ids, tf.int32)
        self._features = tf.constant(problem.features, tf.float32)
        self._mask = tf.constant(self.mask_bias)
        self._leader = tf.constant(problem.leader, tf.int32)

    def run_info(self) -> dict:
        """What run.json records: the graph, groups, devices, policy, encoder and update rule."""
        return {
            "fingerprint": self.problem.graph.fingerprint(),
            "graph": self.problem.graph.name,
            "num_groups": self.problem.num_groups,
            "devices": list(self.problem.device_names),
            "policy": getattr(self.policy, "policy_name", policy_lib.NAME),
            "encoder": self.policy.encoder_name,
            "algorithm": self.tc.get("algorithm", "reinforce"),
        }

    def restore(self, step: int | None = None) -> int:
        """Continues from the latest checkpoint in the workdir (or the one of `step`); returns its step.

        Args:
          step: restore the checkpoint saved at this step, one of those kept (placer-search's exact
            resume); None: the latest that reads whole.

        Raises:
          InputError: no checkpoint (of `step`), a corrupt one, or one made for another
            graph or device list.
        """
        latest = checkpoint_to_restore(self.manager, self.workdir, step, self.run_info())
        restore_intact(self.checkpoint, self.manager, latest, fall_back=step is None)
        step = int(self.step.numpy())
        # history.json is written before the checkpoint: a kill in between leaves steps the checkpoint
        # does not hold, which are run again, so they leave the history (and curve.csv) here.
        history = read_history(os.path.join(self.workdir, "history.json"))
        self.history = [h for h in history if int(h.get("step", 0)) <= step]
        return step

    def save(self) -> None:
        """Writes the checkpoint, the run file, the history, the TensorBoard events and the best placement
        (each file atomically)."""
        os.makedirs(self.workdir, exist_ok=True)
        atomic.write_text(os.path.join(self.workdir, "run.json"), json.dumps(self.run_info(), indent=1))
        atomic.write_text(os.path.join(self.workdir, "history.json"), json.dumps(self.history))
        atomic.write_text(os.path.join(self.workdir, "curve.csv"), curve_csv(self.history))
        save_checkpoint(self.manager, int(self.step.numpy()), self.policy.variables + self.optimizer.variables)
        self.summaries.flush()
        best = self.best_placement()
        if best is not None:
            best.save(os.path.join(self.workdir, "best_placement.json"))

    def best_placement(self) -> Placement | None:
        """The best placement found so far, or None while every sample failed."""
        t = float(self.best_time.numpy())
        if not np.isfinite(t):
            return None
        samples = int(self.history[-1]["samples"]) if self.history else 0  # across restarts
        return self.problem.placement(
            self.best_devices.numpy(),
            step_time=t,
            step=int(self.step.numpy()),
            samples=samples,
            **{"method": "rl", **self.metadata},
        )

    def greedy_placement(self) -> Placement:
        """The policy's most likely placement (deterministic)."""
        devices = self.policy.greedy(self.problem.type_ids, self.problem.features, self.mask_bias, self.problem.leader)
        return self.problem.placement(devices, **{**self.metadata, "method": "rl_greedy"})

    @tf.function(reduce_retracing=True, autograph=False)
    def _imitate(self, actions, optimizer):
        with tf.GradientTape() as tape:
            logp, _ = self.policy.log_probs(self._type_ids, self._features, actions, self._mask, self._leader)
            loss = -tf.reduce_mean(logp)
        grads = tape.gradient(loss, self.policy.trainable_variables)
        optimizer.apply_gradients(zip(grads, self.policy.trainable_variables, strict=True))
        return loss

    def warm_start(
        self, group_devices: np.ndarray, steps: int, learning_rate: float = 0.005, step_time: float | None = None
    ) -> tuple[float, int, bool]:
        """Supervised pre-training: teaches the policy a given placement.

        REINFORCE then searches around it rather than from a uniform policy.
        The imitated placement, measured at `step_time`, is recorded as the
        best at step 0, so the search never reports worse than it was given.

        Args:
          group_devices: [G] device per group to imitate.
          steps: the most gradient steps of maximum likelihood; training stops
            as soon as the policy's greedy placement equals the target
            (checked every 10 steps).
          learning_rate: Adam learning rate of these steps (their own optimizer).
          step_time: the imitated placement's measured step time (s), or None.

        Returns:
          (final negative log-likelihood in nats, steps taken, whether the
          greedy placement equals the target).
        """
        target = np.asarray(group_devices, np.int32)
        if step_time is not None and np.isfinite(step_time) and step_time < float(self.best_time.numpy()):
            self.best_time.assign(step_time)
            self.best_devices.assign(target)
        actions = tf.constant(target[None])
        optimizer = keras.optimizers.Adam(learning_rate, global_clipnorm=self.tc.clip_norm)
        optimizer.build(self.policy.trainable_variables)
        loss, taken, equal = float("nan"), 0, False
        while taken < steps and not equal:
            for _ in range(min(10, steps - taken)):
                loss = float(self._imitate(actions, optimizer).numpy())
                taken += 1
            greedy = self.policy.greedy(
                self.problem.type_ids, self.problem.features, self.mask_bias, self.problem.leader
            )
            equal = bool(np.array_equal(greedy, target))
        return loss, taken, equal

    def uses_xla(self) -> bool:
        """Whether the update is compiled by XLA (`use_xla` of this config and problem)."""
        return use_xla(self.tc.get("jit_compile", "auto"), self.problem.num_groups, int(self.pc.hidden_size))

    def _update_step(self, actions, advantages, weights, old_logp, first, elite, entropy_weight):
        """One gradient step (run as `self._update`): policy gradient (clipped when PPO), entropy bonus, elite term."""
        with tf.GradientTape() as tape:
            logp, entropy = self.policy.log_probs(self._type_ids, self._features, actions, self._mask, self._leader)
            n = tf.maximum(tf.reduce_sum(weights), 1.0)
            if self.tc.get("algorithm", "reinforce") == "ppo":
                # The first epoch's policy is the one that sampled: ratio 1.
                old = tf.where(first, tf.stop_gradient(logp), old_logp)
                ratio = tf.exp(tf.minimum(logp - old, 20.0))
                c = float(self.tc.ppo_clip)
                surrogate = tf.minimum(ratio * advantages, tf.clip_by_value(ratio, 1 - c, 1 + c) * advantages)
                pg = -tf.reduce_sum(weights * surrogate) / n
            else:
                pg = -tf.reduce_sum(weights * advantages * logp) / n
            leaders = float(max(1, len(np.unique(self.problem.leader))))
            ce = -tf.reduce_sum(elite * logp) / tf.maximum(tf.reduce_sum(elite), 1.0) / leaders
            loss = pg - entropy_weight * tf.reduce_mean(entropy) + float(self.tc.get("elite_weight", 0.0)) * ce
        grads = tape.gradient(loss, self.policy.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.policy.trainable_variables, strict=True))
        return tf.reduce_mean(entropy), logp

    def _schedules(self, step: int) -> tuple[float, float]:
        """(logits noise std, entropy weight) at `step`; sets the policy's temperature."""
        self.policy.set_temperature(rl_math.scheduled_field(self.pc, "temperature", self.pc.temperature, step))
        noise = float(self.pc.logits_noise_std) if step < int(self.pc.logits_noise_steps) else 0.0
        return noise, rl_math.scheduled_field(self.tc, "entropy", self.tc.entropy_weight, step)

    def _learn(self, actions: np.ndarray, r: np.ndarray, mask: np.ndarray, ref: float, ent: float) -> float:
        """Updates the policy on one batch (several epochs when PPO); returns the mean entropy (nats)."""
        tc = self.tc
        adv = r - ref
        if tc.get("normalise_advantages", False):
            adv = rl_math.normalise_advantages(adv, mask)
        elite = rl_math.elite_mask(r, mask, float(tc.get("elite_fraction", 0.0))).astype(np.float32)
        weights = mask.astype(np.float32)
        memory = self._memory()
        if len(memory):  # the remembered placements join the elite term only
            actions = np.concatenate([actions, memory])
            adv = np.concatenate([adv, np.zeros(len(memory))])
            weights = np.concatenate([weights, np.zeros(len(memory), np.float32)])
            elite = np.concatenate([elite, np.ones(len(memory), np.float32)])
        epochs = int(tc.get("epochs_per_batch", 1)) if tc.get("algorithm", "reinforce") == "ppo" else 1
        args = [tf.constant(actions, tf.int32), tf.constant(adv, tf.float32), tf.constant(weights, tf.float32)]
        old_logp = tf.zeros([len(actions)], tf.float32)
        extra = [tf.constant(elite, tf.float32), tf.constant(ent, tf.float32)]
        entropy = float("nan")
        for epoch in range(epochs):
            e, logp = self._update(*args, old_logp, tf.constant(epoch == 0), *extra)
            if epoch == 0:
                entropy = float(e.numpy())
                old_logp = tf.stop_gradient(logp)  # the sampling policy's log-probabilities
        return entropy

    def _memory(self) -> np.ndarray:
        """[M, G] the placements in the self-imitation memory (none when `elite_memory` is 0)."""
        if self.memory_size <= 0:
            return np.zeros((0, self.problem.num_groups), np.int32)
        return self.memory_devices.numpy()[np.isfinite(self.memory_rewards.numpy())]

    def _remember(self, actions: np.ndarray, r: np.ndarray, trusted: np.ndarray) -> None:
        size = self.memory_size
        if size <= 0 or not trusted.any():
            return
        rewards = self.memory_rewards.numpy()
        have = np.isfinite(rewards)
        a, rr = rl_math.merge_memory(
            self.memory_devices.numpy()[have], rewards[have], actions[trusted], r[trusted], size
        )
        self.memory_devices.assign(np.concatenate([a, np.zeros((size - len(a), a.shape[1]), np.int32)]))
        self.memory_rewards.assign(np.concatenate([rr, np.full(size - len(rr), -np.inf)]))

    def sample(self) -> np.ndarray:
        """[K, G] the next batch of group placements, drawn from the policy (K = samples_per_step)."""
        step = int(self.step.numpy())
        noise, _ = self._schedules(step)
        p = self.problem
        return self.policy.sample(
            p.type_ids, p.features, self.tc.samples_per_step, seed=(self.seed, step), noise_std=noise,
            mask_bias=self.mask_bias, leader=p.leader,
        )  # fmt: skip

    def train_step(self) -> dict:
        """Samples, measures and updates once; returns the step's statistics."""
        actions = self.sample()
        return self.learn(actions, self.problem.measure(self.measurer, actions))

    def learn(self, actions: np.ndarray, results: list) -> dict:
        """Updates the policy on sampled placements and their measurements; returns the step's statistics.

        `actions` [K, G] are the placements `sample` drew (a prefix when a budget ran out), `results` their K
        Measurements.
        """
        step = int(self.step.numpy())
        _, ent = self._schedules(step)
        times = np.array([m.step_time for m in results], dtype=np.float64)
        failed = np.array([not m.ok for m in results])
        r = rl_math.rewards(times, failed, self.tc.failing_step_time)
        mask = rl_math.update_mask(failed, step, self.tc.drop_failures_after)
        base = float(self.baseline.numpy()) if bool(self.has_baseline.numpy()) else None
        new_base = rl_math.update_baseline(base, r[mask], self.tc.baseline_decay) if mask.any() else base
        ok = ~failed
        trusted = ok & ~np.array([m.flagged for m in results], dtype=bool)  # flagged: op costs collapsed
        self._remember(actions, r, trusted)
        entropy = self._learn(actions, r, mask, new_base if base is None else base, ent) if mask.any() else float("nan")
        if new_base is not None:
            self.baseline.assign(new_base)
            self.has_baseline.assign(True)
        if trusted.any():
            k = int(np.argmin(np.where(trusted, times, np.inf)))
            if times[k] < float(self.best_time.numpy()):
                self.best_time.assign(times[k])
                self.best_devices.assign(actions[k].astype(np.int32))
        self.step.assign_add(1)
        prev = self.history[-1] if self.history else {}
        stats = {
            "step": step + 1,
            "samples": int(prev.get("samples", 0)) + len(actions),
            "wall_seconds": float(prev.get("wall_seconds", 0.0)) + (time.time() - self.t0),
            "mean_step_time": float(times[ok].mean()) if ok.any() else float("inf"),
            "min_step_time": float(times[ok].min()) if ok.any() else float("inf"),
            "best_step_time": float(self.best_time.numpy()),
            "baseline": float(self.baseline.numpy()),
            "entropy": entropy,
            "entropy_weight": ent,
            "temperature": float(self.policy.temperature.numpy()),
            "failed_fraction": float(failed.mean()),
            "device_share": np.bincount(actions.ravel(), minlength=len(self.problem.device_names)).tolist(),
            "learning_rate": float(self._lr(step)),
        }
        self.t0 = time.time()
        self.history.append(stats)
        self.summaries.write(stats)
        return stats

    def _lr(self, step: int) -> float:
        return float(rl_math.scheduled_lr(self.optimizer.learning_rate, step))
