"""The bad-input corpus, its files: hostile graph, cluster and placement files and the good ones they spoil.

The cases are listed with the flag and output-path cases in
bench/testing/badinput/cases.py; each is a file whose field or bytes are spoiled and
the words its one-line error must hold.
"""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import random
from collections.abc import Callable

# a (1 s on GPU) -> b (2 s) -> c (3 s), 1000 bytes from a to b.
GRAPH = {
    "format": "placer.opgraph",
    "version": 1,
    "name": "chain",
    "device_types": ["CPU", "GPU"],
    "ops": [
        {"name": n, "type": "T", "output_bytes": 8, "persistent_bytes": 0, "cost": {"CPU": 10.0, "GPU": c}}
        for n, c in (("a", 1.0), ("b", 2.0), ("c", 3.0))
    ],
    "edges": [{"src": "a", "dst": "b", "bytes": 1000}, {"src": "b", "dst": "c", "bytes": 8}],
}
CLUSTER = {
    "name": "two",
    "devices": [
        {"name": "/device:CPU:0", "type": "CPU", "memory_bytes": 2**30},
        {"name": "/device:GPU:0", "type": "GPU", "memory_bytes": 2**30, "speed": 1.0},
    ],
    "links": {"default": {"bandwidth": 1e10, "latency": 1e-5}, "pairs": []},
}
DEVICES = ["/device:CPU:0", "/device:GPU:0"]


def fingerprint(graph: dict) -> str:
    """`OpGraph.fingerprint()` of the chain, without importing the project here."""
    from placer.core import io  # noqa: PLC0415

    return io.from_json(graph).fingerprint()


def placement(ops: dict | None = None, **fields) -> dict:
    """A placement of the chain (all on the GPU unless `ops`), with `fields` replaced."""
    p = {
        "format": "placer.placement",
        "version": 1,
        "graph": {"name": "chain", "fingerprint": fingerprint(GRAPH)},
        "devices": DEVICES,
        "ops": ops if ops is not None else {"a": DEVICES[1], "b": DEVICES[1], "c": DEVICES[1]},
        "groups": None,
        "metadata": {},
    }
    p.update(fields)
    return p


def with_field(data: dict, path: str, value) -> dict:
    """A copy of `data` with the field at `path` ("ops.0.output_bytes") set to `value`."""
    out = copy.deepcopy(data)
    *keys, last = path.split(".")
    node = out
    for k in keys:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[int(last) if isinstance(node, list) else last] = value
    return out


def graph_with(path: str, value) -> dict:
    """The chain with the field at `path` set to `value`."""
    return with_field(GRAPH, path, value)


def cluster_with(path: str, value) -> dict:
    """The two-device cluster with the field at `path` ("devices.1.speed") set to `value`."""
    return with_field(CLUSTER, path, value)


def as_json(data) -> bytes:
    """JSON as Python writes it (NaN and Infinity kept, as a careless writer would)."""
    return json.dumps(data).encode("utf-8", "surrogatepass")


def noise(n: int = 512) -> bytes:
    """Random bytes, the same on every run."""
    return random.Random(17).randbytes(n)


@dataclasses.dataclass(frozen=True)
class Case:
    """One hostile input.

    Attributes:
      name: short id.
      kind: "graph", "cluster", "placement", "flag" or "output".
      what: one line saying what is wrong.
      content: the bytes of the hostile file (the graph, cluster or
        placement file of `kind`), or None when the files are the good ones.
      words: what the error line must hold besides "error:" ({dir} is the
        case's folder).
      argv: the binary and its flags, given the case's folder; default
        placer-measure of the graph, cluster and placement with a trace.
      setup: makes extra files or folders in the case's folder.
    """

    name: str
    kind: str
    what: str
    content: bytes | None
    words: tuple[str, ...]
    argv: Callable[[str], list[str]] | None = None
    setup: Callable[[str], None] | None = None


def measure_argv(d: str) -> list[str]:
    return [
        "placer.measure_main",
        f"--graph={d}/g.json",
        f"--cluster={d}/c.json",
        f"--placement={d}/p.json",
        f"--trace={d}/out.trace.json",
    ]


def _g(name, what, content, *words):
    return Case(name, "graph", what, content, ("g.json", *words))


def _c(name, what, content, *words):
    return Case(name, "cluster", what, content, ("c.json", *words))


def _p(name, what, content, *words):
    return Case(name, "placement", what, content, ("p.json", *words))


