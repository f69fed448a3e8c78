"""Pure functions of the REINFORCE placer (no TensorFlow).

Mirhoseini et al. (ICML 2017), section 3.2: the reward of a placement is the
negative square root of its step time, a failed placement counts with a large
fixed step time, and a moving-average baseline reduces the variance.
"""

from __future__ import annotations

import numpy as np


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


def group_device_mask(op_group: np.ndarray, num_groups: int, op_ok: np.ndarray) -> np.ndarray:
    """Devices each group may go to: every op of the group has a kernel there.

    Args:
      op_group: [n_ops] group per op.
      num_groups: G.
      op_ok: [n_ops, D] bool, op can run on device.

    Returns:
      [G, D] bool; a group with no allowed device allows all (it will fail and be penalised).
    """
    bad = np.zeros((num_groups, op_ok.shape[1]), dtype=bool)
    np.logical_or.at(bad, op_group, ~op_ok)
    mask = ~bad
    mask[~mask.any(axis=1)] = True
    return mask


def group_devices_from_ops(
    op_devices: np.ndarray,
    op_group: np.ndarray,
    leader: np.ndarray,
    op_weight: np.ndarray,
    num_devices: int,
    allowed: np.ndarray | None = None,
) -> np.ndarray:
    """The device of each group by weighted vote of its ops, ties following their leader.

    Turns an op-level placement (a baseline's) into a group-level one the
    policy can imitate.

    Args:
      op_devices: [n_ops] device per op.
      op_group: [n_ops] group per op.
      leader: [G] tie leader per group.
      op_weight: [n_ops] vote weight per op (e.g. compute seconds; zeros are fine).
      num_devices: D.
      allowed: [G, D] bool devices each group may use; others get no vote.

    Returns:
      [G] int32 device per group; tied groups share their leader's device.
    """
    g = len(leader)
    cls = np.asarray(leader)[np.asarray(op_group)]
    votes = np.zeros((g, num_devices))
    np.add.at(votes, (cls, np.asarray(op_devices)), np.asarray(op_weight, dtype=np.float64) + 1e-9)
    if allowed is not None:
        votes = np.where(allowed, votes, -1.0)
    return votes.argmax(axis=1).astype(np.int32)[np.asarray(leader)]
