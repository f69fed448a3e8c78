"""placer/apply/devices.py and placer/apply/run.py: validation, device maps, applying, verifying.

Hand-built graphs of a few ops check validation and device setting in this
process; the round trip on the tiny NMT across 4 logical CPU devices runs in
a subprocess, since logical devices must be set before TF starts.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from graphs import extract
from placer.apply import devices as apply
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CPUS = ["/device:CPU:0", "/device:CPU:1"]


def _graph(colocation=None):
    # x -> mm -> s (AsString: CPU kernel only); w colocated with mm when asked.
    return OpGraph.create(
        "g",
        ["x", "w", "mm", "s"],
        ["Const", "Const", "MatMul", "AsString"],
        [("x", "mm"), ("w", "mm"), ("mm", "s")],
        colocation=colocation,
    )


def _placement(graph, devs, names=CPUS):
    return Placement.from_ops(graph, devs, names, method="test")


# ----- device maps -------------------------------------------------------


def test_parse_device_map_normalises_names():
    m = apply.parse_device_map("GPU:0=/device:CPU:1, /gpu:1=cpu:0", known=["/device:GPU:0", "/device:GPU:1"])
    assert m == {"/device:GPU:0": "/device:CPU:1", "/device:GPU:1": "/device:CPU:0"}
    assert apply.parse_device_map(None) == {}


def test_parse_device_map_rejects_unknown_sources_naming_them():
    with pytest.raises(InputError, match=r"'/device:GPU:7'.*'/device:GPU:9'"):
        apply.parse_device_map("GPU:7=CPU:0,GPU:0=CPU:1,GPU:9=CPU:0", known=["/device:GPU:0"])
    with pytest.raises(InputError, match="SOURCE=TARGET"):
        apply.parse_device_map("GPU:0")
    with pytest.raises(InputError, match="twice"):
        apply.parse_device_map("GPU:0=CPU:0,/device:GPU:0=CPU:1")


def test_remap_merges_devices_mapped_together():
    g = _graph()
    p = _placement(g, [0, 1, 2, 3], ["/device:GPU:0", "/device:GPU:1", "/device:GPU:2", "/device:CPU:0"])
    r = apply.remap(
        p, {"/device:GPU:0": "/device:CPU:1", "/device:GPU:1": "/device:CPU:1", "/device:GPU:2": "/device:CPU:0"}
    )
    assert r.device_names == ("/device:CPU:1", "/device:CPU:0")
    assert apply.op_devices(r) == {
        "x": "/device:CPU:1",
        "w": "/device:CPU:1",
        "mm": "/device:CPU:0",
        "s": "/device:CPU:0",
    }
    assert r.fingerprint == p.fingerprint


# ----- validation --------------------------------------------------------


def test_validate_accepts_a_legal_placement():
    g = _graph()
    apply.validate(_placement(g, [0, 1, 1, 0]), g, CPUS)


def test_validate_rejects_fingerprint_mismatch():
    g = _graph()
    other = OpGraph.create(
        "g", ["x", "w", "mm", "s"], ["Const", "Const", "MatMul", "AsString"], [("x", "mm"), ("w", "mm"), ("x", "s")]
    )
    with pytest.raises(InputError, match="fingerprint"):
        apply.validate(_placement(other, [0, 0, 0, 0]), g, CPUS)


def test_validate_lists_missing_and_extra_ops():
    g = _graph()
    small = OpGraph.create("g", ["x", "mm", "zz"], ["Const", "MatMul", "Relu"], [("x", "mm"), ("mm", "zz")])
    with pytest.raises(InputError, match=r"1 ops missing from graph 'g': 'zz'; 2 graph ops missing.*'w', 's'"):
        apply.validate(_placement(small, [0, 0, 0]), g, CPUS)


def test_validate_rejects_devices_the_machine_lacks_unless_mapped():
    g = _graph()
    p = _placement(g, [0, 1, 1, 0], ["/device:CPU:0", "/device:GPU:1"])
    with pytest.raises(InputError, match=r"'/device:GPU:1' are not on this machine.*--device_map"):
        apply.validate(p, g, CPUS)
    apply.validate(p, g, CPUS, device_map={"/device:GPU:1": "/device:CPU:1"})
    with pytest.raises(InputError, match="unknown source devices '/device:GPU:5'"):
        apply.validate(p, g, CPUS, device_map={"/device:GPU:5": "/device:CPU:1"})


def test_validate_rejects_broken_colocation():
    g = _graph(colocation=["", "w", "w", ""])
    with pytest.raises(InputError, match=r"1 ops break colocation.*mm on /device:CPU:0, group 'w' on /device:CPU:1"):
        apply.validate(_placement(g, [0, 1, 0, 0]), g, CPUS)


def test_validate_rejects_ops_without_a_kernel_for_their_device_type():
    g = _graph()
    gpus = ["/device:CPU:0", "/device:GPU:0"]
    # AsString has only a CPU kernel; MatMul has a GPU one.
    apply.validate(_placement(g, [1, 1, 1, 0], gpus), g, gpus)
    with pytest.raises(InputError, match=r"1 ops have no kernel.*s \(AsString\) on /device:GPU:0"):
        apply.validate(_placement(g, [1, 1, 1, 1], gpus), g, gpus)


# ----- applying ----------------------------------------------------------


def _build_small():
    """A variable read on another device than the variable, in the default graph."""
    w = tf.compat.v1.get_variable("w", [3, 2], use_resource=True)
    x = tf.ones([4, 3], name="x")
    y = tf.matmul(x, w.read_value(), name="y")
    return tf.reduce_sum(y, name="loss")


def test_device_fn_and_graph_def_paths_agree():
    base = tf.Graph()
    with base.as_default():
        _build_small()
    graph = extract.extract(base, name="small")
    devs = [1 if n in ("y", "loss", "Read/ReadVariableOp") else 0 for n in graph.names]
    p = _placement(graph, devs)
    placed = apply.apply_to_graph_def(p, base.as_graph_def())
    by_graph_def = {n.name: n.device for n in placed.node}
    fn = apply.device_fn(p)
    with tf.Graph().as_default() as g2, tf.compat.v1.device(fn):
        _build_small()
    by_fn = {op.name: op.device for op in g2.get_operations()}
    assert set(by_fn) == set(by_graph_def)
    assert {n: by_fn[n] for n in fn.placed} == {n: by_graph_def[n] for n in fn.placed}
    assert by_fn["y"] == "/device:CPU:1" and by_fn["w"] == "/device:CPU:0"
    # TF builds a variable's initialiser ops outside the device scope (they run once,
    # not in the training step): only they escape the device function.
    escaped = sorted(set(by_fn) - set(fn.placed))
    assert escaped and all(n.startswith("w/") for n in escaped)
    assert fn.unplaced == []
    assert all(n.device == "" for n in base.as_graph_def().node)  # the input is not modified


def test_device_fn_reports_ops_the_placement_does_not_name():
    base = tf.Graph()
    with base.as_default():
        _build_small()
    graph = extract.extract(base, name="small")
    fn = apply.device_fn(_placement(graph, [0] * graph.num_ops))
    with tf.Graph().as_default(), tf.compat.v1.device(fn):
        _build_small()
        with tf.device("/device:CPU:1"):
            tf.constant(1.0, name="extra")
    assert fn.unplaced == ["extra"]


def test_resource_followers_move_a_read_to_its_variable():
    g = tf.Graph()
    with g.as_default():
        _build_small()
    where = {op.name: "/device:CPU:0" for op in g.get_operations()}
    where["Read/ReadVariableOp"] = "/device:CPU:1"
    where["y"] = "/device:CPU:1"
    assert apply.resource_followers(where, g) == {"Read/ReadVariableOp": "/device:CPU:0"}
    graph = extract.extract(g, name="small")
    p = _placement(graph, [CPUS.index(where[n]) for n in graph.names])
    followed = apply.op_devices(apply.follow_resources(p, g))
    assert followed["Read/ReadVariableOp"] == "/device:CPU:0" and followed["y"] == "/device:CPU:1"


# ----- round trip on the tiny NMT across 4 logical CPUs -------------------

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from graphs import local_cluster
    local_cluster.configure_logical_cpus(4)
    import models
    from graphs import extract
    from placer.apply import devices as apply
    from placer.apply import run as apply_run
    from placer.core.configs_util import load_config
    from placer.core.placement import Placement

    model = models.build(load_config("configs/nmt.py:tiny").model)
    graph = extract.extract(model.metagraph, name=model.name)
    # A placement learned for 4 GPUs and a CPU: colocated ops together.
    names = ["/device:GPU:0", "/device:GPU:1", "/device:GPU:2", "/device:GPU:3", "/device:CPU:0"]
    rng = np.random.default_rng(0)
    by_key, devs = {}, []
    for key in graph.colocation:
        d = int(rng.integers(5))
        devs.append(by_key.setdefault(key, d) if key else d)
    raw = Placement.from_ops(graph, devs, names, method="random")
    dmap = apply.parse_device_map("GPU:0=CPU:0,GPU:1=CPU:1,GPU:2=CPU:2,GPU:3=CPU:3", known=raw.device_names)
    local = local_cluster.discover().device_names
    out = {"local": list(local)}
    for kind, p in (("followed", apply.follow_resources(apply.remap(raw, dmap), model.graph)), ("raw", raw)):
        path = sys.argv[1] + f"/{kind}.placement.json"
        p.save(path)
        q = Placement.load(path)
        apply.validate(q, graph, local, device_map=dmap if kind == "raw" else None)
        q = apply.remap(q, dmap)
        asked = apply.op_devices(q)
        followers = apply.resource_followers(asked, model.graph)
        result = apply_run.run_placed(apply.apply_to_graph_def(q, model.metagraph), num_cpus=4, steps=2,
                                      rewrite=False)
        check = apply_run.verify(asked, result)
        out[kind] = {
            "devices_used": sorted(set(asked.values())),
            "checked": check.checked, "moved": check.moved, "fused": check.fused,
            "followers": followers,
            "not_traced_types": sorted({result.op_types[n] for n in check.not_traced}),
            "not_in_step": len(check.not_in_step),
        }
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    folder = str(tmp_path_factory.mktemp("apply"))
    p = subprocess.run(
        [sys.executable, "-c", SCRIPT, folder], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, p.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.slow
def test_round_trip_runs_every_traced_op_on_its_device(round_trip):
    r = round_trip["followed"]
    assert round_trip["local"] == [f"/device:CPU:{i}" for i in range(4)]
    assert r["devices_used"] == round_trip["local"]  # the 4-GPU placement retargeted onto 4 CPUs
    assert r["moved"] == {} and r["fused"] == {} and r["followers"] == {}
    assert r["checked"] > 500
    # With rewrites off, only duplicate constants and shape ops go untraced.
    assert set(r["not_traced_types"]) <= {"Const", "Shape"}


@pytest.mark.slow
def test_placement_honouring_extracted_colocation_runs_where_placed(round_trip):
    # Extraction gives every op that takes a variable's handle the variable's
    # colocation key, so a placement that keeps keys together leaves TF's
    # placer nothing to move.
    r = round_trip["raw"]
    assert len(r["devices_used"]) == 4
    assert r["followers"] == {}
    assert r["moved"] == {}
    assert r["fused"] == {}
