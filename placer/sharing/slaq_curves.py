"""Loss-curve math for the SLAQ allocator: normalisation, curve fits, runtime model.

SLAQ ("SLAQ: Quality-Driven Scheduling for Distributed Machine Learning",
Zhang, Stafman, Or and Freedman, SoCC 2017) compares jobs whose losses have
different scales by normalising each job's loss change by the largest change
it has seen, and predicts future loss by fitting the recent history to the
convergence families of iterative optimisers:

  first-order (sub-linear) methods   1 / (a k^2 + b k + c) + d   and   1 / (a k + b) + c
  linearly converging methods        mu^(k - b) + c

by weighted least squares whose weights decay exponentially with age, so
recent iterations count most. Everything here is a pure function of numpy
arrays; numpy and scipy only (no TensorFlow).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
from scipy import optimize

from placer.sharing.slaq_regimes import fit_start, regime_start

# Family names; the code is the index used by the vectorised evaluation.
MEAN_CHANGE = "mean_change"  # fallback: recent mean change per iteration, extrapolated linearly
INV_QUAD = "inv_quad"  # 1 / (a x^2 + b x + c) + d
INV_LINEAR = "inv_linear"  # 1 / (a x + b) + c
EXP = "exp"  # A exp(-r x) + c, i.e. mu^(x - b) + c with mu = exp(-r), b = ln(A) / r
FAMILIES = (MEAN_CHANGE, INV_QUAD, INV_LINEAR, EXP)

DEFAULT_DECAY = 0.9  # weight of a point one iteration older (our choice)
DEFAULT_WINDOW = 100  # points kept for a fit (our choice, "a bounded window")
MIN_POINTS = 5  # fewest points a curve is fitted to
_MEAN_CHANGE_POINTS = 10  # points behind the fallback's recent mean change
_MAX_NFEV = 200  # residual evaluations per least-squares start (bounds fitting time)
_SETTLE_POINTS = 3  # a regime after a jump with fewer points is predicted flat (our choice)


@dataclasses.dataclass(frozen=True)
class CurveFit:
    """A fitted loss curve, in the job's own iteration numbering and loss units.

    The curve is fitted to z = (loss - loc) / scale against x = k - k0, so the
    parameters are well conditioned whatever the loss scale; `predict` maps back.

    Attributes:
      family: one of FAMILIES.
      params: the family's parameters in z-space (4 floats, unused ones 0):
        inv_quad (a, b, c, d); inv_linear (a, b, c, 0); exp (A, r, c, 0); mean_change all 0.
      k0: first iteration of the fitted window.
      loc: loss offset of z-space.
      scale: loss scale of z-space (> 0).
      last_iter: last observed iteration.
      last_loss: last observed loss; predictions never exceed it.
      mean_change: recent mean loss decrease per iteration (>= 0), the fallback's slope.
      residual: weighted mean squared residual of the fit in z-space (0 for the fallback).
      asymptote: the loss the curve converges to (-inf for the fallback).
    """

    family: str
    params: tuple[float, float, float, float]
    k0: float
    loc: float
    scale: float
    last_iter: float
    last_loss: float
    mean_change: float
    residual: float = 0.0
    asymptote: float = -np.inf

    @property
    def code(self) -> int:
        return FAMILIES.index(self.family)


def _family_z(code: int | np.ndarray, p: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Evaluates curve families in z-space; p is [..., 4] broadcast against x."""
    a, b, c, d = (p[..., i] for i in range(4))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        quad = 1.0 / (a * x * x + b * x + c) + d
        lin = 1.0 / (a * x + b) + c
        exp = a * np.exp(-b * x) + c
    return np.where(code == 1, quad, np.where(code == 2, lin, exp))


def regime_fit(iters, losses, regime: int, *, decay: float = DEFAULT_DECAY, window: int = DEFAULT_WINDOW) -> CurveFit:
    """`fit_curve` on the current regime, from the first loss `slaq_regimes.fit_start` keeps.

    The regime's points since a concave start (a warm-up plateau) are fitted,
    within the window. Right after a jump the regime has too few points for
    a family; with fewer than three (`_geometric` needs three) the fall the
    jump began is taken to have ended, and the loss is predicted flat: its
    one or two changes are the jump's own, and extrapolating them linearly
    overshoots a drop that levels off within a few iterations.

    Args:
      iters: [N] iteration numbers, increasing.
      losses: [N] loss after each iteration.
      regime: index of the current regime's first loss (`slaq_regimes.regime_start`).
      decay: weight ratio per iteration of age, in (0, 1].
      window: most recent points used.

    Returns:
      The CurveFit; only the losses from the fit's start on are read.
    """
    losses = np.asarray(losses, dtype=float)
    start = fit_start(losses, regime, window)
    fit = fit_curve(np.asarray(iters, dtype=float)[start:], losses[start:], decay=decay, window=window)
    if regime > 0 and losses.size - regime < _SETTLE_POINTS and fit.family == MEAN_CHANGE:
        fit = dataclasses.replace(fit, mean_change=0.0)
    return fit


