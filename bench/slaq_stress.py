"""Generates the SLAQ stress set: bench/data/stress_trace.csv, and the bursty arrivals it is replayed with.

Curves shaped after published training runs, with what makes sharing hard:

* learning-rate step drops: ResNet on ImageNet, the validation error falling
  sharply at epochs 30, 60 and 80 of 90 (He et al., "Deep Residual Learning",
  CVPR 2016; Goyal et al., "Accurate, Large Minibatch SGD", 2017); ResNet on
  CIFAR-10 at 50% and 75% of 160 epochs (He et al. 2016); detection models at
  2/3 and 8/9 of the schedule (Detectron's 1x schedule, 60k and 80k of 90k);
* batch growth instead of decay (Smith et al., "Don't Decay the Learning
  Rate, Increase the Batch Size", ICLR 2018): the curve drops where the
  batch grows, and from then on the job can use 4x more slots;
* smooth power-law curves (speech recognition), fast convergence then a flat
  or slightly rising held-out loss (click-through recommendation), and a flat
  start before the fall (warm-up plateaus of sequence models);
* noisy validation losses: multiplicative Gaussian noise of 0.3% to 4% per job;
* job lengths spanning more than 100x (one-slot seconds of the whole job).

An iteration is a fixed fraction of an epoch. Iteration k on s slots takes
a / min(s, c_k) + b_k seconds: a is its one-slot work, c_k the slots its
batch can use then (it grows with the batch), b_k the serial part (per-step
overhead, which shrinks as the batch grows). Every parameter is drawn from
a seeded generator (our choices, ranges in the code), so the file is the
same on every machine:

  .venv/bin/python -m bench.slaq_stress
"""

from __future__ import annotations

import os

import numpy as np

from bench import report
from bench.slaq_traces import TraceJob, save_trace

OUT = os.path.join(report.ROOT, "bench", "data", "stress_trace.csv")
SEED = 0
WIDTH = 32  # slot counts recorded per job (seconds_1..seconds_32)
MEAN_GAP_S = 15.0  # mean seconds between arrivals (SLAQ paper)
BURST = (1, 6)  # jobs per burst, uniform (our choice)
BURST_SPREAD_S = 2.0  # jobs of one burst arrive within this many seconds (our choice)


def _stages(n: int, drops: list[float], levels: list[float], start: float, taus: list[float]) -> np.ndarray:
    """[n + 1] a curve falling exponentially toward levels[i] in stage i, stages split at drops (fractions)."""
    k = np.arange(n + 1, dtype=float)
    bounds = [0] + [int(round(f * n)) for f in drops] + [n + 1]
    out = np.empty(n + 1)
    top = start
    for i in range(len(bounds) - 1):
        lo, hi = bounds[i], bounds[i + 1]
        out[lo:hi] = levels[i] + (top - levels[i]) * np.exp(-(k[lo:hi] - lo) / taus[i])
        top = out[hi - 1] if hi - 1 >= lo else top
    return out


