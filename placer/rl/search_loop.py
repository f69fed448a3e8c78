"""The method-agnostic search loop: propose, measure, observe, until the budget is spent.

It owns what every learned method shares: the count of measured placements
(everything the measurer is given counts, a warm start's baselines
included), the stopping rules, the best placement, the best-so-far curve,
checkpoints and the progress line. Methods (placer.rl.methods) only propose
and learn. Its `repeat` (a checkpoint every so many rounds and at the end,
the stop on SIGINT/SIGTERM, the progress line) is pretraining's loop too.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import time

import numpy as np
import tqdm

from placer.core import atomic, fmt, stop
from placer.core.errors import InputError
from placer.core.heartbeat import Heartbeat

STATE = "search.json"  # the loop's own state beside the method's
CURVE = "best_curve.csv"  # placements measured, best step time (s), wall seconds


class CountingMeasurer:
    """Wraps a measurer, counting the placements it measures and the seconds it spends."""

    def __init__(self, inner):
        self.inner = inner
        self.count = 0
        self.seconds = 0.0

    def measure(self, placements):
        t = time.perf_counter()
        results = self.inner.measure(placements)
        self.seconds += time.perf_counter() - t
        self.count += len(placements)
        return results


@dataclasses.dataclass
class Limits:
    """When the loop stops; 0 = no limit of that kind (at least one must be set).

    Attributes:
      rounds: total propose/observe rounds, counting resumed ones.
      placements: total measured placements, counting resumed ones.
      seconds: wall seconds of this process's loop.
    """

    rounds: int = 0
    placements: int = 0
    seconds: float = 0.0

    def check(self) -> None:
        """Raises InputError for a negative limit, or when none is set."""
        given = (("steps", self.rounds), ("max_placements", self.placements), ("max_minutes", self.seconds / 60))
        for name, value in given:
            if value < 0:
                raise InputError(f"--{name} must be 0 (no limit) or positive, got {value:g}")
        if not (self.rounds or self.placements or self.seconds):
            raise InputError(
                "--steps must be positive, or --max_placements or --max_minutes given (a search needs a limit)"
            )


class Loop:
    """Drives one method on one problem.

    Args:
      learner: a placer.rl.learner.Learner.
      problem: the placer.rl.problem.Problem it places.
      measurer: the CountingMeasurer the learner was also given.
      workdir: where search.json, best_curve.csv and best_placement.json go.
      checkpoint_every: rounds between checkpoints.
      metadata: added to the best placement's metadata.
    """

    def __init__(self, learner, problem, measurer: CountingMeasurer, workdir: str, checkpoint_every: int, metadata):
        self.learner, self.problem, self.measurer = learner, problem, measurer
        self.workdir, self.every, self.metadata = workdir, max(1, int(checkpoint_every)), dict(metadata)
        self.rounds = 0
        self.best_t, self.best_devices = np.inf, None
        self.curve: list[tuple[int, float, float]] = []  # (placements, best s, wall s) whenever the best improved
        self.wall = self.build_seconds = 0.0
        self.measure_seconds0 = 0.0  # measurement seconds of earlier processes
        self.count_at_start, self.measured_at_start = 0, 0.0  # when this process's `run` began
        self.learner_seconds = 0.0  # this process's wall seconds in the method's propose and observe
        # (seconds, placements) of this process's first round: its tracing and compiling, paid once
        self.first_round: tuple[float, int] | None = None

    @property
    def placements(self) -> int:
        return self.measurer.count

    def restore(self) -> int:
        """Continues a saved search (the method's state and the loop's); returns its round."""
        self.rounds = self.learner.restore()
        path = os.path.join(self.workdir, STATE)
        if not os.path.exists(path):  # written before the method's checkpoint; absent only in older workdirs
            return self.rounds
        try:
            with open(path) as f:
                state = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: cannot resume, corrupt or missing search state ({e})") from None
        # Placements measured before the restore in this process (a warm start's baselines, measured again to
        # group the graph alike) count on top of the saved ones: a restart's measurements are not free.
        self.measurer.count += int(state["placements"])
        self.best_t = float(state["best_step_time"]) if state["best_step_time"] is not None else np.inf
        self.best_devices = None if state["best_devices"] is None else np.asarray(state["best_devices"])
        self.curve = [tuple(c) for c in state["curve"]]
        self.wall, self.build_seconds = float(state["wall_seconds"]), float(state["build_seconds"])
        self.measure_seconds0 = float(state["measure_seconds"])
        return self.rounds

    def _note(self, t: float, devices: np.ndarray, t0: float) -> None:
        if t < self.best_t:
            self.best_t, self.best_devices = float(t), np.asarray(devices).copy()
            self.curve.append((self.placements, self.best_t, self.wall + time.time() - t0))

    def run(self, limits: Limits, progress: bool = False) -> dict:
        """Proposes, measures and observes until a limit is reached; returns the last round's statistics."""
        t0 = time.time()
        self.count_at_start, self.measured_at_start = self.placements, self.measurer.seconds
        warm = self.learner.best()
        if warm is not None:
            self._note(warm[0], warm[1], t0)
        started = time.time()  # --max_minutes counts from here: a warm start's imitation is not cut short
        total = limits.placements or None
        bar = tqdm.tqdm(total=total, initial=self.placements, unit="pl", disable=not progress, mininterval=1.0)

        def one_round() -> dict:
            before = self.placements
            stats, _, _ = self.round(limits.placements - before if limits.placements else 1 << 30, t0)
            bar.update(self.placements - before)
            bar.set_postfix(best=fmt.seconds(self.best_t))
            return stats

        return repeat(
            one_round, done=lambda: self._done(limits, started), rounds=lambda: self.rounds, every=self.every,
            save=lambda: self.save(t0), bar=bar, line=lambda _: status_line(self.rounds, self.placements, self.best_t),
        )  # fmt: skip

    def round(self, limit: int, t0: float) -> tuple[dict, np.ndarray, list]:
        """One round: the method proposes at most `limit` placements, they are measured, the method observes
        them and the best is kept. `t0` is the wall time (time.time()) the best-so-far curve counts from.

        Returns:
          (the method's statistics, [k, G] the devices measured, their k Measurements).
        """
        tl = time.perf_counter()
        devices = np.asarray(self.learner.propose(limit))[:limit]
        tb = time.perf_counter()
        self.learner_seconds += tb - tl
        placements = [self.problem.placement(d) for d in devices]
        self.build_seconds += time.perf_counter() - tb
        before = self.placements
        results = self.measurer.measure(placements)
        tl = time.perf_counter()
        stats = self.learner.observe(devices, results)
        self.learner_seconds += time.perf_counter() - tl
        stats = {**stats, "failures": sorted({m.failure for m in results if not m.ok})}  # every method alike
        if self.first_round is None:
            self.first_round = (self.learner_seconds, self.placements - before)
        self.rounds += 1
        for d, m in zip(devices, results, strict=True):
            if m.ok and not m.flagged:
                self._note(m.step_time, d, t0)
        return stats, devices, results

    def _done(self, limits: Limits, t0: float) -> bool:
        return bool(
            (limits.rounds and self.rounds >= limits.rounds)
            or (limits.placements and self.placements >= limits.placements)
            or (limits.seconds and time.time() - t0 > limits.seconds)
            or self.learner.finished()
            or stop.requested()  # SIGINT/SIGTERM: the round in hand is finished and saved first
        )

    def save(self, t0: float) -> None:
        """The loop's state and curve, then the method's state, then the best placement (each atomically).

        The loop's state goes first: a kill before the method's checkpoint leaves it a checkpoint ahead,
        so a resumed search counts the placements measured in between (the budget is never undercounted).
        """
        wall = self.wall + time.time() - t0
        state = {
            "placements": self.placements,
            "rounds": self.rounds,
            "best_step_time": self.best_t if np.isfinite(self.best_t) else None,
            "best_devices": None if self.best_devices is None else self.best_devices.tolist(),
            "curve": self.curve,
            "wall_seconds": wall,
            "build_seconds": self.build_seconds,
            "measure_seconds": self.measure_seconds(),
        }
        atomic.write_text(os.path.join(self.workdir, STATE), json.dumps(state))
        atomic.write_text(os.path.join(self.workdir, CURVE), curve_text(self.curve))
        self.learner.save()
        best = self.best_placement()
        if best is not None:
            best.save(os.path.join(self.workdir, "best_placement.json"))

    def measure_seconds(self) -> float:
        return self.measure_seconds0 + self.measurer.seconds

    def best_placement(self):
        """The best placement measured, its metadata saying how many placements the search measured."""
        if self.best_devices is None:
            return None
        return self.problem.placement(
            self.best_devices, step_time=self.best_t, samples=self.placements, step=self.rounds, **self.metadata
        )


