"""One search of `placer-search` as it runs: its method, thread, slots, SLAQ state and curve.

A search runs the method its job names (placer.rl.methods; default placer-train's).
Holding k slots, it asks its method for k placements per iteration (for
seq2seq, its REINFORCE batch) and measures them in parallel, one per slot,
through the engine; each iteration reports its loss to its SLAQ JobState.
After every iteration the search writes its curve (STATE_FILE) and then its
method's checkpoint, so a run killed at any moment resumes (`resume=True`)
from the last checkpoint: the curve is cut back to the checkpoint's round
and no finished iteration is run again.
"""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np

from placer.core import atomic
from placer.core.errors import InputError, one_line
from placer.rl import methods, rl_math, search_loop, train_lib
from placer.rl.learner import Setup
from placer.rl.reinforce import seed_everything
from placer.sharing import report as search_report
from placer.sharing.report import JobCurve
from placer.sharing.slaq_state import JobState

STATE_FILE = "sharing_state.json"  # in the search's trainer folder


class SlotMeasurer:
    """The method's measurer: the job's placements go to the engine, on the job's slots."""

    def __init__(self, engine, job_id: str):
        self.engine = engine
        self.job_id = job_id
        self.slots: list[int] = []

    def measure(self, placements):
        return self.engine.measure(self.job_id, placements, self.slots)


def since(t0) -> float:
    """Seconds of the run: since `t0` (time.monotonic()) or, in lockstep, what the run's clock `t0()` says."""
    return t0() if callable(t0) else time.monotonic() - t0


