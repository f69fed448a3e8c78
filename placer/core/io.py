"""Reads and writes cost-annotated op graphs as JSON (no TensorFlow).

The format ("placer.opgraph", version 1) is described in docs/formats.md,
section "Op graph". A path ending in ".gz" is gzip-compressed.
"""

from __future__ import annotations

import gzip
import json
import math

import numpy as np

from placer.core import atomic, checks
from placer.core.errors import InputError
from placer.core.op_graph import CALIBRATION_KEYS, OpGraph

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
        if graph.in_step is not None and not graph.in_step[i]:
            ops[-1]["in_step"] = False
    edges = [
        {"src": str(graph.names[s]), "dst": str(graph.names[d]), "bytes": int(b), "control": bool(c)}
        for s, d, b, c in zip(graph.edge_src, graph.edge_dst, graph.edge_bytes, graph.edge_control, strict=True)
    ]
    out = {
        "format": FORMAT,
        "version": VERSION,
        "name": graph.name,
        "device_types": list(graph.device_types),
        "ops": ops,
        "edges": edges,
    }
    if graph.calibration:
        out["calibration"] = dict(graph.calibration)
    return out


def save(graph: OpGraph, path: str) -> None:
    """Writes `graph` to `path` atomically (gzip when the name ends in .gz)."""
    data = json.dumps(to_json(graph), separators=(",", ":")).encode()
    atomic.write_bytes(path, gzip.compress(data, mtime=0) if path.endswith(".gz") else data)


def load(path: str) -> OpGraph:
    """Reads a graph written by `save` (or by hand, per docs/formats.md).

    Raises:
      InputError: naming `path`, for a missing or unreadable file, bad JSON,
        a wrong format or version, a missing or malformed field, a value out
        of its range, an edge naming an unknown op, or a cycle.
    """
    return from_json(checks.read_json(path, "graph"), source=path)


def from_json(data: object, source: str = "graph") -> OpGraph:
    """Builds an OpGraph from the JSON object of the format; `source` names it in errors.

    Every field is checked here, in one place, before anything sized by a
    field is allocated (ranges in placer/core/checks.py, docs/formats.md).
    """
    data = checks.obj(data, source)
    if data.get("format") != FORMAT:
        raise InputError(f"{source}: format: must be {FORMAT!r}, got {data.get('format')!r}")
    if data.get("version") != VERSION:
        raise InputError(f"{source}: version: unsupported {data.get('version')!r} (expected {VERSION})")
    name = checks.text(checks.get(data, "name", f"{source}: name", required=True), f"{source}: name", empty=True)
    w = f"{source}: device_types"
    device_types = [
        checks.text(t, f"{w}[{k}]")
        for k, t in enumerate(checks.arr(checks.get(data, "device_types", w, required=True), w))
    ]
    if len(set(device_types)) != len(device_types):
        raise InputError(f"{w}: lists a device type twice")
    ops = checks.arr(checks.get(data, "ops", f"{source}: ops", required=True), f"{source}: ops", min_len=1)
    checks.within_cap(len(ops), "ops", f"{source}: ops")
    edges = checks.arr(checks.get(data, "edges", f"{source}: edges", required=True), f"{source}: edges")
    cols = {t: j for j, t in enumerate(device_types)}
    names, types, shapes, obytes, pbytes, coloc = [], [], [], [], [], []
    cost = np.full((len(ops), len(device_types)), np.nan)
    for k, o in enumerate(ops):
        names.append(
            _op_fields(
                checks.obj(o, f"{source}: ops[{k}]"),
                f"{source}: ops[{k}]",
                cols,
                cost[k],
                (types, shapes, obytes, pbytes, coloc),
            )
        )
    if device_types:  # an op every device type leaves out could run nowhere: every placement would fail
        for k in np.flatnonzero(np.isnan(cost).all(axis=1)):
            raise InputError(
                f"{source}: ops[{k}].cost: op {names[k]!r} has a cost for none of {', '.join(device_types)}, so "
                "no device could run it; give its cost on at least one"
            )
    pairs, control = [], []
    for k, e in enumerate(edges):
        w = f"{source}: edges[{k}]"
        e = checks.obj(e, w)
        src = checks.text(checks.get(e, "src", f"{w}.src", required=True), f"{w}.src")
        dst = checks.text(checks.get(e, "dst", f"{w}.dst", required=True), f"{w}.dst")
        pairs.append((src, dst, checks.integer(checks.get(e, "bytes", f"{w}.bytes", 0), f"{w}.bytes")))
        control.append(checks.boolean(checks.get(e, "control", f"{w}.control", False), f"{w}.control"))
    calibration = _calibration(checks.get(data, "calibration", f"{source}: calibration", {}), source)
    graph = OpGraph.create(
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
    graph = graph.with_calibration(calibration) if calibration else graph
    in_step = {
        names[k]: checks.boolean(
            checks.get(o, "in_step", f"{source}: ops[{k}].in_step", True), f"{source}: ops[{k}].in_step"
        )
        for k, o in enumerate(ops)
    }
    return graph.with_step_ops(np.array([in_step[n] for n in graph.names], dtype=bool))


def _calibration(v: object, source: str) -> dict[str, float]:
    """Checks the optional "calibration" object: seconds in [0, 1] by a known key."""
    w = f"{source}: calibration"
    out = {}
    for k, x in checks.obj(v, w).items():
        if k not in CALIBRATION_KEYS:
            raise InputError(f"{w}: unknown key {k!r} (known: {', '.join(CALIBRATION_KEYS)})")
        out[k] = checks.number(x, f"{w}.{k}", 0.0, 1.0)
    return out


def _op_fields(o: dict, w: str, cols: dict[str, int], cost_row: np.ndarray, out: tuple) -> str:
    """Checks one op's fields, appends them to the lists in `out`, fills its cost row; returns its name."""
    types, shapes, obytes, pbytes, coloc = out
    name = checks.text(checks.get(o, "name", f"{w}.name", required=True), f"{w}.name")
    types.append(checks.text(checks.get(o, "type", f"{w}.type", required=True), f"{w}.type"))
    ws = f"{w}.output_shapes"
    shapes.append(
        tuple(
            tuple(
                checks.integer(d, f"{ws}[{i}][{j}]", -1, checks.MAX_BYTES)
                for j, d in enumerate(checks.arr(s, f"{ws}[{i}]"))
            )
            for i, s in enumerate(checks.arr(checks.get(o, "output_shapes", ws, []), ws))
        )
    )
    obytes.append(checks.integer(checks.get(o, "output_bytes", w, 0), f"{w}.output_bytes"))
    pbytes.append(checks.integer(checks.get(o, "persistent_bytes", w, 0), f"{w}.persistent_bytes"))
    coloc.append(checks.text(checks.get(o, "colocation", w, ""), f"{w}.colocation", empty=True))
    for t, v in checks.obj(checks.get(o, "cost", w, {}), f"{w}.cost").items():
        if t not in cols:
            raise InputError(f"{w}.cost: device type {t!r} not in device_types")
        cost_row[cols[t]] = checks.number(v, f"{w}.cost.{t}")
    return name
