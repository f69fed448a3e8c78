"""The line of bench/dispatch.py's section that says whether its figures are the library's CPU constants
(no flags, so tests can import it beside the other benches)."""

from __future__ import annotations

import math

from placer.core import cluster


def constants_line(dispatch: float, transfer_cost: float) -> str:
    """Whether the chosen figures (s) are the constants `--cluster=local` and the presets use (as written there, to
    3 significant figures)."""
    lib = (cluster.LOCAL_CPU_DISPATCH, cluster.LOCAL_CPU_TRANSFER_COST)
    names = "the CPU `dispatch` and `transfer_cost` of `--cluster=local` (`placer.core.cluster.LOCAL_CPU_DISPATCH`, "
    names += "`LOCAL_CPU_TRANSFER_COST`) and the CPU `dispatch` of the presets (docs/measure.md)"
    if all(math.isclose(x, c, rel_tol=5e-3) for x, c in zip((dispatch, transfer_cost), lib, strict=True)):
        return f"These figures are {names}."
    return (
        f"These figures are not {names}: those are {lib[0] * 1e9:.0f} ns and {lib[1] * 1e9:.0f} ns, from an earlier "
        'run (BENCHMARKS.md, "Earlier experiments (the simulator\'s calibration)").'
    )
