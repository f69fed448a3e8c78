"""The files a placer-train run keeps beside its checkpoint: the per-step history, the learning curve
and the TensorBoard scalars."""

from __future__ import annotations

import csv
import io
import json
import os

import numpy as np
import tensorflow as tf
import tf_keras as keras

from placer.core import fmt
from placer.core.errors import InputError, one_line

CURVE_COLUMNS = ("step", "samples", "wall_seconds", "mean_step_time", "best_step_time", "entropy")


def curve_csv(history: list[dict]) -> str:
    """The learning curve as CSV text: step, placements measured, wall seconds, mean and best step time (s), entropy (nats)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CURVE_COLUMNS)
    for h in history:
        w.writerow([h.get(k, "") for k in CURVE_COLUMNS])
    return out.getvalue()


def read_history(path: str) -> list[dict]:
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


# The per-step statistics drawn in TensorBoard, beside the share of groups per device.
SCALARS = (
    "samples",
    "wall_seconds",
    "mean_step_time",
    "min_step_time",
    "best_step_time",
    "baseline",
    "entropy",
    "entropy_weight",
    "temperature",
    "failed_fraction",
    "learning_rate",
)


class Summaries:
    """TensorBoard scalars of a run, in WORKDIR/tensorboard (the writer opens at the first step).

    Args:
      workdir: the run's folder.
      device_names: the devices, for the `device_share/<device>` scalars.
    """

    def __init__(self, workdir: str, device_names):
        self.path = os.path.join(workdir, "tensorboard")
        self.device_names = list(device_names)
        self.writer = None

    def write(self, stats: dict) -> None:
        """Writes one step's finite SCALARS and the share of its samples' groups per device."""
        if self.writer is None:
            self.writer = tf.summary.create_file_writer(self.path)
        with self.writer.as_default(step=stats["step"]):
            for key in SCALARS:
                if np.isfinite(stats[key]):
                    tf.summary.scalar(key, stats[key])
            share = np.asarray(stats["device_share"], np.float64)
            for d, name in enumerate(self.device_names):
                tf.summary.scalar(f"device_share/{name}", share[d] / max(1.0, share.sum()))

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()


def seed_everything(seed: int) -> None:
    """Seeds Python, numpy and TensorFlow and makes TF's kernels deterministic.

    With this, two step-bounded searches of one seed in fresh processes on
    one machine write the same best placement (op determinism trades some
    kernel speed for run-to-run equal floating-point results).
    """
    keras.utils.set_random_seed(int(seed))
    tf.config.experimental.enable_op_determinism()


def step_line(stats: dict, steps: int, seconds: float) -> str:
    """The line a run without a progress bar prints now and then: step, best and mean step time, wall time."""
    return (
        f"step {stats['step']}/{steps}: best step time {fmt.seconds(stats['best_step_time'])}, "
        f"this step's mean {fmt.seconds(stats['mean_step_time'])}; {seconds:.0f} s of training"
    )
