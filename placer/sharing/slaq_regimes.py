"""Regimes of a loss curve: where a learning-rate drop, a plateau's end or a batch change starts a new one.

SLAQ (Zhang et al., SoCC 2017) fits a job's recent losses to convergence
families; a curve that drops at a learning-rate step is two curves, so the
fit (slaq_curves.recent_fit, JobState.curve) takes only the losses since the
latest jump found here. Pure functions of the losses; numpy and the
standard library only (no TensorFlow).
"""

from __future__ import annotations

import statistics

import numpy as np

JUMP_FACTOR = 6.0  # a change this many robust standard deviations off the recent ones is a jump (our choice)
JUMP_LOOKBACK = 20  # changes a jump is compared with (our choice)


def change_scale(previous_changes) -> tuple[float, float]:
    """(typical change, robust standard deviation of a change) of a run of loss changes.

    The median and 1.4826 x the median absolute deviation, so one outlier
    (a noisy point) moves neither; the deviation is at least 1e-9 of the
    largest change, so a noiseless straight line still has a scale.
    """
    prev = [float(c) for c in previous_changes]  # a few dozen values: faster in Python than in numpy
    mid = statistics.median(prev)
    mad = 1.4826 * statistics.median([abs(c - mid) for c in prev])
    return mid, max(mad, 1e-9 * max(abs(c) for c in prev), 1e-12)


JUMP_SPAN = 3  # a jump may spread over this many changes (a drop takes an epoch or two to show; our choice)


def is_jump(previous_changes, change: float, *, steps: int = 1) -> bool:
    """Whether a loss change over `steps` iterations starts a new regime (e.g. a learning-rate drop).

    A smooth convergence curve changes a little less each iteration and
    noise keeps a steady size, so a change that differs from `steps` typical
    recent changes by more than JUMP_FACTOR robust standard deviations of one
    change (`change_scale`; with independent noise on each loss, the noise of
    a change over several iterations is that of one) marks a jump, the end of
    a plateau or an outlier (`track_regime` tells those apart by the next loss).

    Args:
      previous_changes: [JUMP_LOOKBACK] the one-iteration changes before it (signed).
      change: the loss change over the newest `steps` iterations.
      steps: iterations the change spans.

    Returns:
      False while fewer than JUMP_LOOKBACK changes precede it.

    >>> is_jump([0.1, -0.1] * 10, -0.9), is_jump([0.1, -0.1] * 10, -0.3)
    (True, False)
    """
    if len(previous_changes) < JUMP_LOOKBACK:
        return False
    mid, sd = change_scale(previous_changes)
    return abs(change - steps * mid) > JUMP_FACTOR * sd


def track_regime(losses, regime: int, previous: int) -> tuple[int, int]:
    """The regime after the newest loss: (index of the regime's first loss, the regime before it).

    The newest loss y_n starts a regime at n - m + 1 when its change over the
    last m <= JUMP_SPAN iterations (from the median of the three losses up to
    y_(n-m), so an outlier there is no base) is a jump (`is_jump`) against the changes
    before them (the longest such span wins, so a drop spread over a few
    iterations starts where it began), and that start is past the current
    regime's. A jump into the previous loss is undone when y_n came back
    nearer the loss before the jump than the jump's own: an outlier.

    Args:
      losses: [n + 1] the losses so far, the newest last (a list or array; only the last
        JUMP_SPAN + JUMP_LOOKBACK + 3 are read).
      regime: the current regime's first index.
      previous: the regime before it.

    Returns:
      (regime, previous) after the newest loss.
    """
    n = len(losses) - 1
    y = np.asarray(losses[max(0, n - JUMP_SPAN - JUMP_LOOKBACK - 2) :], dtype=float)  # only the tail is read
    if n >= 2 and regime == n - 1 and abs(y[-1] - y[-3]) < abs(y[-1] - y[-2]):
        return previous, previous  # the jump was an outlier; the loss that came back is no jump
    d = np.diff(y)
    for m in range(1, min(JUMP_SPAN, d.size - JUMP_LOOKBACK - 2) + 1):
        start = n - m + 1
        before = d[d.size - m - JUMP_LOOKBACK : d.size - m]
        # The level before the span, whatever one outlier there: on a steady trend the median of
        # three consecutive losses is the middle one, m + 1 iterations before y_n.
        base = statistics.median(y[-m - 3 : -m])
        if start - 1 - JUMP_LOOKBACK >= regime and is_jump(before, float(y[-1] - base), steps=m + 1):
            return start, regime
    return regime, previous


def regime_start(losses) -> int:
    """Index of the first loss of the current regime (`track_regime` over every loss in turn); 0 if none.

    Args:
      losses: [N] a job's losses in order of iteration.
    """
    y = np.asarray(losses, dtype=float)
    regime = previous = 0
    for n in range(JUMP_LOOKBACK + 1, y.size):
        regime, previous = track_regime(y[: n + 1], regime, previous)  # a view: O(1) per loss
    return regime


STEEP_HALF = 3  # half-width of the window a local slope is fitted over (7 losses; our choice)
STEEP_RATIO = 2.0  # a descent this many times the regime's first one marks a concave start (our choice)
STEEP_BACK = 3  # losses before the steepest point kept in the fit (our choice)


def descent_rates(losses, half: int = STEEP_HALF) -> np.ndarray:
    """Least-squares slope of the loss, negated, over each window of 2 half + 1 consecutive losses.

    Args:
      losses: [N] losses in order of iteration.
      half: half-width of the window.

    Returns:
      [N - 2 half] loss decrease per iteration centred on losses half .. N - half - 1 (empty when
      N < 2 half + 1).

    >>> descent_rates([5.0, 4.0, 3.0, 2.0, 1.0], half=1).tolist()
    [1.0, 1.0, 1.0]
    """
    y = np.asarray(losses, dtype=float)
    if y.size < 2 * half + 1:
        return np.zeros(0)
    t = np.arange(-half, half + 1, dtype=float)
    return np.correlate(y, -t / (t @ t), mode="valid")


def fit_start(losses, regime: int, window: int) -> int:
    """Index of the first loss a convergence curve is fitted to: past a regime's concave start.

    The SLAQ families fall fastest at their start. A regime whose loss first
    falls slowly and then faster (a warm-up plateau before the fall, a drop
    that builds up) is concave there, so the fit starts STEEP_BACK losses
    before its steepest local descent when that descent is more than
    STEEP_RATIO times the regime's first one; otherwise at the regime's start
    (or the window's, if later).

    Args:
      losses: [N] a job's losses in order of iteration.
      regime: index of the current regime's first loss (`regime_start`).
      window: most recent losses a fit may use.

    Returns:
      The index, in [max(regime, N - window), N - 1].
    """
    y = np.asarray(losses, dtype=float)
    start = max(regime, y.size - window, 0)
    rates = descent_rates(y[start:])
    if rates.size < 3:
        return start
    steepest = int(np.argmax(rates))
    if steepest > 0 and rates[steepest] > STEEP_RATIO * max(float(rates[0]), 0.0):
        start += max(steepest + STEEP_HALF - STEEP_BACK, 0)
    return start
