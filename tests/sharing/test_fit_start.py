"""Where the SLAQ curve fit starts and what it predicts right after a jump (slaq_regimes.fit_start,
slaq_curves.regime_fit), and that fits read only the past."""

import numpy as np
import pytest

from placer.sharing import slaq_curves, slaq_regimes
from placer.sharing.slaq_state import JobState


def _warm_up():
    # A plateau at 2.0 up to k = 10, then 1 + 0.5^(k - 10): 2, 1.5, 1.25, 1.125, ...
    return np.array([2.0] * 10 + [1.0 + 0.5 ** (k - 10) for k in range(10, 30)])


def test_descent_rates_are_least_squares_slopes_over_seven_losses():
    # Window centred on c: rate = -sum_t t y(c + t) / 28 for t = -3..3 (sum t^2 = 28).
    # c = 9: -(-3x2 - 2x2 - 1x2 + 0 + 1x2 + 2x1.5 + 3x1.25) = 3.25, so 3.25 / 28;
    # c = 11 (losses 8..14: 2, 2, 2, 1.5, 1.25, 1.125, 1.0625): 12 - 6.6875 = 5.3125;
    # c = 12 (9..15: 2, 2, 1.5, 1.25, 1.125, 1.0625, 1.03125): 11.5 - 6.34375 = 5.15625.
    rates = slaq_regimes.descent_rates(_warm_up()) * 28
    assert rates[:3] == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)  # the plateau, centres 3..5
    assert rates[9 - 3] == pytest.approx(3.25)
    assert rates[11 - 3] == pytest.approx(5.3125)
    assert rates[12 - 3] == pytest.approx(5.15625)
    assert int(np.argmax(rates)) == 11 - 3


def test_a_warm_up_plateau_is_left_out_of_the_fit():
    y = _warm_up()
    # The steepest descent is centred on k = 11 (5.3125 / 28, more than twice the first window's 0),
    # so the fit starts STEEP_BACK = 3 losses before it, at k = 8.
    assert slaq_regimes.fit_start(y[:17], 0, 100) == 8
    # A later regime start or window start is kept when the curve is convex from there on.
    assert slaq_regimes.fit_start(y[:25], 12, 100) == 12
    assert slaq_regimes.fit_start(y[:25], 0, 10) == 15
    # A convex curve falls fastest at its start: the fit keeps it.
    assert slaq_regimes.fit_start(1.0 + 0.5 ** np.arange(30.0), 0, 100) == 0
    # Fitted from k = 8, the prediction at 20 (truth 1 + 0.5^10 = 1.00098) is far nearer than that of
    # a fit from the plateau's start, whose convex families bend past the fall's end.
    truth = 1.0 + 0.5**10
    fit = slaq_curves.regime_fit(np.arange(17), y[:17], 0)
    from_zero = slaq_curves.fit_curve(np.arange(17), y[:17])
    assert fit.k0 == 8
    assert abs(slaq_curves.predict(fit, 20) - truth) < 0.5 * abs(slaq_curves.predict(from_zero, 20) - truth)


def _plateau_then_drop():
    # 1 +- 0.02 alternating for k < 40 (changes +-0.04: median 0, robust sd 1.4826 x 0.04 = 0.059),
    # then 0.5 at k = 40: 0.5 - median(0.98, 1.02, 0.98) = -0.48 over 2 steps, more than 6 sds (0.356):
    # a jump, and the next losses 0.45, 0.43 stay near it, so the regime starts at 40.
    return [1.0 + 0.02 * (-1) ** k for k in range(40)] + [0.5, 0.45, 0.43]


def test_two_losses_after_a_jump_predict_flat_and_three_predict_a_geometric_fall():
    y = _plateau_then_drop()
    assert slaq_regimes.regime_start(y[:42]) == 40
    # Two losses in the regime (0.5, 0.45): its one change, 0.05 a step, is the drop's; extrapolated
    # it would reach 0.45 - 10 x 0.05 = -0.05 at k = 51. Predicted flat instead: 0.45.
    fit = slaq_curves.recent_fit(np.arange(42), y[:42])
    assert fit.family == slaq_curves.MEAN_CHANGE
    assert fit.mean_change == 0.0
    assert slaq_curves.predict(fit, 51) == pytest.approx(0.45)
    # Three (0.5, 0.45, 0.43): changes 0.05 then 0.02, ratio 0.4, so 0.02 x 0.4 / 0.6 = 0.01333 more
    # to fall: the asymptote is 0.41667.
    fit = slaq_curves.recent_fit(np.arange(43), y)
    assert fit.family == slaq_curves.EXP
    assert fit.asymptote == pytest.approx(0.43 - 0.02 * 0.4 / 0.6)
    # Two losses at the very start of a job are no jump: their change is extrapolated as before.
    start = slaq_curves.recent_fit([0.0, 1.0], [1.0, 0.9])
    assert start.mean_change == pytest.approx(0.1)


def test_fits_read_only_the_past_and_the_allocator_fits_as_the_bench_does():
    # Two curves with the same 46 losses; the second drops by 0.3 from k = 46 on.
    y = np.array(_plateau_then_drop() + [0.42, 0.415, 0.41])
    other = np.concatenate([y, y[-1] - 0.3 + 0.001 * np.arange(10)])
    same = np.concatenate([y, np.full(10, y[-1])])
    a, b = JobState("a"), JobState("b")
    for k in range(same.size):
        a.report(k, float(same[k]))
        b.report(k, float(other[k]))
        if k < y.size:
            # Up to the shared past's end, the same fit whatever came after, and the one recent_fit makes.
            expected = slaq_curves.recent_fit(np.arange(k + 1), same[: k + 1])
            assert a.curve() == expected
            assert b.curve() == expected
    # Once the second curve's drop is reported, its fit differs.
    assert a.curve() != b.curve()