def _file_cases() -> list[Case]:
    gz = gzip.compress(as_json(GRAPH))
    cycle = graph_with("edges", GRAPH["edges"] + [{"src": "c", "dst": "a"}])
    return [
        _g("graph-truncated-gzip", "a gzip file cut in half", gz[: len(gz) // 2], "gzip"),
        _g("graph-empty", "an empty file", b"", "bad JSON"),
        _g("graph-random-bytes", "512 random bytes", noise(), "UTF-8"),
        _g("graph-bad-json", "a JSON object cut short", as_json(GRAPH)[:-7], "bad JSON"),
        _g("graph-not-object", "a JSON list at the top", b"[1, 2]", "JSON object"),
        _g("graph-version", "version 2", as_json(graph_with("version", 2)), "version"),
        _g("graph-zero-ops", "no ops at all", as_json(graph_with("ops", [])), "ops"),
        _g("graph-ops-null", "ops: null", as_json(graph_with("ops", None)), "ops"),
        _g("graph-cycle", "a cycle c -> a", as_json(cycle), "cycle"),
        _g("graph-duplicate-op", "two ops named a", as_json(graph_with("ops.1.name", "a")), "duplicate", "'a'"),
        _g("graph-name-null", "an op name of null", as_json(graph_with("ops.0.name", None)), "ops[0].name"),
        _g("graph-name-int", "an op name of 42", as_json(graph_with("ops.0.name", 42)), "ops[0].name"),
        _g("graph-name-empty", 'an op name of ""', as_json(graph_with("ops.0.name", "")), "ops[0].name"),
        _g(
            "graph-lone-surrogate",
            "an op name holding a lone surrogate",
            as_json(graph_with("ops.0.name", "a\ud800")),
            "ops[0].name",
            "surrogate",
        ),
        _g(
            "graph-output-bytes-huge",
            "output_bytes 1e308",
            as_json(graph_with("ops.0.output_bytes", 1e308)),
            "ops[0].output_bytes",
        ),
        _g(
            "graph-output-bytes-neg",
            "output_bytes -1",
            as_json(graph_with("ops.0.output_bytes", -1)),
            "ops[0].output_bytes",
        ),
        _g(
            "graph-persistent-bytes-huge",
            "persistent_bytes 1e308",
            as_json(graph_with("ops.1.persistent_bytes", 1e308)),
            "ops[1].persistent_bytes",
        ),
        _g("graph-edge-bytes-huge", "edge bytes 1e308", as_json(graph_with("edges.0.bytes", 1e308)), "edges[0].bytes"),
        _g("graph-edge-bytes-neg", "edge bytes -1", as_json(graph_with("edges.0.bytes", -1)), "edges[0].bytes"),
        _g(
            "graph-cost-inf",
            "an op cost of Infinity",
            as_json(graph_with("ops.2.cost.GPU", float("inf"))),
            "ops[2].cost.GPU",
        ),
        _g(
            "graph-cost-1e400",
            "an op cost of 1e400 (a float overflow)",
            as_json(graph_with("ops.2.cost.GPU", 12345.5)).replace(b"12345.5", b"1e400"),
            "ops[2].cost.GPU",
        ),
        _g(
            "graph-cost-nan",
            "an op cost of NaN",
            as_json(graph_with("ops.0.cost.CPU", float("nan"))),
            "ops[0].cost.CPU",
        ),
        _g("graph-cost-neg", "an op cost of -1", as_json(graph_with("ops.0.cost.CPU", -1)), "ops[0].cost.CPU"),
        _g("graph-cost-type", "a cost for a device type not listed", as_json(graph_with("ops.0.cost.TPU", 1)), "TPU"),
        _g(
            "graph-edge-unknown", "an edge to an op that is not there", as_json(graph_with("edges.1.dst", "zz")), "'zz'"
        ),
        _g("graph-shapes", 'output_shapes "x"', as_json(graph_with("ops.0.output_shapes", "x")), "output_shapes"),
        _g("graph-control", 'control "yes"', as_json(graph_with("edges.0.control", "yes")), "edges[0].control"),
        _c("cluster-random-bytes", "512 random bytes", noise(), "UTF-8"),
        _c("cluster-no-devices", "devices: []", as_json(cluster_with("devices", [])), "devices"),
        _c(
            "cluster-speed-nan", "speed NaN", as_json(cluster_with("devices.1.speed", float("nan"))), "devices[1].speed"
        ),
        _c("cluster-speed-zero", "speed 0", as_json(cluster_with("devices.1.speed", 0)), "devices[1].speed"),
        _c(
            "cluster-name-null",
            "a device name of null",
            as_json(cluster_with("devices.0.name", None)),
            "devices[0].name",
        ),
        _c("cluster-name-int", "a device name of 42", as_json(cluster_with("devices.0.name", 42)), "devices[0].name"),
        _c("cluster-name-empty", 'a device name of ""', as_json(cluster_with("devices.0.name", "")), "devices[0].name"),
        _c(
            "cluster-duplicate",
            "two devices of one name",
            as_json(cluster_with("devices.1.name", DEVICES[0])),
            "duplicate",
        ),
        _c(
            "cluster-gflops-neg",
            "peak_gflops -1",
            as_json(cluster_with("devices.1.peak_gflops", -1)),
            "devices[1].peak_gflops",
        ),
        _c(
            "cluster-memory-huge",
            "memory_bytes 1e308",
            as_json(cluster_with("devices.1.memory_bytes", 1e308)),
            "memory_bytes",
        ),
        _c("cluster-links-list", "links: []", as_json(cluster_with("links", [])), "links"),
        _c(
            "cluster-bandwidth-null",
            "bandwidth null",
            as_json(cluster_with("links.default.bandwidth", None)),
            "links.default.bandwidth",
        ),
        _c(
            "cluster-latency-text",
            'latency "x"',
            as_json(cluster_with("links.default.latency", "x")),
            "links.default.latency",
        ),
        _c(
            "cluster-pair-unknown",
            "a link to a device that is not there",
            as_json(cluster_with("links.pairs", [{"src": DEVICES[0], "dst": "/device:GPU:9"}])),
            "links.pairs[0].dst",
        ),
        _p("placement-groups-huge", "groups of 10^9", as_json(placement(groups=[10**9, 0, 0])), "groups[0]"),
        _p("placement-groups-neg", "groups -1", as_json(placement(groups=-1)), "groups"),
        _p("placement-groups-text", 'groups "x"', as_json(placement(groups="x")), "groups"),
        _p("placement-groups-short", "two groups for three ops", as_json(placement(groups=[0, 1])), "groups"),
        _p("placement-metadata-text", 'metadata "x"', as_json(placement(metadata="x")), "metadata"),
        _p(
            "placement-extra-op",
            "an op the graph lacks",
            as_json(placement({"a": DEVICES[1], "b": DEVICES[1], "c": DEVICES[1], "extra/op": DEVICES[1]})),
            "'extra/op'",
        ),
        _p(
            "placement-missing-op",
            "an op of the graph left out",
            as_json(placement({"a": DEVICES[1], "b": DEVICES[1]})),
            "'c'",
        ),
        _p(
            "placement-unknown-device",
            "an op on a device not in devices",
            as_json(placement({"a": DEVICES[1], "b": "/device:GPU:7", "c": DEVICES[1]})),
            "/device:GPU:7",
        ),
        _p(
            "placement-fingerprint",
            "made for another graph",
            as_json(placement(graph={"name": "chain", "fingerprint": "0" * 16})),
            "fingerprint",
        ),
        _p("placement-random-bytes", "512 random bytes", noise(), "UTF-8"),
        *_limit_cases(),
    ]


def deep(levels: int = 100_000) -> bytes:
    """A JSON array nested `levels` deep."""
    return b"[" * levels + b"]" * levels


def _limit_cases() -> list[Case]:
    # A second "ops" key after the real one: a reader keeping the last would measure one op.
    second_ops = as_json(GRAPH)[:-1] + b', "ops": [{"name": "x", "type": "T"}]}'
    tpu = cluster_with(
        "devices", [*CLUSTER["devices"], {"name": "/device:TPU:0", "type": "TPU", "memory_bytes": 2**30}]
    )
    return [
        _g("graph-deep", "a graph nested 100,000 levels deep", deep(), "nested"),
        _c("cluster-deep", "a cluster nested 100,000 levels deep", deep(), "nested"),
        _p("placement-deep", "a placement nested 100,000 levels deep", deep(), "nested"),
        _g(
            "graph-long-number",
            "output_bytes of 100,000 digits",
            as_json(graph_with("ops.0.output_bytes", 12345)).replace(b"12345", b"7" * 100_000),
            "digits",
        ),
        _g("graph-duplicate-key", 'a second "ops" key holding one op', second_ops, "'ops'", "twice"),
        _c(
            "cluster-duplicate-key",
            'a device with "speed" given twice',
            as_json(CLUSTER).replace(b'"speed": 1.0', b'"speed": 1.0, "speed": 9.0'),
            "'speed'",
            "twice",
        ),
        Case(
            "cluster-type-without-costs",
            "cluster",
            "a TPU device, a type the graph's costs lack",
            as_json(tpu),
            ("g.json", "TPU"),
        ),
    ]


FILE_CASES: list[Case] = _file_cases()
