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

import numpy as np

from baselines import registry
from placer.core import atomic
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.measurement import Measurer
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
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
      speedup_vs_expert: expert step time / this step time (> 1 is faster);
        None when either failed or the expert was not measured.
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
    speedup_vs_expert: float | None
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


def on_cluster(placement: Placement, graph: OpGraph, cluster: Cluster, source: str) -> Placement:
    """Checks a given placement against the graph and re-indexes it to the cluster's devices.

    Args:
      placement: a loaded placement.
      graph: the graph it must have been made for.
      cluster: the cluster it is measured on.
      source: file name or label used in error messages.

    Returns:
      The same placement with device indices into `cluster.device_names`.

    Raises:
      InputError: ops missing from either side, another graph (fingerprint), or a device the
        cluster does not have.
    """
    placement = placement.for_graph(graph, source)
    pos = {n: i for i, n in enumerate(cluster.device_names)}
    for d in np.unique(placement.devices):
        name = placement.device_names[int(d)]
        if name not in pos:
            raise InputError(
                f"{source}: field 'devices' names {name!r}, not a device of cluster "
                f"{cluster.name!r} ({', '.join(cluster.device_names)})"
            )
    remap = np.array([pos.get(n, 0) for n in placement.device_names], dtype=np.int64)
    devices = remap[np.asarray(placement.devices, dtype=np.int64)]
    return Placement.from_ops(graph, devices, cluster.device_names, groups=placement.groups, **placement.metadata)


def label(placement: Placement, index: int, taken: set[str]) -> str:
    """A unique row name for a given placement: its metadata method, else "placement<index>"."""
    base = str(placement.metadata.get("method") or f"placement{index}")
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


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
) -> list[Row]:
    """Places `graph` with each baseline, measures them and the given placements.

    Args:
      graph: the cost-annotated op graph.
      cluster: the devices and links.
      measurer: the backend every placement is measured with.
      methods: baseline names from baselines.registry, in row order.
      extra_placements: placements of `graph` on `cluster` (e.g. the RL
        result), checked with `on_cluster`; rows after the baselines.
      seed: passed to every baseline.
      strict: when False, a baseline that raises InputError (no expert rules
        for this graph, no GPU in the cluster) becomes an "n/a" row instead
        of an error.
      labels: row names for `extra_placements` (default: `label`).

    Returns:
      One Row per method, then one per extra placement. Speedups are
      relative to the "expert" and "single_gpu" rows when they are among the
      methods and ran; otherwise those columns are None.

    Raises:
      InputError: an unknown method (the message lists the valid ones), a
        baseline that cannot run here (when strict), or a given placement of
        another graph.
    """
    for m in methods:
        registry.get(m)  # unknown names fail before any work
    names: list[str] = []
    placements: list[Placement | None] = []
    seconds: list[float | None] = []
    messages: list[str] = []
    for m in methods:
        t0 = time.perf_counter()
        try:
            p = registry.place(m, graph, cluster, seed=seed)
        except InputError as e:
            if strict:
                raise
            p, msg = None, str(e)
        else:
            msg = ""
        names.append(m)
        placements.append(p)
        seconds.append(None if p is None else time.perf_counter() - t0)
        messages.append(msg)
    taken = set(names)
    for i, p in enumerate(extra_placements):
        name = labels[i] if labels is not None else label(p, i, taken)
        taken.add(name)
        names.append(name)
        placements.append(on_cluster(p, graph, cluster, name))
        seconds.append(None)
        messages.append("")
    runnable = [i for i, p in enumerate(placements) if p is not None]
    measured = dict(zip(runnable, measurer.measure([placements[i] for i in runnable]), strict=True))
    lb = bounds.lower_bound(graph, cluster)

    def step_of(name: str) -> float | None:
        for i, n in enumerate(names[: len(methods)]):
            if n == name and i in measured and measured[i].ok:
                return float(measured[i].step_time)
        return None

    ref_expert, ref_gpu = step_of(EXPERT), step_of(SINGLE_GPU)
    rows = []
    zeros = tuple(0.0 for _ in range(cluster.num_devices))
    for i, name in enumerate(names):
        if i not in measured:
            rows.append(Row(name, None, NOT_APPLICABLE, None, None, None, zeros, None, messages[i]))
            continue
        m = measured[i]
        st = float(m.step_time) if m.ok else None
        peak = tuple(float(x) for x in m.peak_memory) if len(m.peak_memory) else zeros
        rows.append(
            Row(
                name,
                st,
                m.failure,
                speedup(ref_expert, st),
                speedup(ref_gpu, st),
                None if st is None or lb <= 0 else st / lb,
                peak,
                seconds[i],
                m.message,
                placements[i],
            )
        )
    return rows


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


