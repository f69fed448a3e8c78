"""Replays of workloads under each allocator, and allocation latency, for bench/slaq.py.

Both of SLAQ's metrics (Zhang et al., SoCC 2017) against `fair`, the
work-conserving fair share, on the same workload: the mean time to 90% of
each job's loss reduction, and the average normalised quality of the
running jobs. Two allocators that read the recorded future show what
perfect prediction would give: `slaq-oracle` (SLAQ's rule on recorded
gains) and `knee-oracle` (SLAQ-safe's rule told each job's true 90% point).
numpy only.
"""

from __future__ import annotations

import copy
import time

import numpy as np

from bench.slaq_synthetic import synthetic_workload
from bench.slaq_traces import TraceJob, horizon, simulate_sharing
from placer.sharing.allocators import FairAllocator, KneeAllocator, make_allocator
from placer.sharing.slaq import DEFAULT_EPOCH_S, SlaqAllocator, greedy_slots
from placer.sharing.slaq_state import JobState


class OracleAllocator:
    """SLAQ's rule (total objective) with foresight: each job's gain on s slots is read from its
    recorded future losses and iteration times instead of the fitted curve and runtime model,
    normalised the same way, and handed out by SLAQ's own greedy (slaq.greedy_slots).

    Args:
      jobs: the traces of the workload.
      epoch_s: seconds per epoch.
    """

    def __init__(self, jobs: list[TraceJob], epoch_s: float):
        self.traces = {j.job_id: j for j in jobs}
        self.epoch_s = epoch_s

    def allocate(self, states: list[JobState], num_slots: int) -> dict:
        """{job_id: slots} by greedy_slots over the recorded marginal gains."""
        width = max(self.traces[st.job_id].max_slots for st in states) + 1
        table = np.full((len(states), width + 1), -np.inf)  # key of slot s in column s
        for i, st in enumerate(states):
            tr = self.traces[st.job_id]
            k, last = int(st.iterations[-1]), len(tr.losses) - 1
            iters = self.epoch_s / tr.seconds[min(k + 1, last), :]  # in one epoch on 1..M slots
            future = np.interp(np.minimum(k + iters, last), np.arange(last + 1), tr.losses)
            gain = (tr.losses[k] - np.r_[tr.losses[k], future]) / (st.max_change or 1.0)
            table[i, 1 : tr.max_slots + 1] = np.minimum.accumulate(np.diff(gain))
            table[i, int(min(st.cap, tr.max_slots)) + 1 :] = -np.inf

        def keys_of(rows, slots):
            return table[rows][:, np.clip(slots.astype(int), 0, width)]

        counts = greedy_slots(keys_of, np.array([st.cap for st in states], dtype=float), num_slots)
        return {st.job_id: int(c) for st, c in zip(states, counts, strict=True)}


class KneeOracle(KneeAllocator):
    """SLAQ-safe's rule and ledger, told each job's true knee: the first iteration at which its
    recorded curve reached 90% of its reduction (no budget guard needed)."""

    def __init__(self, jobs: list[TraceJob]):
        super().__init__()
        self.knees = {}
        for j in jobs:
            y = j.quality_losses
            self.knees[j.job_id] = int(np.argmax(y[0] - y >= 0.9 * (y[0] - y[-1])))

    def past_knee(self, job: JobState) -> bool:
        owed = self.given_up.get(job.job_id, 0.0) >= self.yield_share * self.fair_service.get(job.job_id, 0.0)
        return not owed and job.iterations[-1] >= self.knees[job.job_id]


def make(name: str, jobs: list[TraceJob]):
    """An allocator by name: a registry one, or one of this module's oracles."""
    if name == "slaq-oracle":
        return OracleAllocator(jobs, DEFAULT_EPOCH_S)
    if name == "knee-oracle":
        return KneeOracle(jobs)
    return make_allocator(name)


def replay_all(workloads: list[list[TraceJob]], num_slots: int, names, fit_cache: dict) -> dict[str, dict]:
    """{allocator: {"t90": [W] mean time to 90% (s), "quality": [W] average normalised quality}}."""
    out = {n: {"t90": [], "quality": []} for n in ("fair", *names)}
    for jobs in workloads:
        for name, got in out.items():
            r = simulate_sharing(
                jobs, make(name, jobs), num_slots, epoch_s=DEFAULT_EPOCH_S, horizon_s=horizon(jobs), fit_cache=fit_cache
            )
            got["t90"].append(r.mean_time_to(0.9))
            got["quality"].append(r.average_quality())
    return out


def against_fair(runs: dict[str, dict]) -> dict[str, dict]:
    """Per allocator, over the workloads: medians of both metrics, the median and worst signed change
    against fair on the same workload (time: positive is slower; quality: negative is lower)."""
    fair_t, fair_q = np.array(runs["fair"]["t90"]), np.array(runs["fair"]["quality"])
    out = {}
    for name, got in runs.items():
        dt, dq = np.array(got["t90"]) / fair_t - 1.0, np.array(got["quality"]) / fair_q - 1.0
        out[name] = {
            "t90": float(np.median(got["t90"])),
            "quality": float(np.median(got["quality"])),
            "change": float(np.median(dt)),
            "worst": float(dt.max()),
            "q_change": float(np.median(dq)),
            "q_worst": float(dq.min()),
            "t90_changes": dt.tolist(),
            "q_changes": dq.tolist(),
        }
    return out


def sharing(workloads: list[list[TraceJob]], num_slots: int, names: tuple[str, ...], fit_cache=None) -> dict:
    """`against_fair` of `replay_all` (bench/slaq_loss.py reads "change" and "worst")."""
    return against_fair(replay_all(workloads, num_slots, names, {} if fit_cache is None else fit_cache))


def _jobs_pool(count: int, seed: int = 0) -> list[JobState]:
    """`count` fitted jobs: 100 distinct histories, copied (fits are cached per job)."""
    rng = np.random.default_rng(seed)
    base = []
    for trace in synthetic_workload(100, seed=seed, noise=0.005, iterations=(20, 120)):
        j = JobState(trace.job_id, max_slots=None)
        cut = int(rng.integers(10, trace.iterations))
        j.report(0, trace.losses[0])
        for k in range(1, cut + 1):
            s = int(rng.integers(1, 9))
            j.report(k, trace.losses[k], float(trace.seconds[k, 0]) / s * (1.0 + 0.1 * s), s)
        j.curve()
        j.runtime()
        base.append(j)
    jobs = []
    for i in range(count):
        j = copy.deepcopy(base[i % len(base)])
        j.job_id = i
        jobs.append(j)
    return jobs


def latency(job_counts: list[int], slot_counts: list[int], repeats: int) -> dict[tuple[str, int, int], float]:
    """Median seconds of allocate() per (allocator, jobs, slots); curve fits are cached, as after reports."""
    pool = _jobs_pool(max(job_counts))
    out = {}
    for n in job_counts:
        jobs = pool[:n]
        for slots in slot_counts:
            for name, allocator in (
                ("total", SlaqAllocator("total")),
                ("min", SlaqAllocator("min")),
                ("fair", FairAllocator()),
            ):
                times = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    alloc = allocator.allocate(jobs, slots)
                    times.append(time.perf_counter() - t)
                    assert sum(alloc.values()) <= slots
                out[(name, n, slots)] = float(np.median(times))
    return out
