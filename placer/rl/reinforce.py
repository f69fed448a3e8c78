"""REINFORCE trainer of the placement policy (Mirhoseini et al., ICML 2017, section 3).

Each step samples K placements of the groups, measures them together through
the `Measurer` protocol, and updates the policy with the reward -sqrt(step
time) against a moving-average baseline. The best placement seen so far, the
policy, the optimizer and the baseline survive a restart.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import tensorflow as tf
import tf_keras as keras

from placer.core import atomic
from placer.core.errors import InputError, one_line
from placer.core.placement import Placement
from placer.rl import rl_math
from placer.rl.policy import build_policy
from placer.rl.problem import Problem

MASKED = -1e9  # logit bias of a device a group cannot run on


class Trainer:
    """Trains a policy on one problem and keeps the best placement.

    Args:
      problem: the groups to place.
      measurer: anything with `measure(placements) -> list[Measurement]`.
      config: `config.placer` (policy and train sections).
      workdir: where checkpoints, TensorBoard events and results go.
      seed: seeds the policy weights and the sampling.
      metadata: added to the best placement's metadata (cluster, backend).
    """

    def __init__(self, problem: Problem, measurer, config, workdir: str, *, seed: int = 0, metadata=None):
        self.problem = problem
        self.measurer = measurer
        self.tc = config.train
        self.pc = config.policy
        self.workdir = workdir
        self.seed = int(seed)
        self.metadata = dict(metadata or {})
        d = len(problem.device_names)
        self.mask_bias = np.where(problem.allowed, 0.0, MASKED).astype(np.float32)
        self.policy = build_policy(problem.vocab_size, problem.features.shape[1], d, config.policy, seed=seed)
        lr = self.tc.learning_rate
        if self.tc.lr_decay_steps > 0:
            lr = keras.optimizers.schedules.ExponentialDecay(lr, self.tc.lr_decay_steps, self.tc.lr_decay_rate)
        self.optimizer = keras.optimizers.Adam(lr, global_clipnorm=self.tc.clip_norm)
        self.step = tf.Variable(0, dtype=tf.int64, name="step")
        self.baseline = tf.Variable(0.0, dtype=tf.float64, name="baseline")
        self.has_baseline = tf.Variable(False, name="has_baseline")
        self.best_time = tf.Variable(np.inf, dtype=tf.float64, name="best_time")
        self.best_devices = tf.Variable(np.zeros(problem.num_groups, np.int32), name="best_devices")
        self.checkpoint = tf.train.Checkpoint(
            policy=self.policy,
            optimizer=self.optimizer,
            step=self.step,
            baseline=self.baseline,
            has_baseline=self.has_baseline,
            best_time=self.best_time,
            best_devices=self.best_devices,
        )
        self.manager = tf.train.CheckpointManager(self.checkpoint, os.path.join(workdir, "checkpoints"), max_to_keep=2)
        self.writer = None
        self.history: list[dict] = []
        self._type_ids = tf.constant(problem.type_ids, tf.int32)
        self._features = tf.constant(problem.features, tf.float32)
        self._mask = tf.constant(self.mask_bias)
        self._leader = tf.constant(problem.leader, tf.int32)

    # ----- state ----------------------------------------------------------

    def _run_info(self) -> dict:
        return {
            "fingerprint": self.problem.graph.fingerprint(),
            "graph": self.problem.graph.name,
            "num_groups": self.problem.num_groups,
            "devices": list(self.problem.device_names),
        }

    def restore(self) -> int:
        """Continues from the latest checkpoint in the workdir; returns its step.

        Raises:
          InputError: no checkpoint, a corrupt one, or one made for another
            graph or device list.
        """
        info_path = os.path.join(self.workdir, "run.json")
        latest = self.manager.latest_checkpoint
        if latest is None or not os.path.exists(info_path):
            raise InputError(f"{self.workdir}: nothing to resume (no checkpoint)")
        try:
            with open(info_path) as f:
                info = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{info_path}: corrupt run file ({e})") from None
        mine = self._run_info()
        for key in ("fingerprint", "num_groups", "devices"):
            if info.get(key) != mine[key]:
                raise InputError(
                    f"{latest}: checkpoint made for another {key} ({info.get(key)!r}, this run has {mine[key]!r})"
                )
        try:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
        except (tf.errors.OpError, AssertionError, ValueError) as e:
            raise InputError(f"{latest}: cannot restore checkpoint ({str(e).splitlines()[0]})") from None
        self.history = _read_history(os.path.join(self.workdir, "history.json"))
        return int(self.step.numpy())

    def save(self) -> None:
        """Writes the checkpoint, the run file, the history and the best placement (each atomically)."""
        os.makedirs(self.workdir, exist_ok=True)
        atomic.write_text(os.path.join(self.workdir, "run.json"), json.dumps(self._run_info(), indent=1))
        atomic.write_text(os.path.join(self.workdir, "history.json"), json.dumps(self.history))
        self.manager.save(checkpoint_number=int(self.step.numpy()))
        best = self.best_placement()
        if best is not None:
            best.save(os.path.join(self.workdir, "best_placement.json"))

    def best_placement(self) -> Placement | None:
        """The best placement found so far, or None while every sample failed."""
        t = float(self.best_time.numpy())
        if not np.isfinite(t):
            return None
        return self.problem.placement(
            self.best_devices.numpy(), method="rl", step_time=t, step=int(self.step.numpy()), **self.metadata
        )

    def greedy_placement(self) -> Placement:
        """The policy's most likely placement (deterministic)."""
        devices = self.policy.greedy(self.problem.type_ids, self.problem.features, self.mask_bias, self.problem.leader)
        return self.problem.placement(devices, method="rl_greedy", **self.metadata)

    # ----- training -----------------------------------------------------

    @tf.function(reduce_retracing=True)
    def _imitate(self, actions, optimizer):
        with tf.GradientTape() as tape:
            logp, _ = self.policy.log_probs(self._type_ids, self._features, actions, self._mask, self._leader)
            loss = -tf.reduce_mean(logp)
        grads = tape.gradient(loss, self.policy.trainable_variables)
        optimizer.apply_gradients(zip(grads, self.policy.trainable_variables, strict=True))
        return loss

    def warm_start(self, group_devices: np.ndarray, steps: int, learning_rate: float = 0.005) -> float:
        """Supervised pre-training: teaches the policy a given placement.

        REINFORCE then searches around it rather than from a uniform policy;
        the imitated placement is not recorded as a result by itself, only
        what the policy samples afterwards is.

        Args:
          group_devices: [G] device per group to imitate.
          steps: gradient steps of maximum likelihood.
          learning_rate: Adam learning rate of these steps (their own optimizer).

        Returns:
          The final negative log-likelihood of the placement (nats).
        """
        actions = tf.constant(np.asarray(group_devices, np.int32)[None])
        optimizer = keras.optimizers.Adam(learning_rate, global_clipnorm=self.tc.clip_norm)
        loss = float("nan")
        for _ in range(steps):
            loss = float(self._imitate(actions, optimizer).numpy())
        return loss

    @tf.function(reduce_retracing=True)
    def _update(self, actions, advantages, weights):
        with tf.GradientTape() as tape:
            logp, entropy = self.policy.log_probs(self._type_ids, self._features, actions, self._mask, self._leader)
            pg = -tf.reduce_sum(weights * advantages * logp) / tf.maximum(tf.reduce_sum(weights), 1.0)
            loss = pg - self.tc.entropy_weight * tf.reduce_mean(entropy)
        grads = tape.gradient(loss, self.policy.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.policy.trainable_variables, strict=True))
        return tf.reduce_mean(entropy)

    def train_step(self) -> dict:
        """Samples, measures and updates once; returns the step's statistics."""
        step = int(self.step.numpy())
        noise = float(self.pc.logits_noise_std) if step < int(self.pc.logits_noise_steps) else 0.0
        actions = self.policy.sample(
            self.problem.type_ids,
            self.problem.features,
            self.tc.samples_per_step,
            seed=(self.seed, step),
            noise_std=noise,
            mask_bias=self.mask_bias,
            leader=self.problem.leader,
        )
        placements = [self.problem.placement(a) for a in actions]
        results = self.measurer.measure(placements)
        times = np.array([m.step_time for m in results], dtype=np.float64)
        failed = np.array([not m.ok for m in results])
        r = rl_math.rewards(times, failed, self.tc.failing_step_time)
        mask = rl_math.update_mask(failed, step, self.tc.drop_failures_after)
        base = float(self.baseline.numpy()) if bool(self.has_baseline.numpy()) else None
        if mask.any():
            new_base = rl_math.update_baseline(base, r[mask], self.tc.baseline_decay)
        else:
            new_base = base
        ref = new_base if base is None else base
        entropy = float("nan")
        if mask.any():
            entropy = float(
                self._update(
                    tf.constant(actions, tf.int32), tf.constant(r - ref, tf.float32), tf.constant(mask, tf.float32)
                ).numpy()
            )
        if new_base is not None:
            self.baseline.assign(new_base)
            self.has_baseline.assign(True)
        ok = ~failed
        trusted = ok & ~np.array([m.flagged for m in results], dtype=bool)  # flagged: op costs collapsed
        if trusted.any():
            k = int(np.argmin(np.where(trusted, times, np.inf)))
            if times[k] < float(self.best_time.numpy()):
                self.best_time.assign(times[k])
                self.best_devices.assign(actions[k].astype(np.int32))
        self.step.assign_add(1)
        stats = {
            "step": step + 1,
            "mean_step_time": float(times[ok].mean()) if ok.any() else float("inf"),
            "min_step_time": float(times[ok].min()) if ok.any() else float("inf"),
            "best_step_time": float(self.best_time.numpy()),
            "baseline": float(self.baseline.numpy()),
            "entropy": entropy,
            "failed_fraction": float(failed.mean()),
            "learning_rate": float(self._lr(step)),
            "failures": sorted({m.failure for m in results if not m.ok}),
        }
        self.history.append({k: v for k, v in stats.items() if k != "failures"})
        self._summarise(stats)
        return stats

    def _lr(self, step: int) -> float:
        lr = self.optimizer.learning_rate
        return float(lr(step)) if callable(lr) else float(lr.numpy() if hasattr(lr, "numpy") else lr)

    def _summarise(self, stats: dict) -> None:
        if self.writer is None:
            self.writer = tf.summary.create_file_writer(os.path.join(self.workdir, "tensorboard"))
        with self.writer.as_default(step=stats["step"]):
            for key in (
                "mean_step_time",
                "min_step_time",
                "best_step_time",
                "baseline",
                "entropy",
                "failed_fraction",
                "learning_rate",
            ):
                if np.isfinite(stats[key]):
                    tf.summary.scalar(key, stats[key])

    def train(self, steps: int, *, progress: bool = True, on_step=None, max_seconds: float = 0.0) -> dict:
        """Runs until `steps` steps in total have been taken (counting resumed ones).

        Args:
          steps: total number of steps.
          progress: draw a progress line with the best step time on stderr.
          on_step: optional callback(stats) after every step.
          max_seconds: stop early after this much wall time (0 = no limit).

        Returns:
          The last step's statistics (empty when nothing was left to do).
        """
        bar = Progress(steps, int(self.step.numpy())) if progress else None
        stats: dict = {}
        every = max(1, int(self.tc.checkpoint_every))
        t0 = time.time()
        while int(self.step.numpy()) < steps and not (max_seconds > 0 and time.time() - t0 > max_seconds):
            stats = self.train_step()
            if on_step is not None:
                on_step(stats)
            if bar is not None:
                bar.update(stats)
            if stats["step"] % every == 0 or stats["step"] == steps:
                self.save()
        if bar is not None:
            bar.close()
        if self.writer is not None:
            self.writer.flush()
        return stats


class Progress:
    """A one-line progress bar on stderr with the best step time so far."""

    def __init__(self, total: int, start: int = 0):
        self.total, self.start, self.t0 = total, start, time.time()
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0

    def update(self, stats: dict) -> None:
        now = time.time()
        done = stats["step"]
        if not self.tty and now - self.last_print < 10 and done < self.total:
            return
        self.last_print = now
        frac = done / max(1, self.total)
        rate = (done - self.start) / max(1e-9, now - self.t0)
        bar = "#" * int(30 * frac)
        best = stats["best_step_time"]
        line = (
            f"[{bar:<30}] {done}/{self.total} best {best:.4f} s "
            f"mean {stats['mean_step_time']:.4f} s failed {stats['failed_fraction']:.0%} {rate:.1f} steps/s"
        )
        print(("\r" if self.tty else "") + line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


def _read_history(path: str) -> list[dict]:
    """The per-step statistics saved beside a checkpoint (written before it, so always there).

    Raises:
      InputError: the file is missing, unreadable, or not a JSON list of objects.
    """
    try:
        with open(path) as f:
            history = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot resume, corrupt or missing history ({one_line(e)})") from None
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise InputError(f"{path}: cannot resume, history is not a JSON list of objects")
    return history
