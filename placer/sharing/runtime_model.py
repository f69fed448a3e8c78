"""How a job's seconds per iteration depend on its slot count (SLAQ's runtime model).

Zhang et al. (SoCC 2017), section 4: SLAQ predicts an iteration's time on s
workers from the job's past iterations; a / s + b (parallel work plus a
serial part) is the form used here where no measured profile exists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from scipy import optimize


@dataclasses.dataclass(frozen=True)
class RuntimeModel:
    """Seconds per iteration on s slots: t(s) = a / s + b (a, b >= 0).

    `a` is the parallel work (seconds on one slot), `b` the serial part.
    """

    a: float
    b: float


DEFAULT_RUNTIME = RuntimeModel(1.0, 0.0)  # before any observation: 1 s per iteration, linear scaling


def fit_runtime(slots, seconds) -> RuntimeModel:
    """Fits t(s) = a / s + b to observed (slot count, seconds per iteration) pairs.

    With two or more distinct slot counts, a and b come from non-negative least
    squares (scipy.optimize.nnls). With one slot count, the job is assumed to
    scale linearly from it: a = mean(t * s), b = 0. With none, DEFAULT_RUNTIME.

    Args:
      slots: [N] slot counts (>= 1).
      seconds: [N] seconds per iteration.

    Returns:
      The RuntimeModel.
    """
    s = np.asarray(slots, dtype=float)
    t = np.asarray(seconds, dtype=float)
    ok = np.isfinite(t) & (t > 0) & (s >= 1)
    s, t = s[ok], t[ok]
    if s.size == 0:
        return DEFAULT_RUNTIME
    if np.unique(s).size < 2:
        return RuntimeModel(float(np.mean(t * s)), 0.0)
    coef, _ = optimize.nnls(np.stack([1.0 / s, np.ones_like(s)], axis=1), t)
    if coef[0] <= 0 and coef[1] <= 0:
        return RuntimeModel(float(np.mean(t * s)), 0.0)
    return RuntimeModel(float(coef[0]), float(coef[1]))


def stack_profiles(profiles: Sequence[np.ndarray | None]) -> np.ndarray | None:
    """[J, P] measured seconds per iteration on 1..P slots, one row per job.

    Each row is padded with its last value; a job without a profile (None)
    gets a NaN row. Returns None when no job has a profile.
    """
    if all(p is None for p in profiles):
        return None
    width = max(p.size for p in profiles if p is not None)
    out = np.full((len(profiles), width), np.nan)
    for i, p in enumerate(profiles):
        if p is not None:
            out[i, : p.size] = p
            out[i, p.size :] = p[-1]
    return out


def iteration_seconds(m: dict[str, np.ndarray], s: np.ndarray) -> np.ndarray:
    """[J, C] seconds per iteration on s slots: the measured profile where there is one, else a / s + b.

    Args:
      m: per-job columns "rt_a", "rt_b" ([J, 1]) and optionally "profile" ([J, P], from `stack_profiles`).
      s: [J, C] slot counts.
    """
    model = m["rt_a"] / np.maximum(s, 1.0) + m["rt_b"]
    if "profile" not in m:
        return model
    prof = m["profile"]
    idx = np.clip(s, 1, prof.shape[1]).astype(np.int64) - 1
    measured = np.take_along_axis(prof, idx, axis=1)
    return np.where(np.isfinite(measured), measured, model)
