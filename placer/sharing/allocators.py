"""Slot allocators of shared searches: fair shares, SLAQ-safe, and the registry of all.

Every allocator has `allocate(jobs, num_slots) -> {job_id: slots}` over the
running JobStates, earliest first, and never hands out more than num_slots.

* `fair`: the work-conserving (max-min) fair share, the reference every
  comparison is made against: slots a capped job cannot use go to the others.
* `fair-static`: an even split whose unusable part stays idle.
* `slaq`: placer.sharing.slaq.SlaqAllocator (Zhang et al., SoCC 2017).
* `slaq-safe`: the fair share, from which a slot moves only where SLAQ's
  predictions say so with room to spare (`safe_swaps`).

How SLAQ-safe allocates: it starts from `fair` and moves one slot at a time
from a donor job to a receiver job, only while the move pays even if both
jobs' predictions err against it. Let e be a job's running prediction error
(JobState.prediction_error: the median miss of its last few scored
predictions relative to the progress made; 1 or more is no better than a
guess). The receiver's predicted gain from one more slot (slaq.marginal_gains,
the key SLAQ ranks slots by) is shrunk to gain x max(1 - e, 0); the donor's
predicted loss from giving up its last slot is grown to loss x (1 + e); the
slot moves only if the first exceeds the second by more than SAFE_MARGIN
(relative). Each move pairs the largest shrunk gain with the smallest grown
loss, until that pair fails; a donor keeps SAFE_KEEP slots. A job with fewer
than SAFE_MIN_EPOCHS scored predictions, or fewer than slaq_curves.MIN_POINTS
losses since its latest jump, neither gives nor receives: it keeps exactly
its fair share. So no job loses a slot except to one whose fit has held and
predicts clearly more progress from it, and when no job can be predicted the
result is `fair` itself. (A job with e >= 1 may still give slots its fit
calls nearly worthless: its loss, though doubled or more, stays small.)

numpy only (no TensorFlow).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from placer.sharing import slaq_curves
from placer.sharing.slaq import DEFAULT_EPOCH_S, NORMALISERS, JobState, SlaqAllocator, marginal_gains

SAFE_MARGIN = 0.5  # advantage a slot move needs beyond the prediction errors (our choice)
SAFE_KEEP = 1  # slots a donor keeps (our choice)
SAFE_MIN_EPOCHS = 2  # scored predictions a job needs before SLAQ-safe moves its slots (our choice)
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


def scored_error(job: JobState) -> float:
    """A job's running prediction error (JobState.prediction_error, >= 0) once SLAQ-safe may move
    its slots; NaN before SAFE_MIN_EPOCHS scored predictions or while its current regime is too
    short to fit (slaq_curves.MIN_POINTS losses since the latest jump)."""
    err = job.prediction_error
    if err is None or job.scored_epochs < SAFE_MIN_EPOCHS or job.regime_points < slaq_curves.MIN_POINTS:
        return math.nan
    return float(err)


def safe_swaps(
    fair: np.ndarray, gains: np.ndarray, errors: np.ndarray, margin: float = SAFE_MARGIN, keep: int = SAFE_KEEP
) -> np.ndarray:
    """Moves slots away from a fair allocation only where the prediction errors cannot undo the gain.

    A slot goes from donor d to receiver r while the receiver's pessimistic gain
    beats the donor's optimistic loss by the margin:
    gains[r, a_r] * max(1 - e_r, 0) > (1 + margin) * gains[d, a_d - 1] * (1 + e_d),
    i.e. r's predicted gain shrunk by its error against d's predicted loss grown by
    its error. Each step takes the largest pessimistic gain and the smallest
    optimistic loss; marginal gains do not grow with slots, so it stops when the
    best pair fails. Jobs with a NaN error never move; every donor keeps `keep` slots.

    Args:
      fair: [J] int fair shares (water_fill).
      gains: [J, C] predicted normalised gain of each job's s-th slot in column s - 1
        (slaq.marginal_gains; -inf beyond a job's cap), C at least the most slots a job may get.
      errors: [J] running prediction errors, >= 0 (NaN: the job keeps its fair share).
      margin: relative advantage a move needs on top of the errors.
      keep: fewest slots a donor is left with.

    Returns:
      [J] int slots per job, summing to fair.sum().

    >>> safe_swaps(np.array([2, 2]), np.array([[9.0, 8.0, 7.0], [1.0, 1.0, 1.0]]), np.array([0.0, 0.0])).tolist()
    [3, 1]
    """
    alloc = np.asarray(fair, dtype=np.int64).copy()
    errors = np.asarray(errors, dtype=float)
    width = gains.shape[1]
    rows = np.arange(alloc.size)
    movable = np.isfinite(errors)
    shrink = np.where(movable, np.clip(1.0 - errors, 0.0, 1.0), 0.0)
    for _ in range(int(alloc.sum())):
        nxt = np.where(movable & (alloc < width), gains[rows, np.minimum(alloc, width - 1)], -np.inf)
        cur = np.where(movable & (alloc > keep), gains[rows, np.maximum(alloc - 1, 0)], np.inf)
        pessimistic = np.where(np.isfinite(nxt), np.maximum(nxt, 0.0) * shrink, -np.inf)
        optimistic = np.maximum(cur, 0.0) * (1.0 + np.where(movable, errors, 0.0))
        r, d = int(np.argmax(pessimistic)), int(np.argmin(optimistic))
        if r == d or not pessimistic[r] > (1.0 + margin) * optimistic[d]:
            break  # r == d: the job's own next gain is at most its last slot's, so no pair qualifies
        alloc[r] += 1
        alloc[d] -= 1
    return alloc


class SafeSlaqAllocator:
    """SLAQ-safe: the fair share, with slots moved only where the predictions' errors cannot undo the gain.

    Args:
      epoch_s: seconds between reallocations.
      normalise: a NORMALISERS entry (see placer.sharing.slaq).
      **_: the other SlaqAllocator options (the objective), accepted and unused.
    """

    def __init__(self, *, epoch_s: float = DEFAULT_EPOCH_S, normalise: str = "max_change", **_):
        self.epoch_s = float(epoch_s)
        self.normalise = normalise

    def allocate(self, jobs: Sequence[JobState], num_slots: int) -> dict[Hashable, int]:
        """{job_id: slots}: `water_fill`, then `safe_swaps` over the jobs' predicted marginal gains."""
        if not jobs:
            return {}
        fair = water_fill(_caps(jobs), num_slots)
        width = int(min(num_slots, max(_caps(jobs))))  # the most slots any job could end up with
        gains = marginal_gains(jobs, width, epoch_s=self.epoch_s, normalise=self.normalise)
        errors = np.array([scored_error(j) for j in jobs])
        alloc = safe_swaps(fair, gains, errors)
        return {j.job_id: int(a) for j, a in zip(jobs, alloc, strict=True)}


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
