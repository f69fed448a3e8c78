"""Slot allocators of shared searches: fair shares, SLAQ-safe, and the registry of all.

Every allocator has `allocate(jobs, num_slots) -> {job_id: slots}` over the
running JobStates, earliest first, and never hands out more than num_slots.

* `fair`: the work-conserving (max-min) fair share, the reference every
  comparison is made against: slots a capped job cannot use go to the others.
* `fair-static`: an even split whose unusable part stays idle.
* `slaq`: placer.sharing.slaq.SlaqAllocator (Zhang et al., SoCC 2017).
* `slaq-safe`: SLAQ for the jobs whose recent predictions held, the fair
  share for the others (too little history, a recent jump, or a running
  prediction error over SAFE_MAX_ERROR), so a job whose curve SLAQ cannot
  predict is never starved by a wrong prediction.

numpy only (no TensorFlow).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from placer.sharing import slaq_curves
from placer.sharing.slaq import DEFAULT_EPOCH_S, NORMALISERS, JobState, SlaqAllocator

SAFE_MAX_ERROR = 0.5  # running progress error above which a job's predictions are unreliable (our choice)
SAFE_MIN_EPOCHS = 2  # scored predictions a job needs before SLAQ allocates for it (our choice)
OBJECTIVES = {"total": "total", "maxmin": "min"}  # CLI name -> SlaqAllocator objective


def water_fill(caps: Sequence[float], num_slots: int) -> np.ndarray:
    """Work-conserving (max-min) fair shares of `num_slots` among jobs with slot caps.

    Slots are split evenly; what a capped job cannot use goes back to the
    others, round after round, and the last few (fewer than the open jobs)
    go one each to the earliest open jobs. The result uses min(num_slots,
    sum(caps)) slots: no job below its cap is left short while a slot is idle.

    Args:
      caps: [J] most slots each job can use (math.inf: unlimited), earliest job first.
      num_slots: slots in the pool.

    Returns:
      [J] int slots per job.

    >>> water_fill([1, math.inf, math.inf], 8).tolist()
    [1, 4, 3]
    """
    caps = np.asarray(caps, dtype=float)
    alloc = np.zeros(caps.size, dtype=np.int64)
    left = max(int(num_slots), 0)
    open_ = [i for i in range(caps.size) if caps[i] >= 1]
    while left > 0 and open_:
        share = left // len(open_)
        if share == 0:
            alloc[open_[:left]] += 1
            break
        still = []
        for i in open_:
            give = int(min(share, caps[i] - alloc[i]))
            alloc[i] += give
            left -= give
            if alloc[i] < caps[i]:
                still.append(i)
        open_ = still
    return alloc


def _caps(jobs: Sequence[JobState]) -> list[float]:
    return [j.cap for j in jobs]


class FairAllocator:
    """Work-conserving fair share (`fair`): even split, unusable slots to the others.

    Same interface as SlaqAllocator; see `water_fill`. A job never gets more
    than its max_slots, and no slot stays idle while a job below its cap runs.
    """

    def allocate(self, jobs: Sequence[JobState], num_slots: int) -> dict[Hashable, int]:
        """{job_id: slots} by `water_fill` over the jobs' max_slots, earliest jobs first."""
        alloc = water_fill(_caps(jobs), num_slots)
        return {j.job_id: int(a) for j, a in zip(jobs, alloc, strict=True)}


class StaticFairAllocator:
    """Static fair share (`fair-static`): slots split evenly, the remainder to the earliest jobs.

    A capped job's unused share stays idle; kept as the weaker reference the
    SLAQ paper's comparisons resemble. Same interface as SlaqAllocator.
    """

    def allocate(self, jobs: Sequence[JobState], num_slots: int) -> dict[Hashable, int]:
        """{job_id: slots}: num_slots // len(jobs) each, one more for the first num_slots % len(jobs)."""
        n = len(jobs)
        if n == 0:
            return {}
        base, rest = divmod(max(num_slots, 0), n)
        out = {}
        for i, j in enumerate(jobs):
            s = base + (1 if i < rest else 0)
            out[j.job_id] = min(s, j.max_slots) if j.max_slots else s
        return out


def reliable(job: JobState) -> bool:
    """Whether SLAQ-safe trusts a job's predictions: enough scored epochs, a regime long
    enough to fit (slaq_curves.MIN_POINTS losses since the latest jump), and a running
    prediction error of at most SAFE_MAX_ERROR."""
    err = job.prediction_error
    return (
        job.scored_epochs >= SAFE_MIN_EPOCHS
        and job.regime_points >= slaq_curves.MIN_POINTS
        and err is not None
        and err <= SAFE_MAX_ERROR
    )


class SafeSlaqAllocator:
    """SLAQ-safe: unreliable jobs get their work-conserving fair share, the rest go by SLAQ.

    Args:
      **slaq_options: passed to SlaqAllocator (objective, epoch_s, normalise).
    """

    def __init__(self, **slaq_options):
        self.slaq = SlaqAllocator(**slaq_options)
        self.epoch_s = self.slaq.epoch_s

    def allocate(self, jobs: Sequence[JobState], num_slots: int) -> dict[Hashable, int]:
        """{job_id: slots}: fair shares for the unreliable jobs, SLAQ over the slots left for the others."""
        if not jobs:
            return {}
        for j in jobs:
            j.model_row()  # fits every job, so each one's predictions are scored, trusted or not
        fair = water_fill(_caps(jobs), num_slots)
        trusted = [reliable(j) for j in jobs]
        out = {j.job_id: int(f) for j, f, t in zip(jobs, fair, trusted, strict=True) if not t}
        rest = [j for j, t in zip(jobs, trusted, strict=True) if t]
        if rest:
            out.update(self.slaq.allocate(rest, max(num_slots - sum(out.values()), 0)))
        return {j.job_id: out[j.job_id] for j in jobs}


ALLOCATORS = ("slaq", "slaq-safe", "fair", "fair-static")


def make_allocator(
    name: str, *, epoch_s: float = DEFAULT_EPOCH_S, objective: str = "total", normalise: str = "max_change"
):
    """An allocator by name (ALLOCATORS); objective is "total" or "maxmin" (SLAQ's only).

    Raises:
      ValueError: unknown name, objective or normaliser, or epoch_s <= 0.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r} (valid: {', '.join(OBJECTIVES)})")
    if normalise not in NORMALISERS:
        raise ValueError(f"unknown normaliser {normalise!r} (valid: {', '.join(NORMALISERS)})")
    options = {"objective": OBJECTIVES[objective], "epoch_s": epoch_s, "normalise": normalise}
    makers = {
        "slaq": lambda: SlaqAllocator(**options),
        "slaq-safe": lambda: SafeSlaqAllocator(**options),
        "fair": FairAllocator,
        "fair-static": StaticFairAllocator,
    }
    if name not in makers:
        raise ValueError(f"unknown allocator {name!r} (valid: {', '.join(ALLOCATORS)})")
    return makers[name]()
