"""Pretraining one graph policy on many graphs and clusters: the library behind `placer-pretrain`.

Each step draws one (graph, cluster) task from the training list, samples K
placements of it, measures them and takes a policy-gradient step with the
reward -sqrt(step time) (Mirhoseini et al. 2017) normalised within the batch,
so graphs whose step times differ by orders of magnitude weigh alike. The
held-out list is recorded in policy.json and never loaded here.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import tensorflow as tf
import tf_keras as keras
import tqdm

from placer.core import atomic, fmt
from placer.core import cluster as cluster_lib
from placer.core.errors import InputError
from placer.measure import registry as measure_registry
from placer.rl import graph_policy, search_loop, transfer_lib


def check_lists(pc) -> tuple[list[str], list[str], list[str]]:
    """(training graph specs, held-out specs, clusters) of `config.pretrain`, checked.

    Raises:
      InputError: an empty list, or a graph both trained on and held out.
    """
    train = [s.strip() for s in pc.graphs.split(",") if s.strip()]
    held = [s.strip() for s in pc.held_out.split(",") if s.strip()]
    clusters = [s.strip() for s in pc.clusters.split(",") if s.strip()]
    if not train:
        raise InputError("--config.pretrain.graphs: no training graphs")
    if not clusters:
        raise InputError("--config.pretrain.clusters: no clusters")
    both = sorted(set(train) & set(held))
    if both:
        raise InputError(f"--config.pretrain: {both[0]!r} is both a training graph and held out")
    return train, held, clusters


def make_tasks(specs, cluster_names, placer_config, log=print, engine=None) -> list[transfer_lib.Task]:
    """Every training graph on every cluster, each with a simulator (in this process, or on `engine`'s
    Ray actors: measure_registry.open_engine)."""
    clusters = [cluster_lib.load(c) for c in cluster_names]
    tasks = []
    for spec in specs:
        graph = transfer_lib.load_spec(spec, clusters[0])
        for c in clusters:
            measurer = measure_registry.make_measurer("sim", graph, c, engine=engine)
            tasks.append(transfer_lib.make_task(graph, c, placer_config, measurer, spec))
    log(f"pretraining on {len(tasks)} tasks ({len(specs)} graphs x {len(clusters)} clusters)")
    return tasks


class Pretrainer:
    """One graph policy trained on a list of tasks; checkpointed with its optimizer and step.

    Args:
      tasks: the training tasks.
      config: the pretrain config (`config.pretrain` and `config.placer.policy`).
      workdir: the policy folder.
      seed: weights and task/sample draws.
      record: extra fields for policy.json (the training and held-out lists).
    """

    def __init__(self, tasks, config, workdir: str, *, seed: int = 0, record: dict | None = None):
        self.tasks = tasks
        self.pc = config.pretrain
        self.workdir = workdir
        self.seed = int(seed)
        self.record = dict(record or {})
        self.policy = graph_policy.build(config.placer.policy, seed=seed)
        self.optimizer = keras.optimizers.Adam(self.pc.learning_rate, global_clipnorm=self.pc.clip_norm)
        self.optimizer.build(self.policy.trainable_variables)  # not in `_update`, which would then trace twice
        self.step = tf.Variable(0, dtype=tf.int64, name="step")
        self.checkpoint = tf.train.Checkpoint(policy=self.policy, optimizer=self.optimizer, step=self.step)
        self.manager = tf.train.CheckpointManager(self.checkpoint, os.path.join(workdir, "checkpoints"), max_to_keep=2)
        self.writer = tf.summary.create_file_writer(os.path.join(workdir, "tensorboard"))

    def restore(self) -> int:
        """Continues from the folder's checkpoint; returns its step.

        Raises:
          InputError: no checkpoint, or one made with other training lists.
        """
        info = transfer_lib.read_description(self.workdir)
        for key in ("train", "held_out"):
            if info.get(key) != self.record.get(key):
                raise InputError(f"{self.workdir}: pretrained on another {key} list; start a new --workdir")
        latest = self.manager.latest_checkpoint
        if latest is None:
            raise InputError(f"{self.workdir}: nothing to resume (no checkpoint)")
        self.checkpoint.restore(latest).expect_partial()
        return int(self.step.numpy())

    def save(self) -> None:
        """Writes the checkpoint, then policy.json (atomically), so policy.json always names a complete checkpoint."""
        os.makedirs(self.workdir, exist_ok=True)
        self.manager.save(checkpoint_number=int(self.step.numpy()))
        info = transfer_lib.describe(self.policy, steps=int(self.step.numpy()), seed=self.seed, **self.record)
        atomic.write_text(os.path.join(self.workdir, transfer_lib.POLICY_FILE), json.dumps(info, indent=1))

    @tf.function(reduce_retracing=True, autograph=False)
    def _update(self, ctx, mask, leader, actions, adv, entropy_weight):
        with tf.GradientTape() as tape:
            logp, entropy = self.policy.scores(ctx, actions, mask, leader)
            # Per placed group, so that the step size does not grow with the graph.
            n = tf.reduce_sum(tf.cast(tf.equal(leader, tf.range(tf.shape(leader)[0])), tf.float32))
            loss = -tf.reduce_mean(adv * logp) / n - entropy_weight * tf.reduce_mean(entropy)
        grads = tape.gradient(loss, self.policy.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.policy.trainable_variables, strict=True))
        return tf.reduce_mean(entropy)

    def train_step(self) -> dict:
        """Draws a task, samples, measures and updates once; returns the step's statistics."""
        step = int(self.step.numpy())
        rng = np.random.default_rng([self.seed, step])
        task = self.tasks[int(rng.integers(len(self.tasks)))]
        k = int(self.pc.samples_per_step)
        leader = task.problem.leader
        actions = graph_policy.sample_numpy(self.policy, task.ctx, task.mask_bias, leader, k, (self.seed, step))
        results = task.problem.measure(task.measurer, actions)
        times = np.array([m.step_time if m.ok else self.pc.failing_step_time for m in results])
        r = -np.sqrt(times)
        adv = (r - r.mean()) / (r.std() + 1e-8)
        frac = min(1.0, step / max(1, int(self.pc.entropy_decay_steps)))
        ent_w = float(self.pc.entropy_weight) * (1.0 - frac)
        entropy = self._update(
            task.ctx,
            tf.constant(task.mask_bias),
            tf.constant(leader, tf.int32),
            tf.constant(actions, tf.int32),
            tf.constant(adv, tf.float32),
            tf.constant(ent_w, tf.float32),
        )
        self.step.assign_add(1)
        stats = {"step": step + 1, "task": task.name, "mean_step_time": float(times.mean()), "entropy": float(entropy)}
        with self.writer.as_default(step=step + 1):
            tf.summary.scalar("entropy", stats["entropy"])
            tf.summary.scalar(f"mean_step_time/{task.name}", stats["mean_step_time"])
        return stats

    def train(self, steps: int, *, progress: bool = True, max_seconds: float = 0.0) -> dict:
        """Runs until `steps` steps in total (counting resumed ones) or `max_seconds` of wall time, in the
        search loop's `repeat` (checkpoints, SIGINT, progress); returns the last step's statistics."""
        bar = tqdm.tqdm(total=steps, initial=int(self.step.numpy()), unit="step", disable=not progress, mininterval=1.0)
        t0 = time.time()

        def one_step() -> dict:
            stats = self.train_step()
            bar.update(1)
            bar.set_postfix(entropy=f"{stats['entropy']:.3f}")
            return stats

        def line(s: dict) -> str:
            return (
                f"step {s['step']}/{steps}: {s['task']}, mean step time {fmt.seconds(s['mean_step_time'])}, "
                f"entropy {s['entropy']:.3f} nats; {fmt.seconds(time.time() - t0)}"
            )

        stats = search_loop.repeat(
            one_step, done=lambda: int(self.step.numpy()) >= steps or 0 < max_seconds < time.time() - t0,
            rounds=lambda: int(self.step.numpy()), every=max(1, int(self.pc.checkpoint_every)), save=self.save,
            bar=bar, line=line,
        )  # fmt: skip
        self.writer.flush()
        return stats