def recent_fit(iters, losses, *, decay: float = DEFAULT_DECAY, window: int = DEFAULT_WINDOW) -> CurveFit:
    """`regime_fit` on the regime `slaq_regimes.regime_start` finds: only the past is read."""
    return regime_fit(iters, losses, regime_start(losses), decay=decay, window=window)


def _mean_change(iters: np.ndarray, losses: np.ndarray) -> float:
    """Recent mean loss decrease per iteration (>= 0), over the last few points."""
    if iters.size < 2:
        return 0.0
    m = min(iters.size, _MEAN_CHANGE_POINTS)
    span = iters[-1] - iters[-m]
    return max(0.0, float(losses[-m] - losses[-1]) / span) if span > 0 else 0.0


def _fallback(iters: np.ndarray, losses: np.ndarray) -> CurveFit:
    last_iter = float(iters[-1]) if iters.size else 0.0
    last_loss = float(losses[-1]) if losses.size else 0.0
    return CurveFit(
        MEAN_CHANGE, (0.0, 0.0, 0.0, 0.0), last_iter, last_loss, 1.0, last_iter, last_loss, _mean_change(iters, losses)
    )


def _geometric(iters: np.ndarray, losses: np.ndarray) -> CurveFit | None:
    """The `exp` family through the last three points, when their two changes fall geometrically.

    Too few points for a least-squares fit (a new job, or just after a jump)
    but two decreasing changes c1 > c2 > 0: each later change is taken to be
    mu = c2 / c1 times the one before, so the loss falls by c2 mu / (1 - mu)
    more in all. None otherwise (the caller falls back to the mean change).
    """
    if iters.size < 3 or not np.all(np.isfinite(losses[-3:])):
        return None
    (k1, _, k3), (y1, y2, y3) = iters[-3:], losses[-3:]
    c1, c2 = float(y1 - y2), float(y2 - y3)
    step = (k3 - k1) / 2.0
    if not (c1 > 0 and 0 < c2 < c1 and step > 0):
        return None
    mu = c2 / c1
    rest = c2 * mu / (1.0 - mu)  # loss still to fall, in loss units
    loc, scale = float(y3) - rest, rest
    return CurveFit(
        EXP,
        (1.0, -math.log(mu) / step, 0.0, 0.0),
        float(k3),
        loc,
        scale,
        float(k3),
        float(y3),
        _mean_change(iters, losses),
        0.0,
        loc,
    )


def _initial_guesses(x: np.ndarray, z: np.ndarray) -> dict[int, np.ndarray]:
    """Starting point per family code, from the first and last points."""
    span = max(float(x[-1]), 1.0)
    c = -0.05
    z0, z1 = max(float(z[0]) - c, 1e-3), max(float(z[-1]) - c, 1e-3)
    b = 1.0 / z0
    a = max((1.0 / z1 - b) / span, 1e-6)
    r = max(np.log(z0 / z1) / span, 1e-6)
    # inv_quad starts with a small quadratic term.
    return {1: np.array([a * a / b / 4.0, a, b, c]), 2: np.array([a, b, c]), 3: np.array([z0, r, c])}


# Parameters that must be non-negative are fitted as logs, so the unconstrained
# Levenberg-Marquardt solver (MINPACK, fast on a few points) keeps every family
# non-increasing in x.
_LOG_PARAMS = {1: 3, 2: 2, 3: 2}  # leading log-parameters per family code


def _to_params(code: int, theta: np.ndarray) -> np.ndarray:
    n = _LOG_PARAMS[code]
    p4 = np.zeros(4)
    p4[:n] = np.exp(np.clip(theta[:n], -50.0, 50.0))
    p4[n : theta.size] = theta[n:]
    return p4


def _to_theta(code: int, p: np.ndarray) -> np.ndarray:
    n = _LOG_PARAMS[code]
    size = 4 if code == 1 else 3
    return np.concatenate([np.log(np.maximum(p[:n], 1e-12)), p[n:size]])


def _exp(v: float) -> float:
    return math.exp(min(max(v, -50.0), 50.0))