def csv_text(rows: Sequence[Row], device_names: Sequence[str]) -> str:
    """The comparison as CSV: CSV_COLUMNS, then one `peak_bytes:<device>` column per device."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*CSV_COLUMNS, *(f"peak_bytes:{d}" for d in device_names)])
    for r in rows:
        w.writerow(
            [
                r.method,
                _num(r.step_time, ".9g"),
                r.failure or "",
                _num(r.speedup_vs_expert, ".6g"),
                _num(r.speedup_vs_single_gpu, ".6g"),
                _num(r.ratio_to_lower_bound, ".6g"),
                _num(r.place_seconds, ".6g"),
                " ".join(r.message.split()),
                *(f"{x:.0f}" for x in r.peak_memory),
            ]
        )
    return buf.getvalue()


def markdown_text(rows: Sequence[Row], device_names: Sequence[str], title: str = "") -> str:
    """The comparison as a Markdown table (peak memory in GiB, devices in the cluster's order)."""
    unit, uname = memory_unit(rows)
    head = [
        "method",
        "step time (s)",
        "vs expert",
        "vs single GPU",
        "/ lower bound",
        "place time (s)",
        f"peak memory ({uname}): " + ", ".join(short_device(d) for d in device_names),
    ]
    lines = [f"### {title}\n" if title else "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join(_cells(r, unit, " / ")) + " |")
    notes = [f"- {r.method}: {' '.join(r.message.split())}" for r in rows if r.message]
    return "\n".join(x for x in lines if x) + ("\n\n" + "\n".join(notes) if notes else "") + "\n"


def _cells(r: Row, unit: float, sep: str) -> list[str]:
    """One row of the comparison tables as text cells; `sep` joins the per-device memory."""
    return [
        r.method,
        status(r),
        _num(r.speedup_vs_expert, ".3g"),
        _num(r.speedup_vs_single_gpu, ".3g"),
        _num(r.ratio_to_lower_bound, ".3g"),
        _num(r.place_seconds, ".3f"),
        _mem(r, unit, sep),
    ]


def terminal_text(rows: Sequence[Row], device_names: Sequence[str]) -> str:
    """The comparison as an aligned plain-text table for the terminal."""
    unit, uname = memory_unit(rows)
    head = ["method", "step (s)", "vs expert", "vs 1 GPU", "/ bound", "place (s)", f"peak {uname} per device"]
    body = [_cells(r, unit, " ") for r in rows]
    width = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in width)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in width))] + [fmt.format(*b) for b in body]
    out.append("devices: " + ", ".join(device_names))
    return "\n".join(out) + "\n"


def short_device(name: str) -> str:
    """ "/device:GPU:0" -> "GPU:0" (column headers)."""
    return name.removeprefix("/device:")


def write_csv(path: str, rows: Sequence[Row], device_names: Sequence[str]) -> None:
    """Writes `csv_text(rows, device_names)` to `path` atomically."""
    atomic.write_text(path, csv_text(rows, device_names))


def write_markdown(path: str, rows: Sequence[Row], device_names: Sequence[str], title: str = "") -> None:
    """Writes `markdown_text(rows, device_names, title)` to `path` atomically."""
    atomic.write_text(path, markdown_text(rows, device_names, title))
