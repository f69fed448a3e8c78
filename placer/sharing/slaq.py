"""SLAQ: quality-driven sharing of measurement slots across concurrent jobs.

Zhang, Stafman, Or and Freedman, "SLAQ: Quality-Driven Scheduling for
Distributed Machine Learning" (SoCC 2017). Every epoch the pool of slots (here:
measurement devices shared by placement searches; any iterative job works) is
reassigned: each active job gets one slot, then each further slot goes to the
job whose predicted normalised loss reduction over the next epoch grows most
from it. A placement search reports the policy's mean sqrt step time per
iteration as its loss.

How one epoch is allocated (`SlaqAllocator.allocate`):

* For job j with s slots, an epoch of T seconds runs n_j(s) = T / t_j(s)
  iterations (t_j from its measured profile where it has one, else its
  RuntimeModel a / s + b; fractional iterations allowed), and
  its gain is g_j(s) = (P_j(k) - P_j(k + n_j(s))) / m_j: the predicted loss
  reduction over the epoch (P_j from its CurveFit, k its last iteration) over
  its largest loss change so far m_j.
* Greedy allocation hands each further slot to the job with the largest
  marginal gain g_j(s + 1) - g_j(s). Gains shrink as slots grow (diminishing
  returns; the marginals are made non-increasing by a running minimum), so the
  greedy result, which a heap with lazy updates would compute slot by slot,
  equals taking the (num_slots - num_jobs) largest marginals over all jobs.
  This is done vectorised: marginals for s up to a per-job candidate count C
  (about twice the mean share) as one [jobs, C] numpy array, a top-k by
  np.argpartition, and only the jobs whose C candidates were all taken get
  more candidates (C grows fourfold) and are re-selected (latency measured
  by bench/slaq.py).
* Normaliser: SLAQ divides by m_j, the largest loss change so far
  (`normalise="max_change"`, the default). `normalise="fitted_total"` divides
  instead by the job's fitted total reduction L0_j - A_j (its first loss minus
  the fitted asymptote; m_j while the curve is unknown), so a gain is the
  fraction of the job's whole reduction won in the epoch, the quality measure
  itself. Curves with a large first step (1/(ak + b)) then no longer look flat
  next to geometric ones.
* Max-min objective: the key of slot s + 1 is instead the job's predicted
  normalised loss after the epoch with s slots, q_j(s) = (P_j - A_j) / (L0_j - A_j)
  (A_j the fitted asymptote, L0_j its first loss), so the next slot goes to the
  worst job; a slot that would not lower the job's loss is ranked last.

Jobs with too little history: with fewer than two losses a job's loss is
assumed to fall by its whole largest change (normalised 1) per iteration, the
most any job can, so new jobs are served first, as in SLAQ; with 2 to 4 losses
the fit falls back to the recent mean change (slaq_curves.fit_curve). Their
normalised loss for the max-min objective is 1 (the worst).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from placer.sharing import slaq_curves
from placer.sharing.runtime_model import iteration_seconds, stack_profiles
from placer.sharing.slaq_state import JobState

DEFAULT_EPOCH_S = 5.0  # seconds between reallocations, everywhere (SLAQ reallocates every few seconds)


# The columns of JobState.model_row, in order.
_COLUMNS = "code p0 p1 p2 p3 k0 loc scale last_iter last_loss mean_change max_change rt_a rt_b cap first_loss asymptote"


def _unpack(rows: np.ndarray) -> dict[str, np.ndarray]:
    return {n: rows[:, i : i + 1] for i, n in enumerate(_COLUMNS.split())}


def _predicted_loss(m: dict[str, np.ndarray], ks: np.ndarray) -> np.ndarray:
    """[J, C] predicted loss at iterations ks (>= last_iter), clipped to the last loss."""
    params = np.stack([m["p0"], m["p1"], m["p2"], m["p3"]], axis=-1)  # [J, 1, 4]
    curve = m["loc"] + m["scale"] * slaq_curves._family_z(m["code"], params, ks - m["k0"])
    linear = m["last_loss"] - m["mean_change"] * (ks - m["last_iter"])
    y = np.where(m["code"] == 0, linear, curve)
    y = np.where(np.isfinite(y), y, m["last_loss"])
    return np.minimum(y, m["last_loss"])


NORMALISERS = ("max_change", "fitted_total")


def _fitted_span(m: dict[str, np.ndarray]) -> np.ndarray:
    """[J, 1] first loss minus the fitted asymptote, NaN where no curve is fitted or it is not positive."""
    span = m["first_loss"] - m["asymptote"]
    return np.where((m["code"] != 0) & np.isfinite(span) & (span > 0), span, np.nan)


def _normaliser(m: dict[str, np.ndarray], normalise: str) -> np.ndarray:
    """[J, 1] what each job's predicted loss reduction is divided by (see module docstring)."""
    if normalise == "max_change":
        return m["max_change"]
    span = _fitted_span(m)
    return np.where(np.isnan(span), m["max_change"], span)


def _slot_keys(
    m: dict[str, np.ndarray], slots: np.ndarray, epoch_s: float, objective: str, normalise: str = "max_change"
) -> np.ndarray:
    """[J, C] key of the slot after s - 1 slots, for s in `slots` ([J, C] or [C], >= 1)."""
    s = np.broadcast_to(slots, (m["code"].shape[0], np.shape(slots)[-1])).astype(float)
    s_all = np.concatenate([s[:, :1] - 1.0, s], axis=1)  # s - 1 for the first column
    iters = epoch_s / iteration_seconds(m, s_all)
    iters[:, 0] = np.where(s_all[:, 0] < 1, 0.0, iters[:, 0])
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = _predicted_loss(m, m["last_iter"] + iters)
        now = _predicted_loss(m, m["last_iter"])
        gain = (now - loss) / _normaliser(m, normalise)
        marginal = np.minimum.accumulate(np.diff(gain, axis=1), axis=1)  # non-increasing in s
        marginal = np.maximum(np.nan_to_num(marginal, nan=0.0), 0.0)
        if objective == "total":
            keys = marginal
        else:
            span = _fitted_span(m)
            q = np.where(np.isnan(span), 1.0, (loss[:, :-1] - m["asymptote"]) / span)
            keys = np.where(marginal > 0, np.clip(q, 0.0, 1.0), -1.0)
    keys = np.where(s > m["cap"], -np.inf, keys)
    return keys


