"""SLAQ traces: recorded loss curves, their CSV format, and slot allocators simulated on them.

Jobs are given as recorded curves (loss per iteration, seconds per iteration
for each slot count, arrival time), so an allocator of placer.sharing can be
evaluated on curves from any training system without running it. The CSV
format is the "SLAQ trace" section of docs/formats.md; the metrics (time to
X% of the loss reduction, normalised quality) are placer.sharing.report's,
the same as a live placer-search run's. numpy only (no TensorFlow).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Sequence

import numpy as np

from placer.core import atomic, checks
from placer.core.errors import InputError
from placer.sharing.report import TARGETS, normalised_quality, time_to_fraction
from placer.sharing.slaq_state import JobState


@dataclasses.dataclass(frozen=True)
class TraceJob:
    """One recorded job.

    Attributes:
      job_id: name of the job.
      arrival_s: seconds from the start of the trace at which the job arrives.
      losses: [N + 1] loss after iterations 0..N (index 0: the initial loss).
      seconds: [N + 1, M] seconds iteration k takes on s = 1..M slots (row 0 unused);
        with more than M slots the job runs at its M-slot speed.
      eval_losses: [N + 1] the curve simulate_sharing measures the job's progress on (time to
        X%, quality), when it differs from the loss the allocator sees (e.g. the best-so-far
        step time of a search that reports its mean); None: `losses`. Not saved in traces.
    """

    job_id: str
    arrival_s: float
    losses: np.ndarray
    seconds: np.ndarray
    eval_losses: np.ndarray | None = None

    @property
    def quality_losses(self) -> np.ndarray:
        """[N + 1] the curve progress is measured on: eval_losses, else losses."""
        return self.losses if self.eval_losses is None else self.eval_losses

    @property
    def max_slots(self) -> int:
        return int(self.seconds.shape[1])

    @property
    def iterations(self) -> int:
        return int(self.losses.size - 1)


def save_trace(path: str, jobs: Sequence[TraceJob]) -> None:
    """Writes jobs as a SLAQ trace CSV (atomically); M is the largest max_slots."""
    width = max((j.max_slots for j in jobs), default=1)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["job", "arrival_s", "iteration", "loss"] + [f"seconds_{s}" for s in range(1, width + 1)])
    for j in jobs:
        for k, loss in enumerate(j.losses):
            secs = ["" if k == 0 else repr(float(v)) for v in j.seconds[k]]
            w.writerow([j.job_id, repr(float(j.arrival_s)), k, repr(float(loss))] + secs + [""] * (width - j.max_slots))
    atomic.write_text(path, out.getvalue())


def _number(path: str, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{path}: row {line}, column {column}: not a number: {text!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{path}: row {line}, column {column}: not finite: {text!r}")
    return value


def load_trace(path: str) -> list[TraceJob]:
    """Reads a SLAQ trace CSV (format in docs/formats.md), jobs in order of arrival.

    The file is read within the caps of placer.core.checks: its bytes
    (--max_input_mib), rows (--max_rows) and jobs (--max_jobs); a device
    such as /dev/zero is refused before any read.

    Raises:
      InputError: naming the file, row and column of the first bad value, or the cap it exceeds.
    """
    try:
        text = checks.read_text(path, "trace")
    except InputError as e:
        raise InputError(f"cannot read trace: {e}") from None
    if text and not text.endswith("\n"):
        last = text.count("\n") + 1
        raise InputError(f"{path}: row {last}: no line end after the last row; the trace looks cut short")
    checks.within_cap(text.count("\n"), "rows", path)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise InputError(f"{path}: empty trace (no header)")
    header = [h.strip() for h in rows[0]]
    if header[:4] != ["job", "arrival_s", "iteration", "loss"]:
        raise InputError(f"{path}: header must start with job,arrival_s,iteration,loss; got {','.join(header[:4])}")
    width = len(header) - 4
    if width < 1 or header[4:] != [f"seconds_{s}" for s in range(1, width + 1)]:
        raise InputError(f"{path}: header: after loss come seconds_1, seconds_2, ... (at least seconds_1)")
    per_job: dict[str, list] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(f"{path}: row {line}: {len(row)} columns, header has {len(header)}")
        job = row[0].strip()
        if not job:
            raise InputError(f"{path}: row {line}, column job: empty")
        arrival = _number(path, line, "arrival_s", row[1])
        if arrival < 0:
            raise InputError(f"{path}: row {line}, column arrival_s: negative")
        it = _number(path, line, "iteration", row[2])
        if it != int(it) or it < 0:
            raise InputError(f"{path}: row {line}, column iteration: not a non-negative integer: {row[2]!r}")
        loss = _number(path, line, "loss", row[3])
        secs = []
        for s, text in enumerate(row[4:], start=1):
            if not text.strip():
                secs.append(math.nan)
                continue
            v = _number(path, line, f"seconds_{s}", text)
            if v <= 0:
                raise InputError(f"{path}: row {line}, column seconds_{s}: must be > 0")
            secs.append(v)
        per_job.setdefault(job, []).append((line, arrival, int(it), loss, secs))
    if not per_job:
        raise InputError(f"{path}: no jobs")
    checks.within_cap(len(per_job), "jobs", path)
    jobs = [_assemble(path, job, recs) for job, recs in per_job.items()]
    return sorted(jobs, key=lambda j: j.arrival_s)


def _assemble(path: str, job: str, recs: list) -> TraceJob:
    recs = sorted(recs, key=lambda r: r[2])
    line0, arrival = recs[0][0], recs[0][1]
    for line, arr, _, _, _ in recs:
        if arr != arrival:
            raise InputError(f"{path}: row {line}, column arrival_s: job {job} arrives at {arrival} on row {line0}")
    for k, (line, _, it, _, _) in enumerate(recs):
        if it != k:
            raise InputError(f"{path}: row {line}, column iteration: job {job} expects iteration {k}, got {it}")
    if len(recs) < 2:
        raise InputError(f"{path}: row {line0}: job {job} has no iteration after 0")
    seconds = np.array([r[4] for r in recs], dtype=float)
    # The job's slot counts: columns filled on every row after iteration 0, a prefix seconds_1..seconds_M.
    filled = ~np.isnan(seconds[1:])
    width = int(np.argmin(np.all(filled, axis=0))) if not np.all(filled) else seconds.shape[1]
    if width == 0:
        bad = recs[1 + int(np.argmin(filled[:, 0]))][0]
        raise InputError(f"{path}: row {bad}, column seconds_1: empty for job {job}")
    return TraceJob(job, arrival, np.array([r[3] for r in recs], dtype=float), seconds[:, :width])


@dataclasses.dataclass
class SharingResult:
    """Outcome of simulate_sharing.

    Attributes:
      job_ids: [J] in trace order.
      arrivals: [J] arrival seconds.
      curves: job_id -> ([n] seconds since the trace start, [n] loss), from the arrival on;
        the loss of the curve progress is measured on (TraceJob.quality_losses).
      time_to: fraction (TARGETS) -> [J] seconds from arrival until the job's loss
        reduction reached that fraction of its total (L0 - L_N); inf if not within the
        horizon, nan if the job's curve has no reduction (L_N >= L0).
      quality_times: [E] epoch start times, seconds.
      mean_quality: [E] mean normalised quality (`normalised_quality`, in [0, 1]) of the jobs
        running then (arrived, not finished; SLAQ's measure); nan when none is running.
      horizon_s: simulated seconds.
      allocations: (epoch start seconds, job_id, slots) per running job and epoch.
    """

    job_ids: list[str]
    arrivals: np.ndarray
    curves: dict[str, tuple[np.ndarray, np.ndarray]]
    time_to: dict[float, np.ndarray]
    quality_times: np.ndarray
    mean_quality: np.ndarray
    horizon_s: float
    allocations: list = dataclasses.field(default_factory=list)

    def mean_time_to(self, fraction: float) -> float:
        """Mean seconds to reach `fraction` of the loss reduction; jobs that did not are counted
        at the horizon (censored: the time they had), jobs without a reduction left out (nan if all)."""
        t = self.time_to[fraction]
        has = ~np.isnan(t)
        if not has.any():
            return math.nan
        return float(np.mean(np.where(np.isfinite(t), t, self.horizon_s - self.arrivals)[has]))

    def average_quality(self) -> float:
        """Mean over epochs (with running jobs) of mean_quality."""
        q = self.mean_quality[np.isfinite(self.mean_quality)]
        return float(q.mean()) if q.size else math.nan


def horizon(jobs: Sequence[TraceJob]) -> float:
    """Seconds enough for every job to finish alone after the last arrival, on one slot."""
    return jobs[-1].arrival_s + max(float(j.seconds[1:, 0].sum()) for j in jobs)


def simulate_sharing(
    jobs: Sequence[TraceJob],
    allocator,
    num_slots: int,
    *,
    epoch_s: float,
    horizon_s: float,
    fit_cache: dict | None = None,
) -> SharingResult:
    """Replays a trace under an allocator that reassigns slots every epoch.

    At each epoch start the running jobs (arrived, not finished), earliest first,
    are passed as JobStates to `allocator.allocate`; each then runs on its slots
    for the epoch, iteration k taking seconds[k, min(s, M) - 1] (an iteration
    interrupted by the epoch's end keeps its fraction done), and reports each
    finished iteration's `losses` value. Jobs arriving mid-epoch wait for the next
    epoch. Each job's measured profile (JobState.set_profile), and with it the
    most slots worth giving it, is the recorded scaling of the iteration it runs
    next, so a job whose batch grows can take more slots from then on. Progress
    (time to X%, quality) is measured on each job's quality_losses.

    Args:
      jobs: the trace.
      allocator: anything with allocate(jobs, num_slots), e.g. from allocators.make_allocator.
      num_slots: slots in the pool.
      epoch_s: seconds between reallocations.
      horizon_s: seconds simulated (the replay ends earlier once every job has finished).
      fit_cache: a dict kept across replays of the same jobs (e.g. every allocator, slot
        count and arrival order of a benchmark): a job's curve fits are then made once
        per recorded curve (JobState's `fits`), not once per replay.

    Returns:
      The SharingResult.
    """
    n = len(jobs)
    states: list[JobState | None] = [None] * n
    next_iter = np.ones(n, dtype=np.int64)
    done_frac = np.zeros(n)  # fraction of the current iteration already done
    finished = np.zeros(n, dtype=bool)
    times = [[j.arrival_s] for j in jobs]
    losses = [[float(j.quality_losses[0])] for j in jobs]  # the curves progress is measured on
    total = np.array([j.quality_losses[0] - j.quality_losses[-1] for j in jobs])
    low = [float(j.quality_losses[0]) for j in jobs]  # each job's lowest loss so far
    quality_t, quality, allocations = [], [], []
    t = 0.0
    while t < horizon_s and not finished.all():
        running = [i for i in range(n) if jobs[i].arrival_s <= t and not finished[i]]
        for i in running:
            if states[i] is None:
                fits = None if fit_cache is None else fit_cache.setdefault(jobs[i].losses.tobytes(), {})
                states[i] = JobState(
                    jobs[i].job_id, max_slots=jobs[i].max_slots, fits=fits, total_iterations=jobs[i].iterations
                )
                states[i].report(0, jobs[i].losses[0])
            # The scaling of the iteration it runs next, as a run measures it at its current batch.
            states[i].set_profile(jobs[i].seconds[next_iter[i]])
        q = [normalised_quality(losses[i][0], low[i], total[i]) for i in running]
        quality_t.append(t)
        quality.append(float(np.mean(q)) if q else math.nan)
        alloc = allocator.allocate([states[i] for i in running], num_slots) if running else {}
        if sum(alloc.values()) > num_slots:
            raise ValueError(f"allocator gave {sum(alloc.values())} slots of {num_slots}")
        allocations.extend(
            (t, jobs[i].job_id, min(int(alloc.get(jobs[i].job_id, 0)), jobs[i].max_slots)) for i in running
        )
        end = min(t + epoch_s, horizon_s)
        for i in running:
            s = min(int(alloc.get(jobs[i].job_id, 0)), jobs[i].max_slots)
            if s > 0:
                seen = len(losses[i])
                _run(jobs[i], states[i], s, t, end, i, next_iter, done_frac, finished, times[i], losses[i])
                low[i] = min([low[i], *losses[i][seen:]])
        t = end
    time_to = {
        frac: np.array(
            [
                time_to_fraction(times[i], losses[i], j.arrival_s, frac, total[i]) if total[i] > 0 else math.nan
                for i, j in enumerate(jobs)
            ]
        )
        for frac in TARGETS
    }
    curves = {j.job_id: (np.asarray(times[i]), np.asarray(losses[i])) for i, j in enumerate(jobs)}
    return SharingResult(
        [j.job_id for j in jobs],
        np.array([j.arrival_s for j in jobs]),
        curves,
        time_to,
        np.asarray(quality_t),
        np.asarray(quality),
        float(horizon_s),
        allocations,
    )


def _run(
    job: TraceJob,
    state: JobState,
    s: int,
    start: float,
    end: float,
    i: int,
    next_iter,
    done_frac,
    finished,
    times: list,
    losses: list,
) -> None:
    """Runs one job on s slots from start to end (seconds), reporting finished iterations."""
    now = start
    while now < end and not finished[i]:
        k = int(next_iter[i])
        secs = float(job.seconds[k, s - 1])
        need = (1.0 - done_frac[i]) * secs
        if now + need > end:
            done_frac[i] += (end - now) / secs
            return
        now += need
        done_frac[i] = 0.0
        state.report(k, float(job.losses[k]), secs, s)
        times.append(now)
        losses.append(float(job.quality_losses[k]))
        next_iter[i] = k + 1
        if k + 1 > job.iterations:
            finished[i] = True
