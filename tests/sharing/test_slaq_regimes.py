"""Step drops, outliers and short regimes in the SLAQ curve fits (placer.sharing.slaq_curves)."""

import numpy as np
import pytest

from placer.sharing import slaq_curves, slaq_regimes
from placer.sharing.slaq_state import JobState


def _noisy_plateau(n, seed=0, sd=0.01):
    return 1.0 + sd * np.random.default_rng(seed).standard_normal(n)


def test_a_drop_spread_over_three_iterations_starts_a_regime_where_it_began():
    # A plateau 1 + 0.02 (-1)^k for k < 40: its changes alternate +-0.04, so their median is 0 and
    # their robust sd 1.4826 x 0.04 = 0.0593 (6 sds: 0.356). Then a drop of 0.15 a step: 0.85, 0.70,
    # 0.55. A change over m steps is taken from the median of the three losses before its span,
    # against m + 1 typical changes (the median of those before the span: -0.04 once the drop is
    # among them). At k = 42: over 1 step 0.55 - median(0.98, 0.85, 0.70) + 2 x 0.04 = -0.22; over 2,
    # 0.55 - median(1.02, 0.98, 0.85) + 3 x 0.04 = -0.31 (5.2 sds); over 3, 0.55 - median(1.02, 0.98,
    # 1.02) - 0 = -0.47 (7.9 sds): a jump, so the regime starts at 40, the first loss of the span.
    y = np.array([1.0 + 0.02 * (-1) ** k for k in range(40)] + [0.85, 0.70, 0.55, 0.55, 0.55])
    assert slaq_regimes.regime_start(y[:42]) == 0
    assert slaq_regimes.regime_start(y[:43]) == 40
    assert slaq_regimes.regime_start(y) == 40
    # JobState finds the same regime one loss at a time.
    j = JobState("a")
    for k, loss in enumerate(y):
        j.report(k, float(loss))
    assert j.regime_points == y.size - 40


def test_one_outlying_loss_is_not_a_regime():
    # A single loss 0.5 below the plateau, then back: a jump, undone by the next loss.
    y = np.concatenate([_noisy_plateau(40), [0.5], _noisy_plateau(5, 2)])
    assert slaq_regimes.regime_start(y[:41]) == 40  # the jump counts until the next loss says otherwise
    assert slaq_regimes.regime_start(y) == 0
    j = JobState("a")
    for k, loss in enumerate(y):
        j.report(k, float(loss))
    assert j.regime_points == y.size


def test_steady_noise_and_a_noiseless_line_are_no_jumps():
    assert slaq_regimes.regime_start(_noisy_plateau(300, 3)) == 0
    assert slaq_regimes.regime_start(10.0 - 0.1 * np.arange(60)) == 0


def test_three_points_falling_geometrically_predict_the_rest_of_the_fall():
    # 2.0, 1.0, 0.5: changes 1.0 then 0.5, so each change is half the one before: 0.25, 0.125, ...
    # sum to 0.5 more; the loss tends to 0.0, and one iteration ahead is 0.25.
    fit = slaq_curves.fit_curve([10.0, 11.0, 12.0], [2.0, 1.0, 0.5])
    assert fit.family == slaq_curves.EXP
    assert slaq_curves.predict(fit, 13.0) == pytest.approx(0.25)
    assert slaq_curves.predict(fit, 1000.0) == pytest.approx(0.0, abs=1e-9)
    assert fit.asymptote == pytest.approx(0.0)
    # Not geometric (the second change is larger): the linear fallback of the recent mean change.
    assert slaq_curves.fit_curve([0.0, 1.0, 2.0], [2.0, 1.5, 0.5]).family == slaq_curves.MEAN_CHANGE
