"""The interface every learned placement method implements, and what it is built from.

A method proposes group placements, is told their measurements, and saves
and restores its own state; `placer.rl.search_loop` drives it and owns the
budget of measured placements, the best placement, the files and the
logging, so a method never measures or writes results itself. Methods are
registered by name in `placer.rl.methods`.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from baselines import single
from placer.core.cluster import Cluster
from placer.core.grouping import Grouping
from placer.core.measurement import Measurement
from placer.core.placement import Placement
from placer.rl.problem import Problem


@dataclasses.dataclass
class Setup:
    """What a method is built from.

    Attributes:
      problem: the groups to place (their features, allowed devices, tie leaders).
      groups: the grouping behind `problem`.
      cluster: the devices.
      placer: `config.placer` (its policy and train sections).
      measurer: the search's measurer, which counts every placement it is given
        against the budget; a method measures only through it (warm starts).
      workdir: the folder its state is saved in.
      seed: seeds the method's draws.
      budget: placements the whole search may measure (methods with a schedule,
        such as annealing's cooling, fit it to this).
      warm: (step time s, Placement) of the warm start's baseline, or None.
      start: (step time s, Placement) where the methods that start from single_gpu start instead, or None
        (placer-train measures every baseline for it on a cluster without a GPU; see `start_placement`).
      init_from: a placer-pretrain policy folder, or None.
      source: the graph's file or model name (for messages).
      log: where a method prints its lines.
    """

    problem: Problem
    groups: Grouping
    cluster: Cluster
    placer: object
    measurer: object
    workdir: str
    seed: int = 0
    budget: int = 0
    warm: tuple | None = None
    start: tuple | None = None
    init_from: str | None = None
    source: str = ""
    log: object = print


def start_placement(setup: Setup) -> Placement:
    """Where a method that starts from single_gpu starts: `setup.start`'s baseline when there is one (the
    fastest that runs on a cluster without a GPU), else baselines.single.place_start (single_gpu, or
    single_cpu without a GPU)."""
    if setup.start is not None:
        return setup.start[1]
    return single.place_start(setup.problem.graph, setup.cluster)


def start_classes(setup: Setup, space, op_devices: np.ndarray) -> np.ndarray:
    """[L] the device of each tie class of `space` (a baselines.search.Space on `setup`'s groups) that places
    the op placement `op_devices` [n_ops] as `setup.problem` reads it: its majority device, which is the
    placement itself where the problem decodes relative to it (Problem.with_base)."""
    return setup.problem.target(np.asarray(op_devices))[space.groups.leaders()]


def start_name(setup: Setup) -> str:
    """The name of `start_placement`'s baseline, for the logs and summary.json."""
    return str(start_placement(setup).metadata.get("method", "single_gpu"))


class Learner(Protocol):
    """One learned placement method (registered in placer.rl.methods).

    A class implementing it may set `uses_warm_start = True` to be given the
    warm start's baseline (`Setup.warm`); the others start where they choose,
    and set `uses_start = True` when that is single_gpu (`start_placement`:
    on a cluster without a GPU they are given the fastest baseline instead).
    One that can start from something learned before (`Setup.init_from`) says
    what in `init_from`: "policy" (a placer-pretrain folder) or the name of
    the method whose workdir it reads; the others set None or nothing.
    """

    def propose(self, limit: int) -> np.ndarray:
        """[k, G] device per group of the next placements to measure, 1 <= k <= `limit`."""

    def observe(self, devices: np.ndarray, results: list[Measurement]) -> dict:
        """Learns from the measurements of `devices` (the rows `propose` returned); returns statistics to log."""

    def best(self) -> tuple[float, np.ndarray] | None:
        """(step time s, [G] devices) of a placement the method measured before proposing (a warm start), or None."""

    def finished(self) -> bool:
        """Whether the method has nothing left to propose."""

    def save(self) -> None:
        """Writes the method's state into `Setup.workdir` (atomically)."""

    def restore(self) -> int:
        """Reads the state `save` wrote; returns the rounds (propose/observe pairs) it had done.

        Raises:
          InputError: no state, a corrupt one, or one made for another problem.
        """

    def info(self) -> dict:
        """What summary.json records of the method (its policy, encoder, update rule...)."""
