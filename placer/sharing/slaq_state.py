"""One shared job's state for the SLAQ allocators: its losses, regimes, curve fit, runtime model.

Zhang et al., SoCC 2017: SLAQ keeps, per job, the loss history it fits
(normalised by the job's largest change so far) and the seconds its
iterations took on the slots it held. numpy and scipy only (no TensorFlow).
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np

from placer.sharing import slaq_curves, slaq_regimes
from placer.sharing.runtime_model import RuntimeModel, fit_runtime
from placer.sharing.slaq_curves import CurveFit

_RUNTIME_WINDOW = 50  # most recent (slots, seconds) observations behind the runtime model (our choice)
PROFILE_TOLERANCE = 0.02  # slot counts within 2% of a profile's fastest count as no faster (our choice)


class JobState:
    """One job's loss history and runtime observations, with cached models.

    The curve is fitted to the current regime only: a jump in the loss (see
    slaq_regimes.is_jump, e.g. a learning-rate drop) starts a new one.

    Attributes:
      job_id: hashable key of the job in allocations.
      max_slots: most slots the job can use (e.g. a search's samples per step); None = unlimited.
      profile: [M] measured seconds per iteration on 1..M slots, or None: the
        runtime model then is a / s + b fitted to the observations.
      total_iterations: iterations the job runs in all (its training budget, e.g. a
        search's steps), or None if unknown.
      fits: a dict shared by the JobStates of one recorded curve (the same
        iterations and losses, e.g. replays of one trace job), so a fit of
        the same points is made once; None: no sharing.
    """

    def __init__(
        self,
        job_id: Hashable,
        *,
        max_slots: int | None = None,
        profile=None,
        fits: dict | None = None,
        total_iterations: int | None = None,
    ):
        self.job_id = job_id
        self.total_iterations = total_iterations
        self._fits = fits
        self.max_slots = max_slots
        self.profile = None
        self.set_profile(profile)
        self._regime = 0  # index of the first loss of the current regime
        self._previous_regime = 0  # the regime before the latest jump, while that jump is unconfirmed
        self._iters: list[float] = []
        self._losses: list[float] = []
        self._max_change = 0.0
        self._slots: list[float] = []
        self._seconds: list[float] = []
        self._fit: CurveFit | None = None
        self._runtime: RuntimeModel | None = None
        self._row: tuple | None = None

    def report(self, iteration: float, loss: float, seconds: float | None = None, slots: int | None = None) -> None:
        """Records one finished iteration.

        Args:
          iteration: iteration number, increasing (0 for the initial loss).
          loss: loss after it (for a placement search: mean sqrt step time, seconds^0.5).
          seconds: wall seconds the iteration took, or None (e.g. the initial loss).
          slots: slots the job held during it, or None.
        """
        if self._iters and iteration <= self._iters[-1]:
            raise ValueError(f"job {self.job_id}: iteration {iteration} after {self._iters[-1]}")
        if self._losses:
            self._max_change = max(self._max_change, abs(self._losses[-1] - float(loss)))
            self._losses.append(float(loss))  # track_regime reads the newest loss last
            self._regime, self._previous_regime = slaq_regimes.track_regime(
                self._losses, self._regime, self._previous_regime
            )
            self._losses.pop()
        self._iters.append(float(iteration))
        self._losses.append(float(loss))
        self._fit = None
        self._row = None
        if seconds is not None and slots is not None and slots >= 1 and seconds > 0:
            self._slots.append(float(slots))
            self._seconds.append(float(seconds))
            self._runtime = None

    def set_profile(self, profile) -> None:
        """Replaces the measured seconds per iteration on 1..M slots (e.g. after the job's batch grew).

        Args:
          profile: [M] positive seconds, or None (the runtime model a / s + b then).
        """
        p = None if profile is None else np.asarray(profile, dtype=float)
        if p is not None and (p.size == 0 or not np.all(p > 0)):
            raise ValueError(f"job {self.job_id}: profile must be positive seconds, got {profile!r}")
        if p is None or self.profile is None or not np.array_equal(p, self.profile):
            self.profile = p
            self._row = None

    @property
    def iterations(self) -> np.ndarray:
        return np.asarray(self._iters)

    @property
    def losses(self) -> np.ndarray:
        return np.asarray(self._losses)

    @property
    def cap(self) -> float:
        """Most slots worth giving: max_slots, and no more than the fewest slots whose measured
        seconds per iteration are within PROFILE_TOLERANCE of the profile's fastest."""
        cap = float(self.max_slots) if self.max_slots else math.inf
        if self.profile is not None:
            fast = self.profile <= (1.0 + PROFILE_TOLERANCE) * self.profile.min()
            cap = min(cap, float(np.argmax(fast) + 1))
        return cap

    @property
    def regime_points(self) -> int:
        """Losses since the latest jump."""
        return len(self._losses) - self._regime

    @property
    def max_change(self) -> float:
        """Largest absolute loss change between consecutive reports so far."""
        return self._max_change

    def curve(self) -> CurveFit:
        """The loss-curve fit of the current regime (slaq_curves.regime_fit; refitted after new reports)."""
        if self._fit is None:
            key = (self._regime, len(self._iters))  # with the recorded curve, decides every point read
            if self._fits is not None and key in self._fits:
                self._fit = self._fits[key]
            else:
                self._fit = slaq_curves.regime_fit(self._iters, self._losses, self._regime)
                if self._fits is not None:
                    self._fits[key] = self._fit
        return self._fit

    def fitted_progress(self) -> float:
        """How far the job has come toward its predicted end: (L0 - F(k)) / (L0 - F(N)).

        F is the current regime's fitted curve (so noise in the last loss does
        not count), k the last iteration and N the job's total_iterations; the
        fraction of the loss reduction it will have made by its end that it
        has already made. NaN while that cannot be told: no known budget, a
        regime shorter than slaq_curves.MIN_POINTS losses (just after a jump,
        or a new job), no family fitted, or no predicted reduction.
        """
        if not self.total_iterations or self.regime_points < slaq_curves.MIN_POINTS or len(self._losses) < 2:
            return math.nan
        fit = self.curve()
        if fit.family == slaq_curves.MEAN_CHANGE:
            return math.nan
        now, end = slaq_curves.predict_many(fit, [fit.last_iter, float(self.total_iterations)])
        total = self._losses[0] - end
        return float((self._losses[0] - now) / total) if total > 0 else math.nan

    def runtime(self) -> RuntimeModel:
        """Seconds per iteration as a function of slots, fitted to recent observations."""
        if self._runtime is None:
            self._runtime = fit_runtime(self._slots[-_RUNTIME_WINDOW:], self._seconds[-_RUNTIME_WINDOW:])
        return self._runtime

    def model_row(self) -> tuple:
        """Everything the vectorised allocator needs, as one row of floats (cached until the next report)."""
        if self._row is None:
            self._row = self._make_row()
        return self._row

    def _make_row(self) -> tuple:
        cap = self.cap
        rt = self.runtime()
        if len(self._losses) < 2 or self._max_change <= 0:
            last = self._losses[-1] if self._losses else 0.0
            it = self._iters[-1] if self._iters else 0.0
            # Unknown curve: one normalised unit per iteration (see module docstring).
            return (0, 0.0, 0.0, 0.0, 0.0, it, 0.0, 1.0, it, last, 1.0, 1.0, rt.a, rt.b, cap, last, -math.inf)
        f = self.curve()
        return (
            f.code,
            *f.params,
            f.k0,
            f.loc,
            f.scale,
            f.last_iter,
            f.last_loss,
            f.mean_change,
            self._max_change,
            rt.a,
            rt.b,
            cap,
            self._losses[0],
            f.asymptote,
        )