def _residual_and_jacobian(code: int, x: np.ndarray, z: np.ndarray, sw: np.ndarray):
    """Weighted residual sw * (f(x) - z) of a family and its Jacobian in log-parameters.

    The Jacobian is returned transposed ([params, points], leastsq's col_deriv=1).
    """
    x2 = x * x
    jac = np.empty((4 if code == 1 else 3, x.size))
    jac[-1] = sw

    def residual(theta):
        if code == 1:
            return sw * (1.0 / (_exp(theta[0]) * x2 + _exp(theta[1]) * x + _exp(theta[2])) + theta[3] - z)
        if code == 2:
            return sw * (1.0 / (_exp(theta[0]) * x + _exp(theta[1])) + theta[2] - z)
        return sw * (_exp(theta[0]) * np.exp(-_exp(theta[1]) * x) + theta[2] - z)

    def jacobian(theta):
        e0, e1 = _exp(theta[0]), _exp(theta[1])
        if code == 1:
            e2 = _exp(theta[2])
            g = -sw / (e0 * x2 + e1 * x + e2) ** 2
            jac[0], jac[1], jac[2] = g * (e0 * x2), g * (e1 * x), g * e2
        elif code == 2:
            g = -sw / (e0 * x + e1) ** 2
            jac[0], jac[1] = g * (e0 * x), g * e1
        else:
            g = sw * e0 * np.exp(-e1 * x)
            jac[0], jac[1] = g, -g * (e1 * x)
        return jac

    return residual, jacobian


def _fit_family(code: int, x: np.ndarray, z: np.ndarray, sw: np.ndarray, p0: np.ndarray):
    """Weighted least-squares fit of one family from `p0`; (params4, weighted sq. residual) or None.

    Uses MINPACK's Levenberg-Marquardt (scipy.optimize.leastsq, as curve_fit
    does) with an analytic Jacobian: a few milliseconds for 100 points.
    """
    residual, jacobian = _residual_and_jacobian(code, x, z, sw)
    theta0 = _to_theta(code, p0)
    if x.size < theta0.size:
        return None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            theta, ier = optimize.leastsq(residual, theta0, Dfun=jacobian, col_deriv=1, maxfev=_MAX_NFEV)[:2]
            fun = residual(theta)
    except (ValueError, FloatingPointError, np.linalg.LinAlgError, TypeError):
        return None
    if ier not in (1, 2, 3, 4, 5) or not np.all(np.isfinite(fun)):
        return None
    return _to_params(code, theta), float(np.sum(fun**2))


def fit_curve(
    iters, losses, *, decay: float = DEFAULT_DECAY, window: int = DEFAULT_WINDOW, min_points: int = MIN_POINTS
) -> CurveFit:
    """Fits a job's loss history to the SLAQ convergence families.

    Each family is fitted by weighted least squares (scipy.optimize.leastsq, see `_fit_family`)
    over the last `window` points, a point `j` iterations older than the newest
    weighing `decay**j`; the family with the lowest weighted residual wins.
    With fewer than `min_points` points, a flat history, or no family fitting,
    the result is the fallback: the recent mean change extrapolated linearly.

    Args:
      iters: [N] iteration numbers, increasing.
      losses: [N] loss after each iteration.
      decay: weight ratio per iteration of age, in (0, 1].
      window: most recent points used.
      min_points: fewest points fitted to.

    Returns:
      The CurveFit (never raises for a bad fit; it falls back instead).
    """
    iters = np.asarray(iters, dtype=float)[-window:]
    losses = np.asarray(losses, dtype=float)[-window:]
    if iters.size < max(min_points, 3) or not np.all(np.isfinite(losses)):
        return _geometric(iters, losses) or _fallback(iters, losses)
    loc, hi = float(losses.min()), float(losses.max())
    scale = hi - loc
    if scale <= 1e-12 * max(1.0, abs(hi)):
        return _fallback(iters, losses)
    k0 = float(iters[0])
    x, z = iters - k0, (losses - loc) / scale
    w = decay ** (x[-1] - x)
    sw = np.sqrt(w / w.sum())
    best = None
    for code, p0 in _initial_guesses(x, z).items():
        got = _fit_family(code, x, z, sw, p0)
        if got is not None and (best is None or got[1] < best[2]):
            best = (code, got[0], got[1])
    if best is None:
        return _fallback(iters, losses)
    code, p, cost = best
    asym = p[3] if code == 1 else p[2]
    return CurveFit(
        FAMILIES[code],
        tuple(float(v) for v in p),
        k0,
        loc,
        scale,
        float(iters[-1]),
        float(losses[-1]),
        _mean_change(iters, losses),
        cost,
        min(loc + scale * float(asym), loc),
    )


def predict_many(fit: CurveFit, ks) -> np.ndarray:
    """Vectorised `predict`: predicted loss at each iteration of `ks`."""
    ks = np.asarray(ks, dtype=float)
    if fit.family == MEAN_CHANGE:
        y = fit.last_loss - fit.mean_change * (ks - fit.last_iter)
    else:
        y = fit.loc + fit.scale * _family_z(fit.code, np.asarray(fit.params), ks - fit.k0)
    # Loss never rises: not above the last observation from then on.
    return np.where(ks >= fit.last_iter, np.minimum(y, fit.last_loss), y)


def predict(fit: CurveFit, k: float) -> float:
    """Predicted loss after iteration `k` (same units as the fitted losses).

    From the last observed iteration on, the prediction is clipped to the last
    observed loss; the families' parameter bounds make the curve non-increasing,
    so the predicted loss never rises.
    """
    return float(predict_many(fit, [k])[0])
