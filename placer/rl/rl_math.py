"""Pure functions of the REINFORCE placer (no TensorFlow).

Mirhoseini et al. (ICML 2017), section 3.2: the reward of a placement is the
negative square root of its step time, a failed placement counts with a large
fixed step time, and a moving-average baseline reduces the variance.
"""

from __future__ import annotations

import numpy as np

from placer.core.errors import InputError


def rewards(step_times: np.ndarray, failed: np.ndarray, failing_step_time: float) -> np.ndarray:
    """Returns -sqrt(step time) per sample, failed samples at `failing_step_time`.

    Args:
      step_times: [K] seconds (inf or anything for failed samples).
      failed: [K] bool.
      failing_step_time: seconds charged to a failed sample (the published placer used 100 s).

    Returns:
      [K] float64 rewards.
    """
    t = np.where(failed, failing_step_time, np.asarray(step_times, dtype=np.float64))
    return -np.sqrt(t)


def update_baseline(baseline: float | None, batch_rewards: np.ndarray, decay: float) -> float:
    """Exponential moving average of the mean reward; the first batch sets it.

    Args:
      baseline: current baseline, or None before the first update.
      batch_rewards: [K] rewards of this step.
      decay: weight of the old baseline, in [0, 1).
    """
    mean = float(np.mean(batch_rewards))
    return mean if baseline is None else decay * baseline + (1.0 - decay) * mean


def update_mask(failed: np.ndarray, step: int, drop_failures_after: int) -> np.ndarray:
    """Which samples enter the policy update: all, until `drop_failures_after`
    steps have passed (0 = never drop), then only the ones that ran.

    Returns:
      [K] bool.
    """
    failed = np.asarray(failed, dtype=bool)
    if drop_failures_after > 0 and step >= drop_failures_after:
        return ~failed
    return np.ones_like(failed)