class Search:
    """One running search: its method (a placer.rl.learner.Learner), thread, slots, SLAQ state and curve.

    In lockstep (`lockstep_s` > 0) the search runs one iteration per turn the
    run grants (`turns`), each counted as `lockstep_s` seconds, so what it does
    depends on its slots per turn only, never on thread timing.
    """

    def __init__(
        self,
        prep,
        engine,
        workdir: str,
        lock: threading.Condition,
        wake: threading.Event,
        loss: str = search_report.DEFAULT_LOSS,
        resume: bool = False,
    ):
        self.prep = prep
        self.resume = resume
        self.loss_kind = loss
        self.name = prep.spec.name
        self.engine = engine
        self.workdir = workdir
        self.lock = lock
        self.wake = wake
        self.state = JobState(self.name, max_slots=prep.spec.max_slots, total_iterations=prep.spec.steps)
        self.curve = JobCurve(self.name)
        self.slots: list[int] = []
        self.stop = False
        self.thread: threading.Thread | None = None
        self.measurer = SlotMeasurer(engine, self.name)
        self.method = prep.spec.config.placer.train.get("method", methods.DEFAULT)
        self.loop: search_loop.Loop | None = None  # drives the method: measures, keeps the best, checkpoints
        self.wall0 = time.time()  # what the loop's best-so-far curve counts wall seconds from
        self.lockstep_s = 0.0
        self.turns = 0  # iterations granted and not yet finished (lockstep)
        self.resume_at: dict | None = None  # lockstep resume: the search at the end of the last whole epoch
        # Lockstep resume: (iteration, loss, seconds, slots) of an iteration saved in the epoch the kill cut
        # short; the epoch is run again, and this search spends its turn in it reporting that iteration.
        self.deferred: list[tuple[int, float, float, int]] = []

    def record(self) -> dict:
        """What the run keeps of this search at the end of an epoch (run_state.json), to resume exactly there."""
        c = self.curve
        return {"iterations": len(c.losses), "start_s": c.start_s, "end_s": c.end_s, "status": c.status}

    @property
    def status(self) -> str:
        return self.curve.status

    def start(self, t0: float) -> None:
        spec = self.prep.spec
        self.curve.status = "running"
        self.curve.start_s = since(t0)
        if self.prep.error:
            self._finish(t0, "failed", self.prep.error)
            return
        try:
            self.engine.add_job(self.name, self.prep.graph, self.prep.cluster, self.prep.model)
            # The policy's layers without a seed of their own draw from the global generators: seeded
            # here, in the run's thread, one search at a time, so its weights depend on its seed alone.
            seed_everything(spec.seed)
            counting = search_loop.CountingMeasurer(self.measurer)
            setup = Setup(
                self.prep.problem, self.prep.groups, self.prep.cluster, spec.config.placer, counting,
                self.workdir, seed=spec.seed, budget=spec.steps * spec.max_slots, source=spec.name,
            )  # fmt: skip
            meta = {"method": "rl", "learner": self.method, "cluster": self.prep.cluster.name}
            self.loop = search_loop.Loop(
                methods.build(self.method, setup), self.prep.problem, counting, self.workdir, 1,
                {**meta, "measure": self.prep.measure},
            )  # fmt: skip
        except Exception as e:  # noqa: BLE001 (a search that raises fails alone)
            self._finish(t0, "failed", one_line(e))
            return
        first = self._restore() if self.resume else 0
        at = self.resume_at
        if at is not None and at["status"] != "not started":
            self.curve.start_s = float(at["start_s"])
            if at["status"] == "done":  # finished in an earlier epoch: at its own end time
                self._finish(t0, "done")
                self.curve.end_s = float(at["end_s"])
                return
        if not self.deferred and (first >= spec.steps or (first and self.loop.learner.finished())):
            self._finish(t0, "done")
            return
        self.thread = threading.Thread(target=self._loop, args=(t0, first), daemon=True, name=f"search-{self.name}")
        self.thread.start()

    def _restore(self) -> int:
        """Continues from the method's latest checkpoint and the curve up to its round; 0 if none."""
        path = os.path.join(self.workdir, STATE_FILE)
        if not train_lib.has_saved_state(self.workdir) or not os.path.exists(path):
            return 0
        step = self.loop.restore()  # the method's state and the loop's (for seq2seq, its history cut back too)
        try:
            with open(path) as f:
                saved = json.load(f)
            c = self.curve
            c.start_s = float(saved["start_s"])
            for key in ("times", "losses", "best", "slots", "seconds"):
                setattr(c, key, list(saved[key][:step]))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(f"{path}: cannot resume from it ({one_line(e)})") from None
        if len(c.losses) != step:
            raise InputError(f"{path}: {len(c.losses)} iterations recorded, the checkpoint has {step}")
        # In lockstep the run's last whole epoch may end an iteration earlier than the search's checkpoint.
        kept = step if self.resume_at is None else min(step, int(self.resume_at["iterations"]))
        for it, (loss, secs, slots) in enumerate(zip(c.losses, c.seconds, c.slots, strict=True)):
            if it < kept:
                self.state.report(it, loss, None if it == 0 else secs, slots)
            else:
                self.deferred.append((it, loss, secs, slots))
        return step

    def _save_curve(self) -> None:
        c = self.curve
        data = {"start_s": c.start_s, "times": c.times, "losses": c.losses, "best": c.best}
        data.update(slots=c.slots, seconds=c.seconds)
        atomic.write_text(os.path.join(self.workdir, STATE_FILE), json.dumps(data))

    def _wait_slots(self) -> list[int] | None:
        with self.lock:
            while (not self.slots or (self.lockstep_s > 0 and self.turns <= 0)) and not self.stop:
                self.lock.wait(0.5)
            return None if self.stop else list(self.slots)

    def _iteration(self, slots: list[int]) -> tuple[float, float]:
        """One round of the loop on `slots`; returns (loss for the allocator, best step time s so far)."""
        tc = self.prep.spec.config.placer.train
        tc.samples_per_step = len(slots)  # the seq2seq policy's batch
        self.measurer.slots = slots
        stats, _, res = self.loop.round(len(slots), self.wall0)
        times = np.array([m.step_time for m in res], dtype=np.float64)
        failed = np.array([not m.ok for m in res])
        mean_loss = float(-np.mean(rl_math.rewards(times, failed, tc.failing_step_time)))
        baseline = stats.get("baseline")  # REINFORCE's moving average; the other methods have none
        baseline = None if baseline is None else float(baseline)
        best = float(self.loop.best_t)
        return search_report.search_loss(self.loss_kind, mean_loss, best, baseline), best

    def _end_turn(self, t0: float, last: bool) -> None:
        """Lockstep: this search's turn in the epoch is over (and the search too when `last`)."""
        if last:  # done before its turn ends: the next epoch knows
            self._finish(t0, "done")
        with self.lock:
            self.turns -= 1
            self.lock.notify_all()

    def _replay_deferred(self, t0: float) -> bool:
        """Spends the turns of the epochs run again on the iterations saved in them; True when the search ended."""
        for it, loss, secs, slots in self.deferred:
            if self._wait_slots() is None:
                return True
            with self.lock:
                self.state.report(it, loss, None if it == 0 else secs, slots)
            last = it + 1 == self.prep.spec.steps or self.loop.learner.finished()
            self._end_turn(t0, last)
            if last:
                return True
        return False

    def _loop(self, t0: float, first: int) -> None:
        try:
            if self._replay_deferred(t0):
                return
            for it in range(first, self.prep.spec.steps):
                slots = self._wait_slots()
                if slots is None:
                    break
                start = time.monotonic()
                loss, best = self._iteration(slots)
                secs = self.lockstep_s or time.monotonic() - start
                with self.lock:
                    # Iteration 0 carries the TF tracing time: no runtime observation.
                    self.state.report(it, loss, None if it == 0 else secs, len(slots))
                    c = self.curve
                    c.times.append(since(t0))
                    c.losses.append(loss)
                    c.best.append(best)
                    c.slots.append(len(slots))
                    c.seconds.append(secs)
                # Curve first, then checkpoint: a kill in between only cuts the curve back on resume.
                self._save_curve()
                self.loop.save(self.wall0)  # the loop's state, the method's checkpoint, best_placement.json
                last = it + 1 == self.prep.spec.steps or self.loop.learner.finished()
                if self.lockstep_s > 0:
                    self._end_turn(t0, last)
                if last:
                    break
            if self.stop and len(self.curve.losses) < self.prep.spec.steps:
                return
            if self.curve.status == "running":
                self._finish(t0, "done")
        except Exception as e:  # noqa: BLE001 (a search that raises fails alone)
            self._finish(t0, "failed", one_line(e))

    def _finish(self, t0: float, status: str, error: str = "") -> None:
        with self.lock:
            self.curve.status = status
            self.curve.error = error
            self.curve.end_s = since(t0)
            self.slots = []
        self.engine.remove_job(self.name)
        self.wake.set()