def _model(jobs: Sequence[JobState]) -> dict[str, np.ndarray]:
    """The jobs' model rows as [J, 1] columns (and their measured profiles, if any)."""
    m = _unpack(np.array([j.model_row() for j in jobs], dtype=float))
    profiles = stack_profiles([j.profile for j in jobs])
    if profiles is not None:
        m["profile"] = profiles
    return m


class SlaqAllocator:
    """Reassigns slots every epoch to the jobs with the most predicted progress.

    Args:
      objective: "total" maximises the summed normalised loss reduction (SLAQ's
        default); "min" gives each next slot to the job with the worst predicted
        normalised loss (max-min).
      epoch_s: seconds until the next reallocation (SLAQ reallocates every few seconds).
      normalise: "max_change" (SLAQ's: the largest loss change so far) or
        "fitted_total" (the fitted total reduction); see the module docstring.
        Only the "total" objective uses it.
    """

    def __init__(self, objective: str = "total", epoch_s: float = DEFAULT_EPOCH_S, normalise: str = "max_change"):
        if objective not in ("total", "min"):
            raise ValueError(f"objective must be 'total' or 'min', got {objective!r}")
        if not epoch_s > 0:
            raise ValueError(f"epoch_s must be > 0, got {epoch_s}")
        if normalise not in NORMALISERS:
            raise ValueError(f"normalise must be one of {NORMALISERS}, got {normalise!r}")
        self.objective = objective
        self.epoch_s = float(epoch_s)
        self.normalise = normalise

    def allocate(self, jobs: Sequence[JobState], num_slots: int) -> dict[Hashable, int]:
        """Slots per job for the next epoch.

        Every job gets one slot when num_slots >= len(jobs) (with fewer slots,
        the jobs with the largest first-slot key get one each); the rest go by
        the objective, never beyond a job's max_slots. The total never exceeds
        num_slots; slots no job can use stay unassigned.

        Args:
          jobs: the active jobs, earliest first.
          num_slots: slots in the pool.

        Returns:
          {job_id: slots}.
        """
        if not jobs:
            return {}
        m = _model(jobs)

        def keys_of(rows: np.ndarray, slots: np.ndarray) -> np.ndarray:
            sub = {k: v[rows] for k, v in m.items()}
            return _slot_keys(sub, slots, self.epoch_s, self.objective, self.normalise)

        counts = greedy_slots(keys_of, m["cap"][:, 0], num_slots)
        return {j.job_id: int(c) for j, c in zip(jobs, counts, strict=True)}


def greedy_slots(keys_of: Callable[[np.ndarray, np.ndarray], np.ndarray], caps: np.ndarray, num_slots: int):
    """[J] slots per job by SLAQ's greedy rule over any keys (see the module docstring).

    Each job gets one slot (with fewer slots than jobs, the jobs with the
    largest first-slot keys get one each); every further slot goes to the
    largest key left, computed lazily in widening blocks.

    Args:
      keys_of: keys_of(rows, slots) -> [len(rows), len(slots)] key of each listed job's s-th
        slot, non-increasing in s, -inf beyond the job's cap (rows: job indices; slots: floats >= 1).
      caps: [J] most slots each job can use (math.inf: unlimited).
      num_slots: slots in the pool.
    """
    n = caps.size
    if num_slots < n:
        first = keys_of(np.arange(n), np.array([1.0]))[:, 0]
        out = np.zeros(n, dtype=np.int64)
        out[np.argsort(-first, kind="stable")[: max(num_slots, 0)]] = 1
        return out
    extra = num_slots - n
    cap = np.minimum(caps, extra + 1.0)  # a job never needs more than all extra slots
    if extra <= 0:
        return np.ones(n, dtype=np.int64)
    width = int(min(max(4, 2 * math.ceil(extra / n) + 2), extra))
    lengths = np.full(n, width)
    todo = np.arange(n)
    blocks: list[np.ndarray] = []  # [rows, width] keys of the jobs (re)computed in one round
    owners: list[np.ndarray] = []  # [rows] job of each block row
    while True:
        block = keys_of(todo, np.arange(2.0, width + 2.0))
        for b, rows in zip(blocks, owners, strict=True):  # retire the widened jobs' old keys
            old = np.isin(rows, todo)
            if np.any(old):
                b[old] = -np.inf
        blocks.append(block)
        owners.append(todo)
        lengths[todo] = width
        flat = np.concatenate([b.ravel() for b in blocks])
        owner = np.concatenate([np.repeat(rows, b.shape[1]) for b, rows in zip(blocks, owners, strict=True)])
        take = min(extra, int(np.sum(np.isfinite(flat))))
        if take == 0:
            return np.ones(n, dtype=np.int64)
        top = np.argpartition(-flat, take - 1)[:take] if take < flat.size else np.arange(flat.size)
        counts = np.bincount(owner[top], minlength=n)
        # Jobs whose every candidate was taken may deserve more: widen them.
        full = (counts >= lengths) & (lengths + 1 < cap)
        if not np.any(full):
            return 1 + counts
        todo = np.flatnonzero(full)
        width = int(min(4 * width, extra))