def run(
    config, *, workdir: str, steps: int, seed: int = 0, resume: bool = False, progress=True, log=print, max_seconds=0.0
):
    """Pretrains a graph policy and saves it in `workdir`; returns a summary dict.

    Raises:
      InputError: bad lists, steps, a workdir that holds a policy (without
        resume), or a training graph the features cannot read.
    """
    if steps <= 0:
        raise InputError(f"--steps must be positive, got {steps}")
    train, held, clusters = check_lists(config.pretrain)
    has = os.path.exists(os.path.join(workdir, transfer_lib.POLICY_FILE))
    if has and not resume:
        raise InputError(
            f"{workdir}: holds a pretrained policy; pass --resume to continue it or pick another --workdir"
        )
    t0 = time.time()
    engine = measure_registry.open_engine("sim", **measure_registry.engine_options(config))
    tasks = make_tasks(train, clusters, config.placer, log, engine)
    record = {"train": train, "held_out": held, "clusters": clusters}
    trainer = Pretrainer(tasks, config, workdir, seed=seed, record=record)
    start = trainer.restore() if resume else 0
    if resume:
        log(f"resumed at step {start}")
    t1 = time.time()
    with measure_registry.measuring(engine, save=trainer.save, step=lambda: int(trainer.step.numpy())):
        trainer.train(steps, progress=progress, max_seconds=max_seconds)
    wall = time.time() - t1
    summary = {"steps": int(trainer.step.numpy()), "train_seconds": wall, "prepare_seconds": t1 - t0, **record}
    log(f"pretrained {summary['steps']} steps in {fmt.seconds(wall)} on {len(tasks)} tasks; policy in {workdir}")
    return summary
