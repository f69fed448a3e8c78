"""Reads and writes cost-annotated op graphs as JSON (no TensorFlow).

The format ("placer.opgraph", version 1) is described in docs/formats.md,
section "Op graph". A path ending in ".gz" is gzip-compressed.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib

import numpy as np

from placer.core import atomic
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

FORMAT = "placer.opgraph"
VERSION = 1


def to_json(graph: OpGraph) -> dict:
    """Returns the JSON object of `graph` (costs that are NaN are left out)."""
    ops = []
    for i, name in enumerate(graph.names):
        cost = {
            t: float(c) for t, c in zip(graph.device_types, graph.compute_cost[i], strict=True) if not math.isnan(c)
        }
        ops.append(
            {
                "name": str(name),
                "type": str(graph.types[i]),
                "output_shapes": [list(s) for s in graph.output_shapes[i]],
                "output_bytes": int(graph.output_bytes[i]),
                "persistent_bytes": int(graph.persistent_bytes[i]),
                "colocation": str(graph.colocation[i]),
                "cost": cost,
            }
        )
    edges = [
        {"src": str(graph.names[s]), "dst": str(graph.names[d]), "bytes": int(b), "control": bool(c)}
        for s, d, b, c in zip(graph.edge_src, graph.edge_dst, graph.edge_bytes, graph.edge_control, strict=True)
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": graph.name,
        "device_types": list(graph.device_types),
        "ops": ops,
        "edges": edges,
    }


def save(graph: OpGraph, path: str) -> None:
    """Writes `graph` to `path` atomically (gzip when the name ends in .gz)."""
    data = json.dumps(to_json(graph), separators=(",", ":")).encode()
    atomic.write_bytes(path, gzip.compress(data, mtime=0) if path.endswith(".gz") else data)


def load(path: str) -> OpGraph:
    """Reads a graph written by `save` (or by hand, per docs/formats.md).

    Raises:
      InputError: naming `path`, for a missing or unreadable file, bad JSON,
        a wrong format or version, a missing or malformed field, an edge naming
        an unknown op, or a cycle.
    """
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such graph file")
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if path.endswith(".gz"):
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read graph file ({e})") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: bad JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    return from_json(data, source=path)


def from_json(data: object, source: str = "graph") -> OpGraph:
    """Builds an OpGraph from the JSON object of the format; `source` names it in errors."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: top level must be a JSON object")
    if data.get("format") != FORMAT:
        raise InputError(f"{source}: field 'format' must be {FORMAT!r}, got {data.get('format')!r}")
    if data.get("version") != VERSION:
        raise InputError(f"{source}: unsupported version {data.get('version')!r} (expected {VERSION})")
    name = _field(data, "name", str, source)
    device_types = [str(t) for t in _field(data, "device_types", list, source)]
    ops = _field(data, "ops", list, source)
    edges = _field(data, "edges", list, source)
    try:
        names = [str(_field(o, "name", str, f"{source}: ops[{k}]")) for k, o in enumerate(ops)]
        types, shapes, obytes, pbytes, coloc = [], [], [], [], []
        cost = np.full((len(ops), len(device_types)), np.nan)
        for k, o in enumerate(ops):
            where = f"{source}: op {names[k]!r}"
            types.append(_field(o, "type", str, where))
            shapes.append([tuple(int(d) for d in s) for s in o.get("output_shapes", [])])
            obytes.append(int(o.get("output_bytes", 0)))
            pbytes.append(int(o.get("persistent_bytes", 0)))
            coloc.append(str(o.get("colocation", "")))
            c = o.get("cost", {})
            if not isinstance(c, dict):
                raise InputError(f"{where}: field 'cost' must be an object")
            for t, v in c.items():
                if t not in device_types:
                    raise InputError(f"{where}: cost for device type {t!r} not in device_types")
                cost[k, device_types.index(t)] = float(v)
        pairs, control = [], []
        for k, e in enumerate(edges):
            where = f"{source}: edges[{k}]"
            pairs.append((_field(e, "src", str, where), _field(e, "dst", str, where), int(e.get("bytes", 0))))
            control.append(bool(e.get("control", False)))
    except (TypeError, ValueError, AttributeError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"{source}: malformed value ({e})") from None
    return OpGraph.create(
        name,
        names,
        types,
        pairs,
        output_shapes=shapes,
        output_bytes=obytes,
        persistent_bytes=pbytes,
        colocation=coloc,
        device_types=device_types,
        compute_cost=cost,
        edge_control=control,
        source=source,
    )


def _field(obj: object, key: str, kind: type, where: str):
    """Returns obj[key], checking that obj is an object and the value has the expected type."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object")
    if key not in obj:
        raise InputError(f"{where}: missing field {key!r}")
    v = obj[key]
    if not isinstance(v, kind):
        raise InputError(f"{where}: field {key!r} must be a {kind.__name__}")
    return v
