"""Placements side by side: baselines and saved placements on one graph and cluster (no TensorFlow).

The library behind `placer-compare` and bench/table1.py. Every placement is
measured by the same Measurer, so the rows are comparable the way the
columns of Mirhoseini et al. (ICML 2017) Table 1 are: a placement that runs
out of memory is reported as "OOM", as the paper's table does for NMT on a
single GPU.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import time
from collections.abc import Sequence

import tabulate

from baselines import registry
from placer.core import atomic
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement, on_cluster
from placer.measure import bounds

EXPERT = "expert"
SINGLE_GPU = "single_gpu"
NOT_APPLICABLE = "n/a"  # a baseline that cannot place this graph on this cluster (Row.failure)
CSV_COLUMNS = (
    "method",
    "step_time_s",
    "failure",
    "speedup_vs_expert",
    "speedup_vs_single_gpu",
    "ratio_to_lower_bound",
    "place_seconds",
    "message",
)


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


def _place_baselines(
    graph: OpGraph, cluster: Cluster, methods: Sequence[str], seed: int, strict: bool, measurer: Measurer
) -> list[tuple[str, Placement | None, float | None, str]]:
    """(name, placement or None, place seconds, message) per baseline; see `compare`.

    The searches in registry.MEASURED measure their candidates with `measurer`.
    """
    for m in methods:
        registry.get(m)  # unknown names fail before any work
    out = []
    for m in methods:
        t0 = time.perf_counter()
        try:
            extra = {"measurer": measurer} if m in registry.MEASURED else {}
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
    reference: str = EXPERT,
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

    Returns:
      One Row per method, then one per extra placement. Speedups are relative
      to the `reference` and "single_gpu" rows when they are among the rows
      and ran; otherwise those columns are None (`notes` says why).

    Raises:
      InputError: an unknown method (the message lists the valid ones), a
        baseline that cannot run here (when strict), or a given placement of
        another graph.
    """
    entries = _place_baselines(graph, cluster, methods, seed, strict, measurer)
    taken = {e[0] for e in entries}
    for i, p in enumerate(extra_placements):
        name = labels[i] if labels is not None else label(p, i, taken)
        taken.add(name)
        entries.append((name, on_cluster(p, graph, cluster, name), None, ""))
    runnable = [i for i, e in enumerate(entries) if e[1] is not None]
    measured = dict(zip(runnable, measurer.measure([entries[i][1] for i in runnable]), strict=True))
    steps = {e[0]: float(measured[i].step_time) for i, e in enumerate(entries) if i in measured and measured[i].ok}
    ref, ref_gpu = steps.get(reference), steps.get(SINGLE_GPU)
    lb = bounds.lower_bound(graph, cluster)
    zeros = tuple(0.0 for _ in range(cluster.num_devices))
    rows = []
    for i, (name, placement, seconds, message) in enumerate(entries):
        if i not in measured:
            rows.append(Row(name, None, NOT_APPLICABLE, None, None, None, zeros, None, message))
            continue
        m = measured[i]
        st = float(m.step_time) if m.ok else None
        peak = tuple(float(x) for x in m.peak_memory) if len(m.peak_memory) else zeros
        ratio = None if st is None or lb <= 0 else st / lb
        rows.append(
            Row(name, st, m.failure, speedup(ref, st), speedup(ref_gpu, st), ratio, peak, seconds, m.message, placement)
        )
    return rows


def notes(rows: Sequence[Row], reference: str = EXPERT) -> list[str]:
    """Why a speedup column is empty: its reference row is missing, could not place, or failed."""
    by = {r.method: r for r in rows}
    out = []
    for column, name in (("vs " + reference, reference), ("vs single GPU", SINGLE_GPU)):
        r = by.get(name)
        if r is None:
            out.append(f"{column}: n/a, {name} is not among the compared placements")
        elif not r.ok:
            why = " ".join(r.message.split()) or status(r)
            out.append(
                f"{column}: n/a, {name} {'could not place' if r.failure == NOT_APPLICABLE else 'failed'} ({why})"
            )
    return out


def best(rows: Sequence[Row]) -> Row | None:
    """The row with the smallest step time (None when every placement failed)."""
    ok = [r for r in rows if r.ok]
    return min(ok, key=lambda r: r.step_time) if ok else None


def status(row: Row) -> str:
    """The step time in seconds (4 significant digits), or the failure as the paper writes it ("OOM")."""
    if row.ok:
        return f"{row.step_time:.4g}"
    return "OOM" if row.failure == "oom" else str(row.failure)


