"""The files a placer-train run keeps beside its checkpoint: the per-step history, the learning curve
and the TensorBoard scalars."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys

import numpy as np
import tensorflow as tf
import tf_keras as keras

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


def restore_intact(checkpoint, manager, latest: str, fall_back: bool = True) -> None:
    """Restores `latest` into `checkpoint`; if it does not read whole (a truncated file) and `fall_back`,
    the newest earlier one `manager` keeps that does, with a warning on stderr.

    Raises:
      InputError: no checkpoint tried reads whole (naming `latest` and why).
    """
    kept = [p for p in reversed(manager.checkpoints) if p != latest] if fall_back else []
    first_error = None
    for path in [latest, *kept]:
        try:
            checkpoint.restore(path).expect_partial().assert_existing_objects_matched()
        except (tf.errors.OpError, AssertionError, ValueError, IndexError) as e:
            first_error = first_error or f"{latest}: cannot restore checkpoint ({str(e).splitlines()[0]})"
            continue
        if path != latest:
            print(f"warning: {first_error}; resuming from the previous intact one, {path}", file=sys.stderr)
        return
    raise InputError(first_error)


_FULL_WORDS = ("No space left", "Disk quota", "ENOSPC", "EDQUOT")


def save_checkpoint(manager, step: int, variables) -> None:
    """Saves the checkpoint of `step`; a full disk is one line naming the folder, the bytes and the step kept.

    TensorFlow writes a checkpoint into a temporary folder and records it only once complete, so the
    last complete one stays the one --resume continues from; the temporary files are removed.

    Raises:
      InputError: no space or quota left for the checkpoint.
    """
    try:
        manager.save(checkpoint_number=step)
    except (tf.errors.ResourceExhaustedError, tf.errors.UnknownError, OSError) as e:
        if not any(w in str(e) for w in _FULL_WORDS):
            raise
        folder = manager.directory
        need = checkpoint_bytes(manager, variables)
        for name in os.listdir(folder):
            if name.startswith((f"ckpt-{step}_temp", f"ckpt-{step}.")):
                path = os.path.join(folder, name)
                shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.unlink(path)
        kept = manager.latest_checkpoint
        last = f"the checkpoint of step {kept.rsplit('-', 1)[-1]} is kept" if kept else "no checkpoint is kept"
        raise InputError(
            f"{folder}: cannot write the checkpoint of step {step}, about {need} bytes "
            f"(No space left on device); {last}: free space, then run again with --resume"
        ) from None


def checkpoint_bytes(manager, variables) -> int:
    """Bytes of the latest checkpoint's files, else of `variables` (an estimate of the next checkpoint)."""
    latest = manager.latest_checkpoint
    if latest is not None:
        prefix = os.path.basename(latest) + "."
        return sum(
            os.path.getsize(os.path.join(manager.directory, f))
            for f in os.listdir(manager.directory)
            if f.startswith(prefix)
        )
    return int(sum(np.prod(v.shape) * v.dtype.size for v in variables))


def checkpoint_to_restore(manager, workdir: str, step: int | None, mine: dict) -> str:
    """The checkpoint a resumed run restores: the latest, or the one saved at `step` (one of those kept).

    Args:
      manager: the run's tf.train.CheckpointManager.
      workdir: the run's folder (its run.json says what the checkpoints were made for).
      step: the step whose checkpoint to restore (placer-search's exact resume); None: the latest.
      mine: this run's run.json fields (fingerprint, num_groups, devices), which the saved ones must match.

    Raises:
      InputError: no checkpoint (of `step`), a corrupt run file, or one made for another graph or device list.
    """
    info_path = os.path.join(workdir, "run.json")
    latest = manager.latest_checkpoint
    if step is not None and latest is not None:
        kept = [p for p in manager.checkpoints if p.rsplit("-", 1)[-1] == str(step)]
        if not kept:
            raise InputError(f"{manager.directory}: no checkpoint of step {step} kept; cannot resume exactly")
        latest = kept[0]
    if latest is None or not os.path.exists(info_path):
        raise InputError(f"{workdir}: nothing to resume (no checkpoint)")
    try:
        with open(info_path) as f:
            info = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{info_path}: corrupt run file ({e})") from None
    for key in ("fingerprint", "num_groups", "devices"):
        if info.get(key) != mine[key]:
            raise InputError(
                f"{latest}: checkpoint made for another {key} ({info.get(key)!r}, this run has {mine[key]!r})"
            )
    return latest
