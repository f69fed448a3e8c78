"""Tests of the SLAQ curve math: fits, fallback, clipping, runtime model."""

import numpy as np
import pytest

from bench.slaq_synthetic import synthetic_curve
from placer.sharing import runtime_model
from placer.sharing import slaq_curves as sc


@pytest.mark.parametrize(
    "family,params,scale,offset",
    [
        ("inv_quad", (0.002, 0.05, 0.5, 3.0), 1.0, 0.0),
        ("inv_linear", (0.1, 0.2, 1.0), 1.0, 0.0),
        ("exp", (0.9, 2.0, 0.5), 1.0, 0.0),
        ("exp", (0.95, 0.0, 0.0), 1000.0, 20.0),  # a large loss scale
        ("inv_linear", (0.05, 1.0, 0.0), 0.01, 0.3),  # a small one
    ],
)
def test_each_family_predicts_ten_ahead_within_2_percent(family, params, scale, offset):
    y = scale * synthetic_curve(family, params, 60) + offset
    fit = sc.fit_curve(np.arange(50), y[:50])
    assert fit.family != sc.MEAN_CHANGE
    for k in (50, 55, 59):
        assert sc.predict(fit, k) == pytest.approx(y[k], rel=0.02)


def test_exp_family_recovers_its_parameters():
    y = 0.9 ** (np.arange(40.0) - 2.0) + 0.5
    fit = sc.fit_curve(np.arange(40), y)
    assert fit.family == sc.EXP
    # z = (y - loc) / scale = A exp(-r x) + c with mu = exp(-r).
    assert np.exp(-fit.params[1]) == pytest.approx(0.9, rel=1e-6)
    assert fit.asymptote == pytest.approx(0.5, rel=1e-6)


def test_window_and_weights_follow_recent_points():
    # An old regime followed by a new one: the fit follows the recent curve.
    k = np.arange(200.0)
    y = np.where(k < 100, 50.0 - 0.1 * k, 0.95 ** (k - 100) + 1.0)
    fit = sc.fit_curve(k[:190], y[:190], window=80)
    assert fit.k0 == 110
    assert sc.predict(fit, 199) == pytest.approx(y[199], rel=0.02)


def test_fallback_with_too_few_points_uses_recent_mean_change():
    fit = sc.fit_curve([0, 1, 2, 3], [10.0, 8.0, 7.0, 6.0])
    assert fit.family == sc.MEAN_CHANGE
    assert fit.mean_change == pytest.approx(4.0 / 3.0)
    assert sc.predict(fit, 6) == pytest.approx(6.0 - 3 * 4.0 / 3.0)


def test_fallback_on_flat_and_non_finite_curves():
    flat = sc.fit_curve(np.arange(10), np.full(10, 2.5))
    assert flat.family == sc.MEAN_CHANGE and flat.mean_change == 0.0
    assert sc.predict(flat, 100) == 2.5
    bad = sc.fit_curve(np.arange(10), [1.0] * 9 + [np.nan])
    assert bad.family == sc.MEAN_CHANGE


def test_fallback_never_predicts_a_rise():
    # Losses going up: the mean change is clamped at 0.
    fit = sc.fit_curve([0, 1, 2], [1.0, 2.0, 3.0])
    assert sc.predict(fit, 10) == 3.0


def test_predictions_never_rise_and_stay_below_last_observation():
    rng = np.random.default_rng(0)
    k = np.arange(30.0)
    y = 1.0 / (0.1 * k + 0.5) + 2.0 + 0.05 * rng.standard_normal(30)
    y[-1] += 0.3  # a last point above the trend
    fit = sc.fit_curve(k, y)
    future = sc.predict_many(fit, np.arange(29, 200))
    assert np.all(future <= y[-1])
    assert np.all(np.diff(future) <= 1e-12)


def test_runtime_model_fit_and_single_point_assumption():
    m = runtime_model.fit_runtime([1, 2, 4, 4], [5.0, 3.0, 2.0, 2.0])  # t = 4 / s + 1
    assert (m.a, m.b) == pytest.approx((4.0, 1.0))
    one = runtime_model.fit_runtime([2, 2], [3.0, 3.0])  # linear scaling from 6 slot-seconds
    assert (one.a, one.b) == pytest.approx((6.0, 0.0))  # t = 6 / s: 6, 3 and 2 s on 1, 2 and 3 slots
    assert runtime_model.fit_runtime([], []) == runtime_model.DEFAULT_RUNTIME