RUN_FILE = "run_state.json"  # the run's clock, epochs and allocations so far, rewritten every epoch


def save_run(workdir: str, now: float, epochs: list, allocations: list, jobs: dict | None = None) -> None:
    """Writes the run's clock (seconds), epoch times and allocations (time, job, slots) to RUN_FILE.

    In lockstep it is written at the end of each whole epoch, with `jobs`: each search's `Search.record()`
    then, so that a resumed run starts from exactly that epoch's end.
    """
    os.makedirs(workdir, exist_ok=True)
    data = {"elapsed_s": now, "epochs": epochs, "allocations": allocations, "jobs": jobs}
    atomic.write_text(os.path.join(workdir, RUN_FILE), json.dumps(data))


def load_run(workdir: str) -> tuple[float, list, list, dict | None]:
    """(seconds the killed run had run, its epoch times, its allocations, its searches' records or None);
    zeros if it wrote none."""
    path = os.path.join(workdir, RUN_FILE)
    if not os.path.exists(path):
        return 0.0, [], [], None
    try:
        with open(path) as f:
            data = json.load(f)
        jobs = data.get("jobs")
        allocations = [tuple(a) for a in data["allocations"]]
        return float(data["elapsed_s"]), list(data["epochs"]), allocations, None if jobs is None else dict(jobs)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{path}: cannot resume from it ({one_line(e)})") from None