def repeat(step, *, done, rounds, every: int, save, bar, line) -> dict:
    """The loop of every search and of pretraining: `step()` (one round, returning its statistics and advancing
    the tqdm `bar`) until `done()` or a SIGINT/SIGTERM (placer.core.stop) asks to stop; `save()` when `rounds()`
    (counting resumed ones) is a multiple of `every`, and at the end; `line(statistics)` now and then while the
    bar is disabled (placer.core.heartbeat). Returns the last round's statistics ({} when none was left to do).
    """
    stats: dict = {}
    beat = Heartbeat(enabled=bar.disable, log=lambda text: print(text, flush=True))
    while not (done() or stop.requested()):
        stats = step()
        if rounds() % every == 0:
            save()
        beat(lambda s=stats: line(s))
    bar.close()
    save()
    return stats


def status_line(rounds: int, placements: int, best: float) -> str:
    """The line a search without a progress bar prints now and then: rounds, placements, best step time (s)."""
    return f"round {rounds}: {placements} placements, best step time {fmt.step_time(best)}"


def curve_text(curve) -> str:
    """The best-so-far curve as CSV: placements measured, best step time (s), wall seconds."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("placements", "best_step_time", "wall_seconds"))
    w.writerows(curve)
    return out.getvalue()


def best_at(curve, placements: int) -> float:
    """The best step time (s) reached within `placements` measured placements (inf before the first)."""
    reached = [t for n, t, _ in curve if n <= placements]
    return min(reached) if reached else float("inf")