def _num(x: float | None, fmt: str) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def memory_unit(rows: Sequence[Row]) -> tuple[float, str]:
    """(bytes per unit, unit name) for the peak-memory columns: GiB, or MiB when every peak is below 1 GiB."""
    top = max((x for r in rows for x in r.peak_memory), default=0.0)
    return (2.0**30, "GiB") if top >= 2**30 else (2.0**20, "MiB")


def _mem(r: Row, unit: float, sep: str) -> str:
    return "" if r.failure == NOT_APPLICABLE else sep.join(f"{x / unit:.2f}" for x in r.peak_memory)


def csv_columns(reference: str = EXPERT) -> tuple[str, ...]:
    """CSV_COLUMNS with the reference's speedup column named after it (speedup_vs_<reference>)."""
    return tuple(f"speedup_vs_{reference}" if c == "speedup_vs_expert" else c for c in CSV_COLUMNS)


def csv_text(rows: Sequence[Row], device_names: Sequence[str], reference: str = EXPERT) -> str:
    """The comparison as CSV: `csv_columns(reference)`, then one `peak_bytes:<device>` column per device."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*csv_columns(reference), *(f"peak_bytes:{d}" for d in device_names)])
    for r in rows:
        w.writerow(
            [
                r.method,
                _num(r.step_time, ".9g"),
                r.failure or "",
                _num(r.speedup_vs_reference, ".6g"),
                _num(r.speedup_vs_single_gpu, ".6g"),
                _num(r.ratio_to_lower_bound, ".6g"),
                _num(r.place_seconds, ".6g"),
                " ".join(r.message.split()),
                *(f"{x:.0f}" for x in r.peak_memory),
            ]
        )
    return buf.getvalue()


def _cells(r: Row, unit: float, sep: str) -> list[str]:
    """One row of the comparison tables as text cells; `sep` joins the per-device memory."""
    return [
        r.method,
        status(r),
        _num(r.speedup_vs_reference, ".3g"),
        _num(r.speedup_vs_single_gpu, ".3g"),
        _num(r.ratio_to_lower_bound, ".3g"),
        _num(r.place_seconds, ".3f"),
        _mem(r, unit, sep),
    ]


def markdown_text(rows: Sequence[Row], device_names: Sequence[str], title: str = "", reference: str = EXPERT) -> str:
    """The comparison as a Markdown table (devices in the cluster's order), then the failure and n/a notes."""
    unit, uname = memory_unit(rows)
    head = [
        "method",
        "step time (s)",
        f"vs {reference}",
        "vs single GPU",
        "/ lower bound",
        "place time (s)",
        f"peak memory ({uname}): " + ", ".join(short_device(d) for d in device_names),
    ]
    table = tabulate.tabulate([_cells(r, unit, " / ") for r in rows], head, tablefmt="github", disable_numparse=True)
    lines = [f"- {r.method}: {' '.join(r.message.split())}" for r in rows if r.message]
    lines += [f"- {n}" for n in notes(rows, reference)]
    return (f"### {title}\n\n" if title else "") + table + "\n" + ("\n" + "\n".join(lines) + "\n" if lines else "")


def terminal_text(rows: Sequence[Row], device_names: Sequence[str], reference: str = EXPERT) -> str:
    """The comparison as an aligned plain-text table for the terminal, then why any column is n/a."""
    unit, uname = memory_unit(rows)
    head = ["method", "step (s)", f"vs {reference}", "vs 1 GPU", "/ bound", "place (s)", f"peak {uname} per device"]
    table = tabulate.tabulate([_cells(r, unit, " ") for r in rows], head, tablefmt="simple", disable_numparse=True)
    out = [table, "devices: " + ", ".join(device_names)]
    out += [f"{r.method}: {' '.join(r.message.split())}" for r in rows if r.failure == NOT_APPLICABLE]
    out += notes(rows, reference)
    return "\n".join(out) + "\n"


def short_device(name: str) -> str:
    """ "/device:GPU:0" -> "GPU:0" (column headers)."""
    return name.removeprefix("/device:")


def write_csv(path: str, rows: Sequence[Row], device_names: Sequence[str], reference: str = EXPERT) -> None:
    """Writes `csv_text(rows, device_names, reference)` to `path` atomically."""
    atomic.write_text(path, csv_text(rows, device_names, reference))


def write_markdown(
    path: str, rows: Sequence[Row], device_names: Sequence[str], title: str = "", reference: str = EXPERT
) -> None:
    """Writes `markdown_text(rows, device_names, title, reference)` to `path` atomically."""
    atomic.write_text(path, markdown_text(rows, device_names, title, reference))
