"""The exact placer: CP-SAT solves the model of `placer.measure.exact_model`, the simulator judges (no TensorFlow).

`solve` builds the model for the units a placement is simulated at (the
co-location groups by default, or single ops), hints it with a given
placement, and lets CP-SAT search within a time limit. Each solution it
improves on is simulated by the real simulator (`Simulator`), and the best
simulated one is kept: the solver's schedule may be shorter than the
simulator's list schedule of the same placement (it may put a long op into
slack, or interleave chains out of index order), so the best model makespan
is not always the best simulated step. The proven bound is the solver's
bound on the model's makespan; since the model is a relaxation of the
simulator's, it bounds the simulated step time of every placement of these
units. A group-level bound holds for group placements only: the certified
bound of any placement is the op-level one (`placer.measure.bounds`, or an
op-level solve's proof).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from placer.core.cluster import Cluster
from placer.core.colocation import colocation_sets
from placer.core.disjoint import DisjointSets
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure import bounds, fast, simulator
from placer.measure.simulator import Simulator

# OR-Tools and TensorFlow each carry their own copy of absl and protobuf's C++ code; in a process that
# loaded TensorFlow first, CP-SAT's solve crashes (a segmentation fault, OR-Tools 9.15, TF 2.21). The
# binaries that may solve import this module before TensorFlow, and `require_ortools` refuses otherwise.
_TF_FIRST = "tensorflow" in sys.modules
try:
    from ortools.sat.python import cp_model

    from placer.measure import exact_model
except ImportError:  # the optional extra is missing: `solve` says how to install it
    cp_model = exact_model = None

# Solver memory per element of exact_model.size_estimate: 3.7 kB measured (peak RSS growth over a 10 s
# solve, 2 workers) on a generated 300-op DAG's 226 groups on k80x4, 24,000 elements. The limit keeps a
# model under about 4 GiB.
BYTES_PER_ELEMENT = 4000
MAX_MODEL_SIZE = 1_000_000
STATUS = {"OPTIMAL": "optimal", "FEASIBLE": "feasible", "INFEASIBLE": "infeasible", "UNKNOWN": "unknown"}


@dataclasses.dataclass(frozen=True)
class Result:
    """What an exact solve found.

    Attributes:
      devices: [n_ops] device per op of the best simulated solution, or None when none was found.
      groups: [n_ops] the op-to-group map of the units solved (None at op level).
      level: "group" or "op".
      step_time: the simulated step time of `devices` (s; inf when it failed in the simulator).
      makespan: the model's makespan of that solution (s).
      proven_bound: the solver's bound on the makespan of any placement of these units (s).
      analytic_bound: the op-level bound of `placer.measure.bounds` (s).
      status: "optimal", "feasible", "unknown" or "infeasible".
      solutions: improving solutions seen, each (seconds since the start, model makespan s, simulated s).
      wall: seconds the solve took (building the model included).
    """

    devices: np.ndarray | None
    groups: np.ndarray | None
    level: str
    step_time: float
    makespan: float
    proven_bound: float
    analytic_bound: float
    status: str
    solutions: tuple[tuple[float, float, float], ...]
    wall: float

    @property
    def certified_bound(self) -> float:
        """The bound every placement (of ops) is held to: the analytic one, or an op-level proof when higher."""
        return max(self.analytic_bound, self.proven_bound if self.level == simulator.LEVEL_OP else 0.0)

    @property
    def gap(self) -> float:
        """Simulated step time over the proven bound (>= 1; the room a better placement of these units could have)."""
        return self.step_time / self.proven_bound if self.proven_bound > 0 else math.inf

    @property
    def certified_gap(self) -> float:
        """Simulated step time over the certified (op-level) bound."""
        return self.step_time / self.certified_bound if self.certified_bound > 0 else math.inf

    def describe(self) -> str:
        """One line: step time, makespan, bounds and gaps, status."""
        if self.devices is None:
            return (
                f"no solution in {self.wall:.0f} s ({self.status}); proven bound {self.proven_bound:.4g} s "
                f"({self.level} level)"
            )
        return (
            f"simulated {self.step_time:.4g} s, model makespan {self.makespan:.4g} s, proven bound "
            f"{self.proven_bound:.4g} s ({self.level} level; gap {self.gap:.4f}x), certified gap "
            f"{self.certified_gap:.4f}x over {self.certified_bound:.4g} s, {self.status}"
        )


def require_ortools() -> None:
    """Raises InputError naming the extra to install when OR-Tools is missing, or when it was loaded after
    TensorFlow in this process (where its solve would crash; see the comment above its import)."""
    if cp_model is None:
        raise InputError("the exact placer needs OR-Tools: pip install -e '.[exact]'")
    if _TF_FIRST:
        raise InputError(
            "the exact placer: OR-Tools was loaded after TensorFlow in this process, where CP-SAT crashes; "
            "import placer.measure.exact before TensorFlow"
        )


def solve(
    graph: OpGraph,
    cluster: Cluster,
    *,
    op_group: Sequence[int] | None = None,
    hint: Sequence[int] | None = None,
    time_limit: float = 60.0,
    workers: int = 1,
    seed: int = 0,
    max_model_size: int = MAX_MODEL_SIZE,
    log: Callable[[str], None] | None = None,
) -> Result:
    """Searches for the placement of least simulated step time; see the module docstring.

    Args:
      graph: the op graph.
      cluster: the devices and links (no serial executor).
      op_group: [n_ops] op-to-group map: the units are its groups (group level); None: single ops.
      hint: [n_ops] device per op to start from (placed whole per group at group level), or None.
      time_limit: seconds the solver may search.
      workers: CP-SAT search workers.
      seed: CP-SAT's random seed.
      max_model_size: refuse a model whose `exact_model.size_estimate` is above this.
      log: where a line goes for each improving solution (None: silent).

    Raises:
      InputError: OR-Tools missing, a serial-executor cluster, a model too large, an op without a
        kernel on any device, or a hint of another length or naming a device outside the cluster
        (a hint that splits a group or a colocation set is no placement of the units: it is left out).
    """
    require_ortools()
    t0 = time.perf_counter()
    if cluster.serial_executor:
        raise InputError(f"exact: cluster {cluster.name!r} has a serial executor, which the model does not describe")
    analytic = bounds.bound(graph, cluster)
    sim = Simulator(graph, cluster)
    grp = None if op_group is None else np.asarray(op_group, np.int64)
    units = sim._units_for(grp)  # noqa: SLF001 (the simulator's own unit graph, so both schedule the same units)
    inp = _inputs(sim, units, graph, grp)
    size = exact_model.size_estimate(inp)
    if size > max_model_size:
        raise InputError(
            f"exact: the model of {graph.name!r} at {'group' if grp is not None else 'op'} level would hold about "
            f"{size:,} elements (about {size * BYTES_PER_ELEMENT / 2**30:.1f} GiB), above the limit of "
            f"{max_model_size:,}; solve at group level or with fewer groups"
        )
    quantum = 10.0 ** math.floor(math.log10(max(analytic.value, 1e-9)) - 6)
    model = exact_model.build(inp, quantum)
    class_hint = None if hint is None else _class_hint(np.asarray(hint, np.int64), units, inp, cluster)
    if class_hint is not None:
        _add_hint(model, sim, grp, inp, class_hint)
    watcher = _Watcher(model, lambda cd: _simulate(sim, units, grp, inp, cd), t0, log)
    if class_hint is not None:
        _complete_hint(model, watcher, seed)
    solver = _solver(time_limit - (time.perf_counter() - t0), workers, seed)
    status = solver.solve(model.cp, watcher)
    name = STATUS.get(solver.status_name(status), "unknown")
    if name == "unknown" and watcher.best is not None:
        name = "feasible"  # the hint's solution, found before the search ran out of time
    proven = max(solver.best_objective_bound, model.cut) * quantum
    if name == "optimal":
        proven = solver.objective_value * quantum
    best = watcher.best
    devices = None if best is None else best[0][inp.unit_class[units.op_unit]]
    return Result(
        devices,
        grp,
        simulator.LEVEL_GROUP if grp is not None else simulator.LEVEL_OP,
        math.inf if best is None else best[2],
        math.nan if best is None else best[1],
        proven,
        analytic.value,
        name,
        tuple(watcher.seen),
        time.perf_counter() - t0,
    )


def place(
    graph: OpGraph,
    cluster: Cluster,
    *,
    seed: int = 0,
    op_group: Sequence[int] | None = None,
    hints: Sequence[Sequence[int]] = (),
    time_limit: float = 60.0,
    workers: int = 1,
    log: Callable[[str], None] | None = None,
) -> tuple[Placement | None, Result]:
    """Solves from the fastest simulated of `hints` and returns the best placement with the result.

    Args:
      graph, cluster, seed, op_group, time_limit, workers, log: as in `solve`.
      hints: [n_ops] device arrays to start from (baselines, a short search); the one the simulator
        finds fastest is the hint (one that splits a group is skipped at group level).

    Returns:
      (Placement or None when no solution was found, Result). The placement's metadata records
      the method "exact", its simulated step time, model makespan, proven bound and its level,
      the certified bound, the status and the solve's seconds.
    """
    grp = None if op_group is None else np.asarray(op_group, np.int64)
    hint = _fastest(graph, cluster, grp, hints)
    r = solve(graph, cluster, op_group=grp, hint=hint, time_limit=time_limit, workers=workers, seed=seed, log=log)
    if r.devices is None:
        return None, r
    meta = {
        "method": "exact",
        "step_time": r.step_time,
        "model_makespan": r.makespan,
        "proven_bound": r.proven_bound,
        "proven_level": r.level,
        "certified_bound": r.certified_bound,
        "status": r.status,
        "solve_seconds": r.wall,
        "seed": seed,
    }
    return Placement.from_ops(graph, r.devices, cluster.device_names, groups=grp, **meta), r


def _fastest(graph: OpGraph, cluster: Cluster, grp, hints) -> np.ndarray | None:
    """The hint of least simulated step time (placing each group whole at group level), or None."""
    rows = [np.asarray(h, np.int64) for h in hints]
    if grp is not None:
        first = np.full(int(grp.max()) + 1, -1)
        first[grp[::-1]] = np.arange(len(grp))[::-1]
        rows = [r for r in rows if (r[first][grp] == r).all()]
    if not rows:
        return None
    sim = Simulator(graph, cluster, op_group=grp)
    steps = [m.step_time if m.ok else math.inf for m in sim.measure_devices(np.stack(rows))]
    return rows[int(np.argmin(steps))] if np.isfinite(min(steps)) else None


def _inputs(sim: Simulator, units, graph: OpGraph, grp) -> exact_model.Inputs:
    """The model's inputs: the simulator's seconds and links, and the placement classes."""
    ds = DisjointSets(range(units.num_units))
    first: dict[int, int] = {}
    for u, g in enumerate(units.unit_group.tolist()):  # the units of one group share its device
        ds.union(first.setdefault(g, u), u)
    for members in colocation_sets(graph):  # so do colocated ops
        us = np.unique(units.op_unit[members])
        for u in us[1:].tolist():
            ds.union(int(us[0]), u)
    _, unit_class = np.unique([ds.find(u) for u in range(units.num_units)], return_inverse=True)
    seconds = sim.cluster.op_seconds(graph, units.op_unit)
    bad = np.isnan(seconds).all(1)
    if bad.any():
        op = int(np.flatnonzero(units.op_unit == int(np.argmax(bad)))[0])
        raise InputError(f"exact: op {graph.names[op]!r} has no kernel on any device of {sim.cluster.name!r}")
    symmetric = exact_model.interchangeable(sim.cluster.devices, sim.per_tensor, sim.bandwidth)
    return exact_model.Inputs(
        units, seconds, sim.per_tensor, sim.bandwidth, sim.memory, unit_class.astype(np.int64), symmetric
    )


def _class_hint(hint: np.ndarray, units, inp, cluster: Cluster) -> np.ndarray | None:
    """[C] device per class from a per-op hint (None when it splits a class), interchangeable devices canonical."""
    if hint.shape != units.op_unit.shape or hint.min(initial=0) < 0 or hint.max(initial=0) >= cluster.num_devices:
        raise InputError(f"exact: the hint must give one device of {cluster.name!r} per op")
    cls = inp.unit_class[units.op_unit]
    c_n = int(inp.unit_class.max()) + 1
    first = np.full(c_n, -1)
    first[cls[::-1]] = hint[::-1]
    if (first[cls] != hint).any():
        return None  # a hint that splits a group or a colocation set is no placement of these units
    return exact_model.canonical(first, inp.symmetric)


def _add_hint(model, sim: Simulator, grp, inp, class_hint: np.ndarray) -> None:
    """Hints the placement and the simulator's own schedule of it (in ticks, rounded down: feasible)."""
    for c, d in enumerate(class_hint.tolist()):
        for dd, x in model.place[c].items():
            model.cp.add_hint(x, dd == d)
    dev = class_hint[inp.unit_class][None]
    prepared, _ = sim._prepared(grp)  # noqa: SLF001 (the simulator's own kernel and unit graph)
    s = fast.run(prepared, dev, trace=True)
    st = exact_model.ticks(s.start[0], model.quantum)
    for u in range(prepared.units.num_units):
        model.cp.add_hint(model.start[u], int(st[u]))


