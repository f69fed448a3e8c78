"""Placements: one device per op, saved as versioned JSON (no TensorFlow)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import time
from collections.abc import Sequence

import numpy as np

from placer.core import atomic, checks
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

FORMAT = "placer.placement"
VERSION = 1


@dataclasses.dataclass(frozen=True, eq=False)
class Placement:
    """A device index per op.

    Attributes:
      devices: [n_ops] int32, index into `device_names`.
      device_names: names of the cluster's devices, in index order.
      groups: [n_ops] int32 op-to-group map the placement came from, or None.
      graph_name: name of the graph it was made for.
      fingerprint: `OpGraph.fingerprint()` of that graph.
      op_names: names of the ops, in the graph's order (kept so a file can be
        checked against a graph op by op).
      metadata: method, step time (s), measure backend, cluster name, ...
    """

    devices: np.ndarray
    device_names: tuple[str, ...]
    groups: np.ndarray | None
    graph_name: str
    fingerprint: str
    op_names: tuple[str, ...]
    metadata: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.devices.setflags(write=False)
        if self.groups is not None:
            self.groups.setflags(write=False)

    @staticmethod
    def from_ops(
        graph: OpGraph,
        devices: Sequence[int],
        device_names: Sequence[str],
        *,
        groups: Sequence[int] | None = None,
        **metadata,
    ) -> Placement:
        """Builds a placement of `graph` from one device index per op.

        Raises:
          InputError: wrong length or a device index out of range.
        """
        dev = np.asarray(devices, dtype=np.int32).copy()
        if dev.shape != (graph.num_ops,):
            raise InputError(f"placement has {dev.size} devices for {graph.num_ops} ops of {graph.name!r}")
        if dev.size and (dev.min() < 0 or dev.max() >= len(device_names)):
            bad = int(np.argmax((dev < 0) | (dev >= len(device_names))))
            raise InputError(
                f"placement: op {graph.names[bad]!r} on device index {dev[bad]}, "
                f"but the cluster has {len(device_names)} devices"
            )
        grp = None if groups is None else np.asarray(groups, dtype=np.int32).copy()
        return Placement(
            dev, tuple(device_names), grp, graph.name, graph.fingerprint(), tuple(graph.names), dict(metadata)
        )

    @staticmethod
    def from_groups(
        graph: OpGraph, groups: Sequence[int], group_devices: Sequence[int], device_names: Sequence[str], **metadata
    ) -> Placement:
        """Builds a placement from a device per group and the op-to-group map."""
        grp = np.asarray(groups, dtype=np.int64)
        dev = np.asarray(group_devices, dtype=np.int32)[grp]
        return Placement.from_ops(graph, dev, device_names, groups=grp, **metadata)

    def check_graph(self, graph: OpGraph, source: str = "placement") -> None:
        """Raises InputError unless this placement was made for `graph`."""
        if self.fingerprint != graph.fingerprint():
            raise InputError(
                f"{source}: made for graph {self.graph_name!r} (fingerprint {self.fingerprint}), "
                f"not for {graph.name!r} (fingerprint {graph.fingerprint()})"
            )

    def with_metadata(self, **metadata) -> Placement:
        """Returns a copy with `metadata` merged in."""
        return dataclasses.replace(self, metadata={**self.metadata, **metadata})

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "graph": {"name": self.graph_name, "fingerprint": self.fingerprint},
            "devices": list(self.device_names),
            "ops": {n: self.device_names[d] for n, d in zip(self.op_names, self.devices, strict=True)},
            "groups": None if self.groups is None else [int(g) for g in self.groups],
            "metadata": {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **self.metadata},
        }

    def save(self, path: str) -> None:
        """Writes the placement JSON atomically (gzip if the path ends in .gz)."""
        text = json.dumps(self.to_json(), indent=1, default=_jsonable)
        if path.endswith(".gz"):
            atomic.write_bytes(path, gzip.compress(text.encode()))
        else:
            atomic.write_text(path, text + "\n")

    def for_graph(self, graph: OpGraph, source: str = "placement") -> Placement:
        """This placement matched to `graph` op by op, by name, in the graph's op order.

        Readers call this before using `devices` or `groups` as arrays over the
        graph's ops: the file may list its ops in any order.

        Raises:
          InputError: one line naming `source`: ops the graph lacks or graph ops
            the placement lacks (the first few named), or another graph's
            fingerprint.
        """
        placement = self
        if self.op_names != tuple(graph.names):
            index = {n: i for i, n in enumerate(self.op_names)}
            known = set(graph.names)
            extra = [n for n in self.op_names if n not in known]
            missing = [n for n in graph.names if n not in index]
            if extra or missing:
                parts = []
                if extra:
                    parts.append(f"{len(extra)} ops missing from graph {graph.name!r}: {_first(extra)}")
                if missing:
                    parts.append(f"{len(missing)} graph ops missing from the placement: {_first(missing)}")
                raise InputError(f"{source}: ops: {'; '.join(parts)}")
            order = np.array([index[n] for n in graph.names], dtype=np.int64)
            placement = dataclasses.replace(
                self,
                devices=self.devices[order],
                groups=None if self.groups is None else self.groups[order],
                op_names=tuple(graph.names),
            )
        placement.check_graph(graph, source)
        return placement

    @staticmethod
    def from_json(data: object, source: str = "placement") -> Placement:
        """Parses the JSON form, checking every field here; raises InputError naming the bad field."""
        data = checks.obj(data, source)
        if data.get("format") != FORMAT:
            raise InputError(f"{source}: format: not a placement file (expected {FORMAT!r})")
        if data.get("version") != VERSION:
            raise InputError(f"{source}: version: unsupported placement version {data.get('version')!r}")
        w = f"{source}: graph"
        graph = checks.obj(checks.get(data, "graph", w, required=True), w)
        graph_name = checks.text(checks.get(graph, "name", f"{w}.name", required=True), f"{w}.name", empty=True)
        fingerprint = checks.text(
            checks.get(graph, "fingerprint", f"{w}.fingerprint", required=True), f"{w}.fingerprint"
        )
        w = f"{source}: devices"
        names = tuple(
            checks.text(d, f"{w}[{k}]")
            for k, d in enumerate(checks.arr(checks.get(data, "devices", w, required=True), w, min_len=1))
        )
        if len(set(names)) != len(names):
            raise InputError(f"{w}: lists a device twice")
        pos = {n: i for i, n in enumerate(names)}
        w = f"{source}: ops"
        ops = checks.obj(checks.get(data, "ops", w, required=True), w)
        if not ops:
            raise InputError(f"{w}: places no op")
        for op, d in ops.items():
            checks.text(op, f"{w} key")
            if d not in pos:
                raise InputError(f"{w}[{op!r}]: device {d!r} is not in 'devices'")
        return Placement(
            devices=np.array([pos[d] for d in ops.values()], dtype=np.int32),
            device_names=names,
            groups=_groups(checks.get(data, "groups", source), len(ops), f"{source}: groups"),
            graph_name=graph_name,
            fingerprint=fingerprint,
            op_names=tuple(ops.keys()),
            metadata=dict(checks.obj(checks.get(data, "metadata", source, {}), f"{source}: metadata")),
        )

    @staticmethod
    def load(path: str) -> Placement:
        """Reads a placement file (plain or .gz JSON).

        Raises:
          InputError: one line naming `path` and the field (see `from_json`).
        """
        return Placement.from_json(checks.read_json(path, "placement"), source=path)


def _groups(raw: object, n_ops: int, where: str) -> np.ndarray | None:
    """Checks the `groups` field: null, or one group id in [0, n_ops) per op."""
    if raw is None:
        return None
    checks.arr(raw, where)
    if len(raw) != n_ops:
        raise InputError(f"{where}: has {len(raw)} entries for {n_ops} ops")
    return np.array([checks.integer(g, f"{where}[{k}]", 0, n_ops - 1) for k, g in enumerate(raw)], dtype=np.int32)


def _first(names: Sequence[str], n: int = 3) -> str:
    shown = ", ".join(repr(x) for x in names[:n])
    return shown + (f" and {len(names) - n} more" if len(names) > n else "")


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def on_cluster(placement: Placement, graph: OpGraph, cluster, source: str) -> Placement:
    """Checks a loaded placement against its graph and cluster, and re-indexes it to the cluster's devices.

    Args:
      placement: a loaded placement.
      graph: the graph it must have been made for.
      cluster: the placer.core.cluster.Cluster it is measured on.
      source: file name or label used in error messages.

    Returns:
      The same placement (groups and metadata kept) with device indices into
      `cluster.device_names`.

    Raises:
      InputError: ops the graph lacks or graph ops the placement lacks
        (matched by name), another graph (fingerprint), or a device the
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
