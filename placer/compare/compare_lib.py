"""Placements side by side: baselines and saved placements on one graph and cluster (no TensorFlow).

The library behind `placer-compare` and bench/table1.py. Every placement is
measured by the same Measurer, so the rows are comparable the way the
columns of Mirhoseini et al. (ICML 2017) Table 1 are: a placement that runs
out of memory is reported as "OOM", as the paper's table does for NMT on a
single GPU.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence

from baselines import registry
from placer.compare import exact_row, tables
from placer.core import atomic, names
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement, on_cluster
from placer.measure import bounds
from placer.measure import registry as measure_registry


@dataclasses.dataclass(frozen=True, eq=False)
class Row:
    """One compared placement.

    Attributes:
      method: the baseline's registry name, or the label of a given placement.
      step_time: seconds per training step; None when the placement failed.
      failure: None, a failure kind of placer.core.measurement ("oom", ...), or
        "n/a" when the baseline could not place this graph on this cluster.
      speedup_vs_reference: the reference row's step time / this step time
        (> 1 is faster); None when either failed or the reference was not
        measured. The reference is the expert placement unless `compare` was
        given another.
      speedup_vs_single_gpu: the same against the single-GPU placement.
      ratio_to_lower_bound: step time / placer.measure.bounds.lower_bound (>= 1).
      peak_memory: peak bytes per device, in the cluster's device order.
      place_seconds: wall seconds the baseline took to place; None for a
        placement that was given.
      message: the failure detail ("" when none).
      placement: the placement measured (None for "n/a").
      level: the model level of the step time, "group" or "op"
        (placer.measure.registry.level_of); "" when not measured.
    """

    method: str
    step_time: float | None
    failure: str | None
    speedup_vs_reference: float | None
    speedup_vs_single_gpu: float | None
    ratio_to_lower_bound: float | None
    peak_memory: tuple[float, ...]
    place_seconds: float | None
    message: str = ""
    placement: Placement | None = None
    level: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None


def speedup(reference: float | None, step_time: float | None) -> float | None:
    """Returns reference / step_time (how many times faster), or None if either is missing."""
    if reference is None or step_time is None or step_time <= 0:
        return None
    return reference / step_time


def label(placement: Placement, index: int, taken: set[str]) -> str:
    """A unique row name for a given placement: its metadata method, else "placement<index>"."""
    base = str(placement.metadata.get("method") or f"placement{index}")
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


DEFAULT_SEARCH_BUDGET = 256  # placements per same-budget search when nothing says how many RL measured
SEARCHES = registry.MEASURED  # the baselines that search by measuring, within a budget


def search_budget(flag: int, given: Sequence[Placement]) -> int:
    """Placements each same-budget search (registry.MEASURED) may measure.

    Args:
      flag: --search_budget; a positive value is used as it is, 0 means "as many as the search
        that made a given placement measured".
      given: the placements compared; placer-train records the placements its search measured
        in a best placement's metadata `samples`.

    Returns:
      `flag` when positive, else the largest `samples` among `given`, else DEFAULT_SEARCH_BUDGET.

    Raises:
      InputError: a negative flag.
    """
    if flag < 0:
        raise InputError(f"--search_budget: must be 0 (as many as the given RL run measured) or more, got {flag}")
    if flag > 0:
        return flag
    return max((int(p.metadata.get("samples") or 0) for p in given), default=0) or DEFAULT_SEARCH_BUDGET


def budget_reason(flag: int, given: Sequence[Placement], paths: Sequence[str]) -> str:
    """Why the same-budget searches measure `search_budget(flag, given)` placements, in words.

    Args:
      flag: --search_budget.
      given: the placements compared, loaded from `paths` (same order).
      paths: their files.

    Returns:
      A clause for placer-compare to print: the flag (and which given method measured more),
      the file whose recorded count was used, or why the default was.
    """
    recorded = [(path, int(p.metadata.get("samples") or 0)) for path, p in zip(paths, given, strict=True)]
    recorded = [(path, n) for path, n in recorded if n > 0]
    if flag > 0:
        more = [f"{path} measured {n}" for path, n in recorded if n > flag]
        return "set by --search_budget" + (f"; fewer than {', '.join(more)}" if more else "")
    if recorded:
        path, n = max(recorded, key=lambda x: x[1])
        others = [f"{p} {m}" for p, m in recorded if p != path]
        most = f", the most of the given files (the others: {', '.join(others)})" if others else ""
        return f"as many as {path} measured (its metadata 'samples'){most}"
    if given:
        return (
            f"the default: {', '.join(paths)} record no count of measured placements (metadata 'samples'); "
            "--search_budget sets the budget"
        )
    return "the default; --search_budget sets another"


def _place_baselines(
    graph: OpGraph,
    cluster: Cluster,
    methods: Sequence[str],
    seed: int,
    strict: bool,
    measurer: Measurer,
    budget: int = DEFAULT_SEARCH_BUDGET,
    log: Callable[[str], None] | None = None,
    exact: exact_row.Options | None = None,
) -> list[tuple[str, Placement | None, float | None, str]]:
    """(name, placement or None, place seconds, message) per baseline; see `compare`.

    The searches in registry.MEASURED measure `budget` candidates each with
    `measurer`; `log` hears when each starts (they take seconds to minutes).
    The exact placer (exact_row.EXACT) starts from the placements made before
    it and solves with `exact`'s options; with no solution its row is n/a,
    its message the proven bound.
    """
    for m in methods:
        if m != exact_row.EXACT:
            registry.get(m)  # unknown names fail before any work
    out = []
    for m in methods:
        if log is not None and m in registry.MEASURED:
            log(f"{m}: searching, {budget} measured placements (same budget as the RL search)")
        if m == exact_row.EXACT:
            opts = exact or exact_row.Options()
            if log is not None:
                log(f"exact: CP-SAT for {opts.time_limit:g} s at {opts.level} level, from the placements above")
            p, seconds, message = exact_row.place(graph, cluster, [e[1] for e in out if e[1] is not None], seed, opts)
            out.append((m, p, seconds, message))
            continue
        t0 = time.perf_counter()
        try:
            extra = {"measurer": measurer, "budget": budget} if m in registry.MEASURED else {}
            p = registry.place(m, graph, cluster, seed=seed, **extra)
        except InputError as e:
            if strict:
                raise
            out.append((m, None, None, str(e)))
        else:
            out.append((m, p, time.perf_counter() - t0, ""))
    return out


def compare(
    graph: OpGraph,
    cluster: Cluster,
    measurer: Measurer,
    methods: Sequence[str],
    extra_placements: Sequence[Placement] = (),
    *,
    seed: int = 0,
    strict: bool = True,
    labels: Sequence[str] | None = None,
    reference: str = tables.EXPERT,
    search_budget: int = DEFAULT_SEARCH_BUDGET,
    log: Callable[[str], None] | None = None,
    exact: exact_row.Options | None = None,
    lower_bound: float | None = None,
) -> list[Row]:
    """Places `graph` with each baseline, measures them and the given placements.

    Args:
      graph: the cost-annotated op graph.
      cluster: the devices and links.
      measurer: the backend every placement is measured with.
      methods: baseline names from baselines.registry, in row order.
      extra_placements: placements of `graph` on `cluster` (e.g. the RL
        result), checked with placer.core.placement.on_cluster; rows after the baselines.
      seed: passed to every baseline.
      strict: when False, a baseline that raises InputError (no expert rules
        for this graph, no GPU in the cluster) becomes an "n/a" row instead
        of an error.
      labels: row names for `extra_placements` (default: `label`).
      reference: the row whose step time the `speedup_vs_reference` column
        divides (a method or a given placement's row name).
      search_budget: placements each same-budget search (random_search,
        local_search) measures; see `search_budget` for the CLI's choice.
      log: where a line goes as each same-budget search starts (None: silent).
      exact: the exact row's options (exact_row.Options; None: its defaults).
      lower_bound: placer.measure.bounds.lower_bound of `graph` on `cluster` in
        seconds, when the caller has it (None: computed here; its LP is most of
        the time on a graph of 100,000 ops or more).

    Returns:
      One Row per method, then one per extra placement. Speedups are relative
      to the `reference` and "single_gpu" rows when they are among the rows
      and ran; otherwise those columns are None (`notes` says why).

    Raises:
      InputError: an unknown method (the message lists the valid ones), a
        baseline that cannot run here (when strict), or a given placement of
        another graph.
    """
    entries = _place_baselines(graph, cluster, methods, seed, strict, measurer, search_budget, log, exact)
    taken = {e[0] for e in entries}
    for i, p in enumerate(extra_placements):
        name = labels[i] if labels is not None else label(p, i, taken)
        taken.add(name)
        entries.append((name, on_cluster(p, graph, cluster, name), None, ""))
    runnable = [i for i, e in enumerate(entries) if e[1] is not None]
    measured = dict(zip(runnable, measurer.measure([entries[i][1] for i in runnable]), strict=True))
    steps = {e[0]: float(measured[i].step_time) for i, e in enumerate(entries) if i in measured and measured[i].ok}
    ref, ref_gpu = steps.get(reference), steps.get(tables.SINGLE_GPU)
    # Op level: the same bound for group and op placements.
    lb = bounds.lower_bound(graph, cluster) if lower_bound is None else lower_bound
    zeros = tuple(0.0 for _ in range(cluster.num_devices))
    rows = []
    for i, (name, placement, seconds, message) in enumerate(entries):
        if i not in measured:
            rows.append(Row(name, None, tables.NOT_APPLICABLE, None, None, None, zeros, None, message))
            continue
        m = measured[i]
        st = float(m.step_time) if m.ok else None
        peak = tuple(float(x) for x in m.peak_memory) if len(m.peak_memory) else zeros
        ratio = None if st is None or lb <= 0 else st / lb
        sp = (speedup(ref, st), speedup(ref_gpu, st), ratio)
        level = measure_registry.level_of(measurer, placement)
        note = m.message if m.message or st is None else message  # the exact row's bound and gap
        rows.append(Row(name, st, m.failure, *sp, peak, seconds, note, placement, level))
    return rows


def parse_methods(spec: str, have_placements: bool = False) -> tuple[list[str], bool]:
    """Returns (method names, strict) for --methods: 'all' is every registered baseline, not strict.

    Raises:
      InputError: an unknown name (the message lists the valid ones), or an
        empty list with no placement to compare either.
    """
    if spec.strip() == "all":
        return registry.names(), False
    names = [m.strip() for m in spec.split(",") if m.strip()]
    valid = ", ".join(["all", *registry.names(), exact_row.EXACT])
    if not names and not have_placements:
        raise InputError(f"--methods: no method given (valid: {valid})")
    for m in names:
        if m not in registry.METHODS and m != exact_row.EXACT:
            raise InputError(f"--methods: unknown method {m!r} (valid: {valid})")
    return names, True


def given_rows(paths, given, graph: OpGraph, cluster: Cluster, methods, reference: str | None):
    """Checks the given placements and names their rows.

    Returns:
      (row labels, the reference row's name): a placement's metadata method
      (else "placement") and its file, "METHOD (FILE)", made unique; the
      reference is --reference's row (a row name or a file), else EXPERT.

    Raises:
      InputError: a placement of another graph or cluster, or a --reference
        that names no row.
    """
    for path, p in zip(paths, given, strict=True):
        on_cluster(p, graph, cluster, path)  # fail on a wrong file before placing anything
    taken = set(methods)
    labels = []
    for i, (path, p) in enumerate(zip(paths, given, strict=True)):
        base = f"{p.metadata.get('method') or 'placement'} ({path})"
        labels.append(label(p.with_metadata(method=base), i, taken))
        taken.add(labels[-1])
    if reference is None:
        return labels, tables.EXPERT
    if reference in paths:
        return labels, labels[paths.index(reference)]
    if reference not in taken:
        raise InputError(
            f"--reference: {reference!r} is neither a baseline, a row of --placements ({', '.join(labels) or 'none'}) "
            "nor a placement file"
        )
    return labels, reference


def write_outputs(
    out: str, rows, graph, cluster, measurer, timeline: str | None, reference: str, bound=None
) -> list[str]:
    """Writes table.md, table.csv, step_times.png, timeline_<method>.png and the baselines' placements into `out`
    (the tables with `bound`'s row, a placer.measure.bounds.Bound, when given).

    Returns:
      The paths written.

    Raises:
      InputError: `timeline` names no row, or a row that has no placement.
    """
    from placer.compare import plots  # noqa: PLC0415 (matplotlib, only when drawing)
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    by_name = {r.method: r for r in rows}
    if timeline is not None and timeline not in by_name:
        raise InputError(f"--timeline: no row named {timeline!r} (rows: {', '.join(by_name)})")
    row = by_name[timeline] if timeline is not None else tables.best(rows)
    if row is not None and row.placement is None:
        raise InputError(f"--timeline: {row.method!r} has no placement ({row.message})")
    os.makedirs(out, exist_ok=True)
    title = f"{graph.name} on {cluster.name}"
    atomic.write_text(
        os.path.join(out, "table.md"), tables.markdown_text(rows, cluster.device_names, title, reference, bound)
    )
    atomic.write_text(os.path.join(out, "table.csv"), tables.csv_text(rows, cluster.device_names, reference, bound))
    plots.plot_step_times(rows, os.path.join(out, "step_times.png"), title=title)
    written = ["table.md", "table.csv", "step_times.png"]
    for r in rows:
        if r.placement is not None and r.place_seconds is not None:  # a baseline's, not a given file
            name = f"placement_{names.slug(r.method)}.json"
            r.placement.save(os.path.join(out, name))
            written.append(name)
    if row is not None:
        sim = measurer if isinstance(measurer, Simulator) else Simulator(graph, cluster)
        result = sim.simulate(row.placement.devices, op_group=row.placement.groups, trace=True)
        name = f"timeline_{names.slug(row.method)}.png"
        plots.plot_timeline(result, graph, cluster, os.path.join(out, name), title=f"{row.method}: {title}")
        written.append(name)
    return [os.path.join(out, w) for w in written]
