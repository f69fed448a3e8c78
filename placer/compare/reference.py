"""Which placement the "vs" column of placer-compare compares with (no TensorFlow).

`--reference` names a baseline or a placement file; without it the expert's
placement is the reference, or, where the expert has none on this graph, the
fastest baseline that ran, and the header says which and why.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from baselines import registry
from placer.compare.compare_lib import Row, speedup
from placer.compare.tables import NOT_APPLICABLE


def _is_file(reference: str) -> bool:
    return reference.endswith((".json", ".json.gz")) or os.path.sep in reference


def with_reference(paths: Sequence[str], methods: list[str], reference: str | None) -> tuple[list[str], list[str]]:
    """(placement files, methods) with --reference added: a file to the files, a baseline to the methods."""
    paths = list(paths)
    if reference is not None and _is_file(reference):
        if reference not in paths:
            paths.append(reference)
    elif reference is not None and reference in registry.METHODS and reference not in methods:
        methods = [*methods, reference]
    return paths, methods


def choose_reference(rows: Sequence[Row], reference: str) -> tuple[str, str]:
    """The row the "vs" column compares with: `reference` when it ran, else the fastest baseline.

    Args:
      rows: what `compare` returned (baselines have a place time, given placements none).
      reference: the default reference (the expert's), which may have no placement on this graph.

    Returns:
      (the reference row's name, a header line saying which it is and why).
    """
    by = {r.method: r for r in rows}
    ref = by.get(reference)
    if ref is not None and ref.ok:
        return reference, f"reference: {reference}"
    ran = [r for r in rows if r.ok and r.place_seconds is not None]
    if ref is None:
        why = "is not among the compared placements"
    else:
        why = ("has no placement here" if ref.failure == NOT_APPLICABLE else "failed") + (
            f" ({' '.join(ref.message.split())})" if ref.message else ""
        )
    if not ran:
        return reference, f"reference: {reference}, which {why}; no baseline ran to take its place"
    fastest = min(ran, key=lambda r: r.step_time)
    return fastest.method, f"reference: {fastest.method}, the fastest baseline ({reference} {why})"


def relative_to(rows: Sequence[Row], reference: str) -> list[Row]:
    """`rows` with `speedup_vs_reference` against the row named `reference` (None where it did not run)."""
    ref = next((r.step_time for r in rows if r.method == reference and r.ok), None)
    return [dataclasses.replace(r, speedup_vs_reference=speedup(ref, r.step_time)) for r in rows]
