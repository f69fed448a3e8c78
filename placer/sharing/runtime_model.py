"""How a job's seconds per iteration depend on its slot count (SLAQ's runtime model).

Zhang et al. (SoCC 2017), section 4: SLAQ predicts an iteration's time on s
workers from the job's past iterations; a / s + b (parallel work plus a
serial part) is the form used here where no measured profile exists.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import optimize


@dataclasses.dataclass(frozen=True)
class RuntimeModel:
    """Seconds per iteration on s slots: t(s) = a / s + b (a, b >= 0).

    `a` is the parallel work (seconds on one slot), `b` the serial part.
    """

    a: float
    b: float

    def seconds(self, slots) -> np.ndarray:
        """[...] seconds per iteration for each slot count in `slots` (>= 1)."""
        return self.a / np.maximum(np.asarray(slots, dtype=float), 1.0) + self.b


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