def normalise_advantages(advantages: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per-batch advantage normalisation: zero mean, unit standard deviation over the masked samples.

    Keeps the size of a policy step independent of the reward scale, which
    shrinks by orders of magnitude as the samples converge (Schulman et al.
    2017, "Proximal Policy Optimization Algorithms", and its reference code).

    Args:
      advantages: [K] reward minus baseline.
      mask: [K] bool, samples in the update.

    Returns:
      [K] float64; unmasked entries are zero; all zero when the masked ones are equal.
    """
    a = np.asarray(advantages, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    out = np.zeros_like(a)
    if m.sum() < 2:
        return out
    std = a[m].std()
    if std > 1e-12:
        out[m] = (a[m] - a[m].mean()) / std
    return out


def scheduled(kind: str, start: float, end: float, steps: int, step: int) -> float:
    """A value annealed from `start` to `end` over `steps` steps, then held.

    Args:
      kind: "constant" (always `start`), "linear", or "exponential"
        (geometric; both ends must be positive).
      start: value at step 0.
      end: value from step `steps` on.
      steps: length of the schedule; 0 = constant.
      step: the current step (0-based).

    Raises:
      ValueError: an unknown kind (see SCHEDULES).
    """
    if kind not in SCHEDULES:
        raise ValueError(f"unknown schedule {kind!r} (valid: {', '.join(SCHEDULES)})")
    if kind == "constant" or steps <= 0:
        return float(start)
    f = min(1.0, max(0, step) / steps)
    if kind == "linear":
        return float(start + f * (end - start))
    return float(start * (end / start) ** f)


SCHEDULES = ("constant", "linear", "exponential")


def elite_mask(rewards: np.ndarray, mask: np.ndarray, fraction: float) -> np.ndarray:
    """The elite samples of a batch for a cross-entropy-method update.

    Gao et al. 2018, "Post: Device Placement with Cross-Entropy Minimization
    and Proximal Policy Optimization" (NeurIPS): the policy also minimises the
    cross-entropy to the best samples of each batch.

    Args:
      rewards: [K] rewards.
      mask: [K] bool, samples that may be elite (ran).
      fraction: share of the batch kept, in (0, 1]; 0 = none.

    Returns:
      [K] bool, at least one sample when `fraction` > 0 and any is masked.
    """
    r = np.where(np.asarray(mask, bool), np.asarray(rewards, np.float64), -np.inf)
    out = np.zeros(len(r), bool)
    if fraction <= 0 or not np.isfinite(r).any():
        return out
    k = min(int(np.isfinite(r).sum()), max(1, int(round(fraction * len(r)))))
    out[np.argsort(-r, kind="stable")[:k]] = True
    return out


def merge_memory(
    mem_actions: np.ndarray, mem_rewards: np.ndarray, actions: np.ndarray, rewards: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The `size` best distinct placements among a memory and a new batch.

    Self-imitation (Oh et al. 2018, "Self-Imitation Learning", ICML): the
    policy keeps imitating the best placements it has ever measured, not only
    the best of the current batch, so a rare good sample is not forgotten.

    Args:
      mem_actions: [M, G] placements in memory.
      mem_rewards: [M] their rewards.
      actions: [K, G] new placements (only ones that ran).
      rewards: [K] their rewards.
      size: the most placements kept.

    Returns:
      ([<= size, G] placements, [<= size] rewards), best first; ties keep the
      memory's placement, then batch order.
    """
    a = np.concatenate([np.asarray(mem_actions).reshape(-1, np.shape(actions)[1]), actions]).astype(np.int32)
    r = np.concatenate([np.asarray(mem_rewards, np.float64), np.asarray(rewards, np.float64)])
    order = np.argsort(-r, kind="stable")
    keep, seen = [], set()
    for i in order:
        key = a[i].tobytes()
        if key not in seen and np.isfinite(r[i]) and len(keep) < size:
            seen.add(key)
            keep.append(i)
    return a[keep], r[keep]


def compute_prior(seconds: np.ndarray, strength: float) -> np.ndarray:
    """A logit bias that favours, per group, the devices that compute it fastest.

    Each group is charged its own compute time on a device plus the mean over
    all groups (t[g, d] + sum_g t[g, d] / G), so a group of near-free ops
    takes the graph's ratio between devices rather than none:
    sent to a slow device it still costs transfers. The policy then starts
    with p(d | g) proportional to (charge on the group's best device /
    charge on d) ** strength instead of uniform. Devices that tie (identical
    GPUs) keep equal logits, so the policy still has to learn the split.

    Args:
      seconds: [G, D] compute seconds of each group on each device (NaN or
        inf = no kernel there; those entries get 0 and are left to the mask).
      strength: exponent; 0 = no prior (all zeros).

    Returns:
      [G, D] float32 bias, at most 0.
    """
    t = np.asarray(seconds, np.float64)
    if strength == 0 or t.size == 0:
        return np.zeros(t.shape, np.float32)
    ok = np.isfinite(t)
    share = np.where(ok, t, 0.0).sum(axis=0) / t.shape[0]
    charge = np.where(ok, t, np.inf) + share
    best = charge.min(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        bias = -strength * np.log(charge / best)
    return np.where(ok & np.isfinite(bias), bias, 0.0).astype(np.float32)


def scheduled_field(section, prefix: str, start: float, step: int) -> float:
    """A config value on its schedule: `{prefix}_schedule` from `start` to `{prefix}_end` over `{prefix}_decay_steps`.

    Args:
      section: a config section (e.g. `config.placer.train`) with those fields (absent = constant).
      prefix: the value's name, e.g. "entropy" or "temperature".
      start: the value at step 0.
      step: the current step.
    """
    return scheduled(
        section.get(f"{prefix}_schedule", "constant"),
        start,
        section.get(f"{prefix}_end", start),
        section.get(f"{prefix}_decay_steps", 0),
        step,
    )


def scheduled_lr(learning_rate, step: int) -> float:
    """An optimizer's learning rate at `step`: a schedule (callable), a variable or a number."""
    if callable(learning_rate):
        return float(learning_rate(step))
    return float(learning_rate.numpy() if hasattr(learning_rate, "numpy") else learning_rate)


XLA_MIN_SIZE = 16_384  # train.jit_compile "auto": XLA from groups x policy hidden size this large (configs/common.py)


def use_xla(mode: str, groups: int, hidden: int) -> bool:
    """Whether `train.jit_compile` = `mode` ("on", "off", or "auto": groups x hidden >= XLA_MIN_SIZE) compiles.

    Raises:
      InputError: an unknown mode.
    """
    if mode not in ("auto", "on", "off"):
        raise InputError(f"--config.placer.train.jit_compile: unknown value {mode!r} (valid: auto, on, off)")
    return mode == "on" or (mode == "auto" and groups * hidden >= XLA_MIN_SIZE)