def _solver(time_limit: float, workers: int, seed: int) -> cp_model.CpSolver:
    """A CP-SAT solver for `workers` threads.

    Probing is off: on a 300-op graph it spent 9 s of a loaded 2-core
    machine before the search began. One worker interleaves CP-SAT's
    subsolvers in turns, so that its large-neighbourhood search runs too;
    with two or more, one thread searches the whole model and the others
    improve the incumbent by large neighbourhoods.
    """
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(float(time_limit), 0.0)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    solver.parameters.cp_model_probing_level = 0
    solver.parameters.interleave_search = workers == 1
    return solver


def _complete_hint(model, watcher, seed: int) -> None:
    """Replaces the hint by a complete solution (every variable) that extends it.

    CP-SAT takes a complete feasible hint as its first solution; a partial one
    (placement and starts) it may fail to complete in minutes on a few
    hundred units. The hinted values are feasible (see `_add_hint`), so a
    solve with them fixed finishes at once and yields the rest.
    """
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.max_time_in_seconds = 30.0
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = int(seed)
    status = solver.solve(model.cp, watcher)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return
    cp = model.cp
    values = [solver.value(cp.get_int_var_from_proto_index(i)) for i in range(len(cp.proto.variables))]
    cp.clear_hints()
    for i, v in enumerate(values):
        cp.add_hint(cp.get_int_var_from_proto_index(i), v)


