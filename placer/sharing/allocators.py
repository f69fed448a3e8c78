"""Slot allocators of shared searches: fair shares, SLAQ-safe, and the registry of all.

Every allocator has `allocate(jobs, num_slots) -> {job_id: slots}` over the
running JobStates, earliest first, and never hands out more than num_slots.

* `fair`: the work-conserving (max-min) fair share, the reference every
  comparison is made against: slots a capped job cannot use go to the others.
* `fair-static`: an even split whose unusable part stays idle.
* `slaq`: placer.sharing.slaq.SlaqAllocator (Zhang et al., SoCC 2017).
* `slaq-safe`: the fair share, except that a job past its knee yields its
  slots to the jobs before theirs, within a bound on what it gives up.

How SLAQ-safe allocates (`KneeAllocator`). A job is past its knee when its
fitted curve says it has made KNEE_PROGRESS (99%) of the loss reduction it
will have made by the end of its budget (JobState.fitted_progress) and it
has run at least KNEE_BUDGET (half) of its iterations: a flat curve earlier
in a run is as likely a plateau before a scheduled learning-rate drop (the
stress set's ImageNet and CIFAR jobs) as convergence, and the fit cannot see
a later drop, so a job whose fit leaves it even 1% to gain (a detection run
sitting just above its 90% mark before its last drop) keeps its share. Jobs past their knee
get only the slots the others cannot use (`water_fill` first over the jobs
before their knee, then the rest). Each job's ledger counts the slot-epochs
its fair share would have given it and those it gave up; once it has given
up YIELD_SHARE (20%) of its fair service it yields no more and keeps its
fair share. So a job misjudged as past its knee loses at most a fifth of
the service fair sharing would have given it (plus the one epoch that
crosses the bound). The run's guard bounds the whole run the same way: its
prediction of the gap against fair is the worst case, the share of all
jobs' fair-share slot-epochs given up (what the run would lose had every
yield been misjudged), and an epoch whose yields would take it to
RUN_YIELD_SHARE (1%, the promise) allocates as fair. A job whose knee or
budget cannot be told (no budget, a fresh regime, no fitted family) is
never asked to yield: with no such job the result is `fair` itself. The
delay metric (time to 90% of the reduction) does not count what a job past
its true knee does, and its quality (already at 90% or more) stays in the
running average while it runs longer, so yielding gains on both SLAQ
metrics when the knee is right.

numpy only (no TensorFlow).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from placer.sharing.slaq import DEFAULT_EPOCH_S, NORMALISERS, SlaqAllocator
from placer.sharing.slaq_state import JobState

KNEE_PROGRESS = 0.99  # past the knee: 99% of the fitted reduction made (our choice, see BENCHMARKS)
KNEE_BUDGET = 0.5  # ... and half the iterations run (our choice; step schedules drop at 30% to 75%)
YIELD_SHARE = 0.2  # most a job gives up: a fifth of its fair-share slot-epochs (our choice, see BENCHMARKS)
# The guard of the promise (at most 1% slower than fair). Its prediction of the run's gap against fair is
# the worst case: the share of all jobs' fair-share slot-epochs that they have given up, what the run would
# lose had every yield been misjudged. An epoch whose yields would take it to this share allocates as fair.
# At 8% (bench/slaq_promise.py, commit d62f73f) 6 of its 120 workloads came out over 1% slower (worst
# +2.84%, Keras jobs with a late learning-rate drop); at 1% the prediction is the promise itself.
RUN_YIELD_SHARE = 0.01
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

    >>> water_fill([1, float("inf"), float("inf")], 8).tolist()
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


class FairAllocator:
    """Work-conserving fair share (`fair`): even split, unusable slots to the others.

    Same interface as SlaqAllocator; see `water_fill`. A job never gets more
    than its max_slots, and no slot stays idle while a job below its cap runs.
    """

    def allocate(self, jobs: Sequence[JobState], num_slots: int) -> dict[Hashable, int]:
        """{job_id: slots} by `water_fill` over the jobs' max_slots, earliest jobs first."""
        alloc = water_fill([j.cap for j in jobs], num_slots)
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


class KneeAllocator:
    """SLAQ-safe: the work-conserving fair share, in which jobs past their knee yield to the others.

    Stateful: it keeps each job's ledger of fair-share and given-up slot-epochs
    (see the module docstring). Same interface as SlaqAllocator.

    Args:
      progress: fitted progress past which a job is past its knee (fraction of its reduction).
      budget: fraction of its iterations a job must have run before it may be past its knee.
      yield_share: fraction of its fair-share slot-epochs a job may give up in all.
      run_yield_share: fraction of all jobs' fair-share slot-epochs given up past which none yields.
    """

    def __init__(
        self,
        *,
        progress: float = KNEE_PROGRESS,
        budget: float = KNEE_BUDGET,
        yield_share: float = YIELD_SHARE,
        run_yield_share: float = RUN_YIELD_SHARE,
    ):
        self.progress, self.budget, self.yield_share = progress, budget, yield_share
        self.run_yield_share = run_yield_share
        self.fair_service: dict[Hashable, float] = {}  # slot-epochs of fair share so far
        self.given_up: dict[Hashable, float] = {}  # slot-epochs below the fair share so far

    def past_knee(self, job: JobState) -> bool:
        """Whether the job yields this epoch: past its knee and within its ledger's bound."""
        n = job.total_iterations
        if not n or job.iterations.size == 0 or job.iterations[-1] < self.budget * n:
            return False
        if self.given_up.get(job.job_id, 0.0) >= self.yield_share * self.fair_service.get(job.job_id, 0.0):
            return False
        return bool(job.fitted_progress() >= self.progress)  # NaN (cannot tell) is False

    def allocate(self, jobs: Sequence[JobState], num_slots: int) -> dict[Hashable, int]:
        """{job_id: slots}: `water_fill` over the jobs before their knee, what they cannot use to the others;
        `fair` itself when that would take the slot-epochs all jobs have given up to `run_yield_share` of their
        fair-share slot-epochs (the gap against fair the run would have, had every yield been misjudged)."""
        caps = np.asarray([j.cap for j in jobs], dtype=float)
        fair = water_fill(caps, num_slots)
        past = np.array([self.past_knee(j) for j in jobs], dtype=bool)
        alloc = water_fill(np.where(past, 0.0, caps), num_slots)
        alloc += water_fill(np.where(past, caps, 0.0), num_slots - int(alloc.sum()))
        given = sum(self.given_up.values()) + float(np.maximum(fair - alloc, 0).sum())
        if given >= self.run_yield_share * (sum(self.fair_service.values()) + float(fair.sum())):
            alloc = fair  # this epoch's yield would take the guard's prediction to the promise
        for j, f, a in zip(jobs, fair, alloc, strict=True):
            self.fair_service[j.job_id] = self.fair_service.get(j.job_id, 0.0) + float(f)
            self.given_up[j.job_id] = self.given_up.get(j.job_id, 0.0) + float(max(f - a, 0))
        return {j.job_id: int(a) for j, a in zip(jobs, alloc, strict=True)}


ALLOCATORS = ("slaq", "slaq-safe", "fair", "fair-static")
DEFAULT_ALLOCATOR = "slaq-safe"  # placer-search's --policy


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
        "slaq-safe": KneeAllocator,
        "fair": FairAllocator,
        "fair-static": StaticFairAllocator,
    }
    if name not in makers:
        raise ValueError(f"unknown allocator {name!r} (valid: {', '.join(ALLOCATORS)})")
    return makers[name]()
