"""Synthetic SLAQ workloads: loss curves of the SLAQ paper's families with Poisson arrivals.

Zhang et al. (SoCC 2017) fit loss curves of the forms 1/(a k^2 + b k + c) + d,
1/(a k + b) + c and mu^(k - b) + c; these draw curves of those families with
random parameters, and iteration times t(s) = a / s + b, to test allocators on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bench.slaq_traces import TraceJob

# Default range of the synthetic serial fraction b / a of t(s) = a / s + b. It brackets
# what real placement searches measure: fit_runtime on the 20 searches recorded in
# bench/data/search_trace.csv (policy time serial, 16 placements dealt over the slots)
# gives b / a between 0.047 and 0.063.
SERIAL_FRACTION = (0.04, 0.07)


def synthetic_curve(family: str, params: Sequence[float], iterations: int) -> np.ndarray:
    """[iterations + 1] noiseless loss of a family at k = 0..iterations.

    Families: "inv_quad" 1/(a k^2 + b k + c) + d; "inv_linear" 1/(a k + b) + c;
    "exp" mu^(k - b) + c (params in that order).
    """
    k = np.arange(iterations + 1, dtype=float)
    if family == "inv_quad":
        a, b, c, d = params
        return 1.0 / (a * k * k + b * k + c) + d
    if family == "inv_linear":
        a, b, c = params[:3]
        return 1.0 / (a * k + b) + c
    if family == "exp":
        mu, b, c = params[:3]
        return mu ** (k - b) + c
    raise ValueError(f"unknown family {family!r}")


def synthetic_workload(
    num_jobs: int,
    *,
    seed: int = 0,
    mean_interarrival_s: float = 15.0,
    max_slots: int = 16,
    iterations: tuple[int, int] = (100, 400),
    noise: float = 0.0,
    serial: tuple[float, float] = SERIAL_FRACTION,
) -> list[TraceJob]:
    """Random jobs with Poisson arrivals, curves of the SLAQ families and t(s) = a / s + b.

    Parameters are drawn per job (our choices): family uniform over the three;
    inv_quad a ~ U(1e-5, 1e-3), b ~ U(0.01, 0.2), c = 1; inv_linear a ~ U(0.01, 0.3),
    b = 1; exp mu ~ U(0.9, 0.99), b = 0; loss scale 10^U(-1, 2) and offset U(0, 1)
    times the scale; a ~ U(1, 10) s of work per iteration, b ~ U(*serial) a serial.

    Args:
      num_jobs: jobs to generate.
      seed: random seed.
      mean_interarrival_s: mean seconds between arrivals (SLAQ paper: 15 s); the first arrives at 0.
      max_slots: M, slot counts recorded per job.
      iterations: (low, high) range of iterations per job.
      noise: standard deviation of multiplicative Gaussian noise on the loss (e.g. 0.005).
      serial: (low, high) range of the serial fraction b / a of the iteration time.

    Returns:
      The jobs, in arrival order.
    """
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mean_interarrival_s, size=num_jobs)
    arrivals = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    out = []
    for i in range(num_jobs):
        n = int(rng.integers(iterations[0], iterations[1] + 1))
        family = ("inv_quad", "inv_linear", "exp")[int(rng.integers(3))]
        if family == "inv_quad":
            z = synthetic_curve(family, (rng.uniform(1e-5, 1e-3), rng.uniform(0.01, 0.2), 1.0, 0.0), n)
        elif family == "inv_linear":
            z = synthetic_curve(family, (rng.uniform(0.01, 0.3), 1.0, 0.0), n)
        else:
            z = synthetic_curve(family, (rng.uniform(0.9, 0.99), 0.0, 0.0), n)
        scale = 10 ** rng.uniform(-1, 2)
        loss = scale * (z + rng.uniform(0, 1))
        if noise > 0:
            loss = loss * (1.0 + noise * rng.standard_normal(loss.size))
        a = rng.uniform(1.0, 10.0)
        b = rng.uniform(*serial) * a
        secs = np.tile(a / np.arange(1, max_slots + 1) + b, (n + 1, 1))
        out.append(TraceJob(f"job{i:03d}", float(arrivals[i]), loss, secs))
    return out