def _simulate(sim: Simulator, units, grp, inp, class_dev: np.ndarray) -> float:
    """The simulated step time (s) of a placement per class (inf when it fails, e.g. out of memory)."""
    op_dev = class_dev[inp.unit_class[units.op_unit]]
    return float(sim.simulate(op_dev, op_group=grp).step_time)


if cp_model is not None:

    class _Watcher(cp_model.CpSolverSolutionCallback):
        """Simulates each improving solution and keeps the best simulated one."""

        def __init__(self, model, simulate, t0: float, log):
            super().__init__()
            self._model, self._simulate, self._t0, self._log = model, simulate, t0, log
            self.best: tuple[np.ndarray, float, float] | None = None  # (class devices, makespan s, simulated s)
            self.seen: list[tuple[float, float, float]] = []
            self._lock = threading.Lock()

        def on_solution_callback(self) -> None:
            q = self._model.quantum
            class_dev = np.array([next(d for d, x in p.items() if self.boolean_value(x)) for p in self._model.place])
            makespan = self.objective_value * q
            step = self._simulate(class_dev)
            with self._lock:
                self.seen.append((time.perf_counter() - self._t0, makespan, step))
                if self.best is None or step < self.best[2]:
                    self.best = (class_dev, makespan, step)
            if self._log is not None:
                self._log(
                    f"exact: model {makespan:.4g} s, simulated {step:.4g} s, bound {self.best_objective_bound * q:.4g} s"
                )
