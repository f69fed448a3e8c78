"""Placements: one device per op, saved as versioned JSON (no TensorFlow)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import time
from collections.abc import Sequence

import numpy as np

from placer.core import atomic
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

    @staticmethod
    def from_json(data: dict, source: str = "placement") -> Placement:
        """Parses the JSON form; raises InputError naming the bad field."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(f"{source}: not a placement file (field 'format' is not {FORMAT!r})")
        if data.get("version") != VERSION:
            raise InputError(f"{source}: unsupported placement version {data.get('version')!r}")
        try:
            names = tuple(str(d) for d in data["devices"])
            ops = data["ops"]
            graph = data["graph"]
            pos = {n: i for i, n in enumerate(names)}
            bad = [d for d in ops.values() if d not in pos]
            if bad:
                raise InputError(f"{source}: field 'ops' names device {bad[0]!r} missing from 'devices'")
            groups = data.get("groups")
            return Placement(
                devices=np.array([pos[d] for d in ops.values()], dtype=np.int32),
                device_names=names,
                groups=None if groups is None else np.asarray(groups, dtype=np.int32),
                graph_name=str(graph["name"]),
                fingerprint=str(graph["fingerprint"]),
                op_names=tuple(ops.keys()),
                metadata=dict(data.get("metadata", {})),
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise InputError(f"{source}: malformed placement file (field {e})") from None

    @staticmethod
    def load(path: str) -> Placement:
        """Reads a placement file (plain or .gz JSON)."""
        try:
            with open(path, "rb") as f:
                raw = f.read()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            data = json.loads(raw)
        except (OSError, ValueError, EOFError) as e:
            raise InputError(f"{path}: cannot read placement ({e})") from None
        return Placement.from_json(data, source=path)


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
      InputError: another graph (op count or fingerprint), or a device the
        cluster does not have.
    """
    if len(placement.devices) != graph.num_ops:
        raise InputError(
            f"{source}: field 'ops' has {len(placement.devices)} entries, graph {graph.name!r} has {graph.num_ops} ops"
        )
    placement.check_graph(graph, source)
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
