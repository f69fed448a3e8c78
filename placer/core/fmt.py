"""How times and changes are printed: 3 significant figures with a unit (4 for step times, whose differences
under 0.1% matter when methods are compared), directions in words."""

from __future__ import annotations

import math

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"))


def seconds(x: float | None, figures: int = 3) -> str:
    """A duration in seconds as text with 3 (or `figures`) significant figures and the unit that fits.

    Args:
      x: seconds, or None (printed as "-").
      figures: significant figures.

    Returns:
      e.g. "3.27 us", "1.90 ms", "378 ms", "629 s", "12400 s" (seconds are
      the largest unit); "inf" and "nan" as such.

    >>> seconds(3.27e-6), seconds(0.0019), seconds(0.3782), seconds(628.91), seconds(0.0)
    ('3.27 us', '1.90 ms', '378 ms', '629 s', '0 s')
    """
    if x is None:
        return "-"
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0 s"
    rounded = float(f"{x:.{figures}g}")  # 0.9996 ms is 1.00 ms, not 1000 us
    scale, unit = next(((s, u) for s, u in _UNITS if abs(rounded) >= s), _UNITS[-1])
    v = rounded / scale
    digits = max(0, figures - 1 - math.floor(math.log10(abs(v))))
    return f"{v:.{digits}f} {unit}"


def step_time(x: float | None) -> str:
    """A step time (s) with 4 significant figures and its unit: two placements 0.05% apart read apart.

    >>> step_time(0.0222189), step_time(0.02223), step_time(1.0), step_time(3.27e-6)
    ('22.22 ms', '22.23 ms', '1.000 s', '3.270 us')
    """
    return seconds(x, 4)


def change(x: float, reference: float, *, worse: str = "slower", better: str = "faster", name: str = "") -> str:
    """`x` against `reference` as a percentage with its direction in words.

    Args:
      x: the value compared (e.g. a step time, s).
      reference: the value it is compared against (same unit, positive).
      worse: the word for x > reference ("slower", "later", "more").
      better: the word for x < reference.
      name: the reference's name, appended after "than".

    >>> change(1.124, 1.0, name="fair"), change(0.953, 1.0), change(1.0, 1.0, name="fair")
    ('12.4% slower than fair', '4.7% faster', 'the same as fair')
    """
    if not (reference and math.isfinite(reference) and math.isfinite(x)):
        return "-"
    pct = 100.0 * (x - reference) / abs(reference)
    tail = f" than {name}" if name else ""
    if abs(pct) < 0.05:
        return f"the same as {name}" if name else "the same"
    return f"{abs(pct):.1f}% {worse if pct > 0 else better}{tail}"
