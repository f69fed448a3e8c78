"""Chrome trace export of a simulated step (chrome://tracing, Perfetto).

One row (thread) per device and one per directed link that carried data; ops
and transfers are complete ("X") events with times in microseconds.
"""

from __future__ import annotations

import json

from placer.core import atomic
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph


def to_chrome_trace(result, graph: OpGraph, cluster: Cluster) -> dict:
    """Returns the Chrome trace of a SimResult made with trace=True.

    Args:
      result: placer.measure.simulator.SimResult with op times and transfers.
      graph: the simulated graph.
      cluster: the simulated cluster.

    Returns:
      {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}: a
      thread-name metadata event per row, then one "X" event per op (args:
      op name and type) and per transfer (args: bytes and producer op).

    Raises:
      InputError: the result was made without trace=True.
    """
    if result.op_start is None:
        raise InputError("simulation result has no schedule; simulate with trace=True")
    names = cluster.device_names
    events = []
    for d, name in enumerate(names):
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": d, "args": {"name": name}})
    links = sorted({(a, b) for a, b, *_ in result.transfers})
    link_tid = {ab: len(names) + i for i, ab in enumerate(links)}
    for (a, b), tid in link_tid.items():
        events.append(
            {"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": f"{names[a]} -> {names[b]}"}}
        )
    for op in range(graph.num_ops):
        events.append(
            {
                "ph": "X",
                "pid": 0,
                "tid": int(result.op_device[op]),
                "name": str(graph.types[op]),
                "ts": float(result.op_start[op]) * 1e6,
                "dur": float(result.op_finish[op] - result.op_start[op]) * 1e6,
                "args": {"op": str(graph.names[op]), "type": str(graph.types[op])},
            }
        )
    for a, b, start, end, nbytes, producer in result.transfers:
        events.append(
            {
                "ph": "X",
                "pid": 0,
                "tid": link_tid[(a, b)],
                "name": f"send {producer}",
                "ts": start * 1e6,
                "dur": (end - start) * 1e6,
                "args": {"bytes": nbytes, "producer": producer},
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "graph": graph.name,
            "cluster": cluster.name,
            "step_time_s": result.step_time if result.ok else None,
        },
    }


def write_chrome_trace(path: str, result, graph: OpGraph, cluster: Cluster) -> None:
    """Writes `to_chrome_trace(result, graph, cluster)` to `path` atomically."""
    atomic.write_text(path, json.dumps(to_chrome_trace(result, graph, cluster)) + "\n")
