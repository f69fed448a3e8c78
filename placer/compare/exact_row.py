"""The `exact` row of a comparison: CP-SAT started from the best of the other rows and a short annealing run.

`placer.measure.exact` does the solving; this module picks what it starts
from (every placement the comparison placed before it, and simulated
annealing over the same groups the same-budget searches place) and turns its
answer into a row: the placement, or, when no solution was found within the
time limit, the proven bound alone.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from baselines import search
from placer.core.cluster import Cluster
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure import exact
from placer.measure.simulator import Simulator

EXACT = "exact"
TARGET_GROUPS = 256  # as baselines.search places by default


@dataclasses.dataclass(frozen=True)
class Options:
    """How the exact row solves.

    Attributes:
      time_limit: seconds CP-SAT searches (the hint's annealing not counted).
      workers: CP-SAT threads.
      level: "group" (the searches' co-location groups) or "op".
      hint_budget: placements the annealing that makes a hint measures (0: none).
    """

    time_limit: float = 60.0
    workers: int = 1
    level: str = "group"
    hint_budget: int = 2000


def place(
    graph: OpGraph, cluster: Cluster, placed: Sequence[Placement], seed: int, options: Options
) -> tuple[Placement | None, float, str]:
    """Runs the exact placer; returns (placement or None, wall seconds, the row's message).

    Args:
      graph, cluster: what is placed.
      placed: placements made before it (its hints, with the annealing run's).
      seed: the annealing's and CP-SAT's seed.
      options: see `Options`.

    Raises:
      InputError: OR-Tools missing, a model too large (its size estimated in the message).
    """
    exact.require_ortools()
    t0 = time.perf_counter()
    groups = search.Space(graph, cluster, None, TARGET_GROUPS).groups  # the same-budget searches' groups
    hints = [np.asarray(p.devices, np.int64) for p in placed]
    if options.hint_budget > 0:
        sim = Simulator(graph, cluster, op_group=groups.op_group)
        annealed = search.place_local_search(
            graph, cluster, seed=seed, measurer=sim, budget=options.hint_budget, groups=groups
        )
        hints.append(np.asarray(annealed.devices, np.int64))
    op_group = groups.op_group if options.level == "group" else None
    p, r = exact.place(
        graph,
        cluster,
        seed=seed,
        op_group=op_group,
        hints=hints,
        time_limit=options.time_limit,
        workers=options.workers,
    )
    return p, time.perf_counter() - t0, r.describe()