def _job(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """(clean loss [n + 1], cap c_k [n + 1], serial b_k [n + 1] as a fraction of a, the iterations the
    scheduled drops start at, noise sd) of one kind."""
    if kind in ("imagenet-step", "imagenet-growing-batch"):
        n = int(rng.integers(150, 200))  # 90 epochs, about two iterations per epoch
        drops = [30 / 90, 60 / 90, 80 / 90]
        p1 = rng.uniform(0.45, 0.55)
        levels = [p1, p1 - rng.uniform(0.15, 0.2), None, None]
        levels[2] = levels[1] - rng.uniform(0.04, 0.07)
        levels[3] = levels[2] - rng.uniform(0.005, 0.015)
        loss = _stages(
            n, drops, levels, rng.uniform(0.95, 1.0), [n * rng.uniform(0.05, 0.1), *rng.uniform(1.0, 2.0, size=3)]
        )
        noise = rng.uniform(0.005, 0.015)
        cap0 = int(rng.choice([4, 8]))
    elif kind in ("cifar-step", "cifar-growing-batch"):
        n = int(rng.integers(120, 170))  # 160 epochs, about one iteration per epoch
        drops = [0.5, 0.75]
        p1 = rng.uniform(0.12, 0.2)
        levels = [p1, p1 * rng.uniform(0.45, 0.6), None]
        levels[2] = levels[1] * rng.uniform(0.85, 0.95)
        loss = _stages(n, drops, levels, 0.9, [n * rng.uniform(0.04, 0.08), *rng.uniform(1.0, 2.0, size=2)])
        noise = rng.uniform(0.02, 0.04)  # 10,000 test images: a noisy error rate
        cap0 = int(rng.choice([1, 2]))
    elif kind == "detection-step":
        n = int(rng.integers(100, 140))
        drops = [2 / 3, 8 / 9]
        k = np.arange(n + 1, dtype=float)
        final = rng.uniform(0.58, 0.7)  # 1 - mAP
        smooth = final + 0.04 + (1.0 - final) / (1.0 + k / rng.uniform(5.0, 12.0)) ** 0.8
        step = np.where(k >= drops[0] * n, 0.03, 0.0) + np.where(k >= drops[1] * n, 0.01, 0.0)
        loss = smooth - step
        noise = rng.uniform(0.003, 0.008)
        cap0 = int(rng.choice([8, 16]))
    elif kind == "speech-smooth":
        n = int(rng.integers(100, 200))
        drops = []
        k = np.arange(n + 1, dtype=float)
        loss = rng.uniform(0.1, 0.2) + rng.uniform(0.8, 1.0) / (1.0 + k / rng.uniform(3.0, 10.0)) ** rng.uniform(
            0.6, 1.0
        )
        noise = rng.uniform(0.005, 0.01)
        cap0 = 16
    elif kind == "recsys":
        n = int(rng.integers(40, 100))
        drops = []
        k = np.arange(n + 1, dtype=float)
        floor = rng.uniform(0.42, 0.47)  # click-through logloss
        rise = rng.uniform(0.0, 0.01) * np.maximum(k - 0.6 * n, 0.0) / n  # late overfitting
        loss = floor + rng.uniform(0.1, 0.2) * np.exp(-k / rng.uniform(4.0, 15.0)) + rise
        noise = rng.uniform(0.003, 0.006)
        cap0 = int(rng.choice([2, 4, 8]))
    elif kind == "warmup-plateau":
        n = int(rng.integers(80, 140))
        drops = []
        k = np.arange(n + 1, dtype=float)
        onset, width = rng.uniform(0.15, 0.3) * n, rng.uniform(3.0, 8.0)
        top, bottom = rng.uniform(2.0, 2.5), rng.uniform(0.6, 1.0)
        loss = bottom + (top - bottom) / (1.0 + np.exp((k - onset) / width)) + 0.3 * np.exp(-k / 40.0) * (k > onset)
        noise = rng.uniform(0.005, 0.015)
        cap0 = 8
    else:
        raise ValueError(kind)
    k = np.arange(n + 1)
    grows = kind.endswith("growing-batch")
    cap = np.full(n + 1, float(cap0))
    serial = np.full(n + 1, rng.uniform(0.02, 0.06))
    if grows:  # the batch grows 4x where the step schedule would decay the learning rate
        for f in drops[:2]:
            cap[k >= f * n] *= 4
            serial[k >= f * n] /= 4
    first = [int(np.argmax(k >= f * n)) if kind == "detection-step" else int(round(f * n)) for f in drops]
    return loss, np.minimum(cap, WIDTH), serial, first, noise


KINDS = {  # kind: (jobs, one-slot seconds of work per iteration, range)
    "imagenet-step": (3, (15.0, 40.0)),
    "imagenet-growing-batch": (2, (15.0, 40.0)),
    "cifar-step": (3, (0.4, 1.5)),
    "cifar-growing-batch": (2, (0.4, 1.5)),
    "detection-step": (3, (8.0, 25.0)),
    "speech-smooth": (3, (4.0, 12.0)),
    "recsys": (4, (0.2, 2.0)),
    "warmup-plateau": (4, (1.0, 6.0)),
}


def stress_jobs(seed: int = SEED) -> list[TraceJob]:
    """The stress set's jobs (bursty arrivals, see `bursty_arrivals`), named <kind>-<i>."""
    return _generate(seed)[0]


def scheduled_drops(seed: int = SEED) -> dict[str, list[int]]:
    """{job: iterations at which its learning-rate drops (or batch growths) start} of the stress set."""
    return _generate(seed)[1]


def _generate(seed: int) -> tuple[list[TraceJob], dict[str, list[int]]]:
    rng = np.random.default_rng(seed)
    jobs, drops = [], {}
    for kind, (count, work) in KINDS.items():
        for i in range(count):
            clean, cap, serial, drops[f"{kind}-{i}"], noise = _job(kind, rng)
            loss = clean * (1.0 + noise * rng.standard_normal(clean.size))
            loss[0] = clean[0]
            a = rng.uniform(*work)
            s = np.arange(1, WIDTH + 1, dtype=float)
            secs = a / np.minimum(s[None, :], cap[:, None]) + a * serial[:, None]
            jobs.append(TraceJob(f"{kind}-{i}", 0.0, loss, secs))
    arrivals = bursty_arrivals(len(jobs), np.random.default_rng(seed + 1))
    order = np.random.default_rng(seed + 2).permutation(len(jobs))
    out = [
        TraceJob(jobs[i].job_id, float(t), jobs[i].losses, jobs[i].seconds)
        for i, t in zip(order, arrivals, strict=True)
    ]
    return out, drops


def bursty_arrivals(count: int, rng: np.random.Generator) -> np.ndarray:
    """[count] arrival seconds in bursts: bursts of BURST jobs within BURST_SPREAD_S, the bursts a
    Poisson process whose gaps keep the mean gap between jobs at MEAN_GAP_S; the first at 0."""
    times: list[float] = []
    t = 0.0
    while len(times) < count:
        size = int(rng.integers(BURST[0], BURST[1] + 1))
        times.extend(t + np.sort(rng.uniform(0.0, BURST_SPREAD_S, size=size)))
        t += rng.exponential(MEAN_GAP_S * (BURST[0] + BURST[1]) / 2.0)
    out = np.array(times[:count])
    return out - out[0]


def main() -> None:
    jobs = stress_jobs()
    save_trace(OUT, jobs)
    work = [float(j.seconds[1:, 0].sum()) for j in jobs]
    print(f"wrote {OUT}: {len(jobs)} jobs, one-slot seconds {min(work):.0f} to {max(work):.0f}")


if __name__ == "__main__":
    main()
