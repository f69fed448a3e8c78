"""Text forms of a comparison: the terminal table, Markdown and CSV, and why a column is n/a (no TensorFlow).

The rows are placer.compare.compare_lib.Row items; tables are laid out by
tabulate.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

import tabulate

from placer.core import fmt

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


def best(rows: Sequence):
    """The row (compare_lib.Row) with the smallest step time (None when every placement failed)."""
    ok = [r for r in rows if r.ok]
    return min(ok, key=lambda r: r.step_time) if ok else None


def status(row) -> str:
    """The step time with its unit (4 significant figures), or the failure as the paper writes it ("OOM")."""
    if row.ok:
        return fmt.step_time(row.step_time)
    return "OOM" if row.failure == "oom" else str(row.failure)


def against(speedup: float | None) -> str:
    """A speedup over a reference (reference time / this time) as the step time's change in words.

    >>> against(1.25), against(0.8), against(None)
    ('20.0% faster', '25.0% slower', '')
    """
    if speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return ""
    return fmt.change(1.0 / speedup, 1.0)


def gpu_column(reference: str) -> bool:
    """Whether the tables carry a "vs single GPU" column beside the reference's (not when it is the same)."""
    return reference != SINGLE_GPU


def notes(rows: Sequence, reference: str = EXPERT) -> list[str]:
    """Why a speedup column is empty: its reference row is missing, could not place, or failed."""
    by = {r.method: r for r in rows}
    out = []
    columns = [("vs " + reference, reference)] + ([("vs single GPU", SINGLE_GPU)] if gpu_column(reference) else [])
    for column, name in columns:
        r = by.get(name)
        if r is None:
            out.append(f"{column}: n/a, {name} is not among the compared placements")
        elif not r.ok:
            why = " ".join(r.message.split()) or status(r)
            out.append(
                f"{column}: n/a, {name} {'could not place' if r.failure == NOT_APPLICABLE else 'failed'} ({why})"
            )
    return out


def level_note(rows: Sequence) -> list[str]:
    """Which model level each measured row's step time comes from (group or op), in one line."""
    levels: dict[str, list[str]] = {}
    for r in rows:
        if getattr(r, "level", ""):
            levels.setdefault(r.level, []).append(r.method)
    if not levels:
        return []
    if len(levels) == 1:
        return [f"model level: {next(iter(levels))} for every measured row"]
    return ["model level: " + "; ".join(f"{lv}: {', '.join(m)}" for lv, m in sorted(levels.items()))]


def _num(x: float | None, fmt: str) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def memory_unit(rows: Sequence) -> tuple[float, str]:
    """(bytes per unit, unit name) for the peak-memory columns: GiB, or MiB when every peak is below 1 GiB."""
    top = max((x for r in rows for x in r.peak_memory), default=0.0)
    return (2.0**30, "GiB") if top >= 2**30 else (2.0**20, "MiB")


def _mem(r, unit: float, sep: str) -> str:
    return "" if r.failure == NOT_APPLICABLE else sep.join(f"{x / unit:.2f}" for x in r.peak_memory)


def csv_columns(reference: str = EXPERT) -> tuple[str, ...]:
    """CSV_COLUMNS with the reference's speedup column named after it (speedup_vs_<reference>), without
    speedup_vs_single_gpu when that is the reference's."""
    kept = (c for c in CSV_COLUMNS if gpu_column(reference) or c != "speedup_vs_single_gpu")
    return tuple(f"speedup_vs_{reference}" if c == "speedup_vs_expert" else c for c in kept)


