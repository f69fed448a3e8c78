"""placer.core.fmt: times keep 3 significant figures in us, ms or s; changes say their direction in words."""

import math

import pytest

from placer.core import fmt


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (3.27e-6, "3.27 us"),  # placer-train's best on nmt.py:tiny, k80x4: once printed as 0.0000s
        (3.3e-6, "3.30 us"),
        (1.886e-3, "1.89 ms"),
        (0.3782, "378 ms"),
        (0.9996, "1.00 s"),  # rounds to 3 figures before the unit is chosen, not "1000 ms"
        (9.996e-4, "1.00 ms"),
        (12.4105, "12.4 s"),
        (628.9131, "629 s"),
        (0.0, "0 s"),
        (math.inf, "inf"),
        (None, "-"),
    ],
)
def test_seconds(seconds, text):
    assert fmt.seconds(seconds) == text


def test_change_says_the_direction():
    # (984.9 - 876.4) / 876.4 = +12.38%: slower than fair.
    assert fmt.change(984.9, 876.4, name="fair") == "12.4% slower than fair"
    # (0.9 - 1.2) / 1.2 = -25%.
    assert fmt.change(0.9, 1.2, name="expert") == "25.0% faster than expert"
    assert fmt.change(2.0, 2.0, name="fair") == "the same as fair"
    assert fmt.change(1.5, 1.0, worse="later", better="sooner") == "50.0% later"
    assert fmt.change(1.0, math.inf) == "-"


def test_step_times_keep_four_significant_figures():
    # 22.22 ms and 22.23 ms are 0.05% apart: three figures would print both as 22.2 ms.
    assert (fmt.step_time(0.0222189), fmt.step_time(0.02223)) == ("22.22 ms", "22.23 ms")
    assert fmt.step_time(0.99996e-3) == "1.000 ms" and fmt.step_time(12.5) == "12.50 s"
    assert fmt.step_time(None) == "-" and fmt.seconds(0.0222189) == "22.2 ms"  # other durations keep three
