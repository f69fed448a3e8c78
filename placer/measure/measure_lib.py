"""The library behind `placer-measure`: one placement measured, reported, and its schedule traced."""

from __future__ import annotations

import numpy as np

from placer.core import fmt
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.measurement import Measurement
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement, on_cluster
from placer.measure import bounds, registry


def check_flags(kind: str, trace: bool, path: str | None, baseline: str | None) -> None:
    """Refuses, before any work, an unknown backend, a trace from a backend other than the simulator,
    or other than exactly one of a placement file and a baseline.

    Raises:
      InputError: naming the flag.
    """
    if (path is None) == (baseline is None):
        raise InputError("give exactly one of --placement and --baseline")
    if kind not in registry.KINDS:
        raise InputError(f"--measure: unknown kind {kind!r} (valid: {', '.join(registry.KINDS)})")
    if trace and kind != "sim":
        raise InputError("--trace needs --measure=sim")


def load_placement(graph: OpGraph, cluster: Cluster, path: str) -> Placement:
    """A placement file checked against the graph and re-indexed to the cluster's devices.

    Raises:
      InputError: an unreadable file, or one made for another graph or cluster.
    """
    return on_cluster(Placement.load(path), graph, cluster, path)


def report_lines(m: Measurement, graph: OpGraph, cluster: Cluster, kind: str, level: str = "op") -> list[str]:
    """What `placer-measure` prints: step time or failure, busy time and peak memory per device, bytes
    moved, and the lower bound of placer.measure.bounds with the term that binds, and the ratio to it; `level` names the model level ("group", "op")."""
    lines = [
        f"graph: {graph.name} ({graph.num_ops} ops), cluster: {cluster.name} ({cluster.num_devices} devices), "
        f"measure: {kind} ({level} level)",
        f"step time: {fmt.step_time(m.step_time)}" if m.ok else f"failed ({m.failure}): {m.message}",
    ]
    if m.flagged:
        lines.append(f"FLAGGED, step time not to be trusted: {m.flag}")
    for d, dev in enumerate(cluster.devices):
        busy = m.busy_time[d] if len(m.busy_time) > d else 0.0
        peak = m.peak_memory[d] if len(m.peak_memory) > d else 0.0
        lines.append(
            f"  {dev.name:<16} busy {fmt.seconds(busy)}  peak memory {peak / 2**20:.1f} MiB "
            f"of {dev.memory_bytes / 2**20:.0f} MiB"
        )
    lines.append(f"bytes moved: {m.bytes_moved:.0f}")
    b = bounds.bound(graph, cluster)
    if m.ok and b.value > 0:
        lines.append(f"lower bound: {b.describe()}, step time / lower bound = {m.step_time / b.value:.2f}")
    else:
        lines.append(f"lower bound: {b.describe()}")
    return lines


MODEL_TOLERANCE = 0.05  # an exact placement's step time this far from its model makespan is reported


def exact_lines(placement: Placement, m: Measurement) -> list[str]:
    """For a placement of the exact placer (placer.measure.exact): its model makespan and proven bound
    beside the measured step time, and a line when the two differ by more than MODEL_TOLERANCE."""
    meta = placement.metadata
    if "model_makespan" not in meta:
        return []
    model = float(meta["model_makespan"])
    lines = [
        f"exact: model makespan {model:.4g} s, proven bound {float(meta.get('proven_bound', 0.0)):.4g} s "
        f"({meta.get('proven_level', '?')} level, {meta.get('status', '?')})"
    ]
    if m.ok and model > 0 and abs(m.step_time - model) > MODEL_TOLERANCE * model:
        lines.append(
            f"exact: the step time differs from the model makespan by {100 * (m.step_time / model - 1):+.1f}% "
            f"(more than {100 * MODEL_TOLERANCE:.0f}%): the measured schedule is not the model's"
        )
    return lines


def write_trace(path: str, simulator, placement: Placement, graph: OpGraph, cluster: Cluster) -> None:
    """Writes the Chrome trace of `placement`'s simulated step to `path`."""
    from placer.measure import trace  # noqa: PLC0415

    devices = np.asarray(placement.devices, dtype=np.int64)
    result = simulator.simulate(devices, op_group=placement.groups, trace=True)
    trace.write_chrome_trace(path, result, graph, cluster)