def csv_text(rows: Sequence, device_names: Sequence[str], reference: str = EXPERT, bound=None) -> str:
    """The comparison as CSV: `csv_columns(reference)`, then one `peak_bytes:<device>` column per device;
    with `bound`, a last "bound" row (its seconds, ratio 1, the binding term as its message)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*csv_columns(reference), *(f"peak_bytes:{d}" for d in device_names)])
    for r in rows:
        w.writerow(
            [
                r.method,
                _num(r.step_time, ""),  # full precision: shortest repr
                r.failure or "",
                _num(r.speedup_vs_reference, ".6g"),
                *([_num(r.speedup_vs_single_gpu, ".6g")] if gpu_column(reference) else []),
                _num(r.ratio_to_lower_bound, ".6g"),
                _num(r.place_seconds, ""),
                " ".join(r.message.split()),
                *(f"{x:.0f}" for x in r.peak_memory),
            ]
        )
    if bound is not None:
        w.writerow([BOUND, bound.value, "", "", "", "1", "", bound.describe(), *("" for _ in device_names)])
    return buf.getvalue()


def _cells(r, unit: float, sep: str, gpu: bool = True) -> list[str]:
    """One row of the comparison tables as text cells; `sep` joins the per-device memory; `gpu`: with the
    "vs single GPU" cell."""
    return [
        r.method,
        status(r),
        against(r.speedup_vs_reference),
        *([against(r.speedup_vs_single_gpu)] if gpu else []),
        _num(r.ratio_to_lower_bound, ".3g"),
        "" if r.place_seconds is None else fmt.seconds(r.place_seconds),
        _mem(r, unit, sep),
    ]


BOUND = "bound"  # the row of the lower bound (placer.measure.bounds.Bound) under the placements


def _bound_cells(bound, gpu: bool = True) -> list[list[str]]:
    """The bound's row: its seconds, and 1 in the ratio column (every other row's ratio is to it)."""
    return [] if bound is None else [[BOUND, fmt.step_time(bound.value), "", *([""] if gpu else []), "1", "", ""]]


def _bound_lines(bound) -> list[str]:
    return [] if bound is None else [f"bound: {bound.describe()}; x lower bound is each step time over it"]


def _table(rows: Sequence, device_names: Sequence[str], reference: str, bound, markdown: bool) -> str:
    """The placements (and `bound`'s row) laid out by tabulate, in Markdown's wording or the terminal's."""
    unit, uname = memory_unit(rows)
    gpu = gpu_column(reference)
    vs = "step time vs" if markdown else "vs"
    head = ["method", "step time", f"{vs} {reference}", *([f"{vs} single GPU"] if gpu else [])]
    if markdown:
        devices = ", ".join(d.removeprefix("/device:") for d in device_names)
        head += ["step time / lower bound (x, lower is better)", "place time", f"peak memory ({uname}): {devices}"]
    else:
        head += ["x lower bound", "place time", f"peak {uname} per device"]
    cells = [_cells(r, unit, " / " if markdown else " ", gpu) for r in rows] + _bound_cells(bound, gpu)
    return tabulate.tabulate(cells, head, tablefmt="github" if markdown else "simple", disable_numparse=True)


def markdown_text(
    rows: Sequence, device_names: Sequence[str], title: str = "", reference: str = EXPERT, bound=None
) -> str:
    """The comparison as a Markdown table (devices in the cluster's order), then the failure and n/a notes;
    with `bound` (placer.measure.bounds.Bound) a "bound" row and the term that binds."""
    table = _table(rows, device_names, reference, bound, markdown=True)
    lines = [f"- {r.method}: {' '.join(r.message.split())}" for r in rows if r.message]
    lines += [f"- {n}" for n in notes(rows, reference) + level_note(rows) + _bound_lines(bound)]
    return (f"### {title}\n\n" if title else "") + table + "\n" + ("\n" + "\n".join(lines) + "\n" if lines else "")


def terminal_text(rows: Sequence, device_names: Sequence[str], reference: str = EXPERT, bound=None) -> str:
    """The comparison as an aligned plain-text table for the terminal, then why any column is n/a; with
    `bound` (placer.measure.bounds.Bound) a "bound" row and the term that binds."""
    table = _table(rows, device_names, reference, bound, markdown=False)
    out = [table, "devices: " + ", ".join(device_names)]
    against_whom = (
        f"vs {reference}, vs single GPU: each step time against theirs"
        if gpu_column(reference)
        else (f"vs {reference}: each step time against its")
    )
    out.append(
        f"{against_whom} (faster is better); x lower bound: step time / the lower bound (1 is the best possible)"
    )
    out += [
        f"{r.method}: {' '.join(r.message.split())}"
        for r in rows
        if r.message and (r.ok or r.failure == NOT_APPLICABLE)
    ]
    out += notes(rows, reference) + level_note(rows) + _bound_lines(bound)
    return "\n".join(out) + "\n"
