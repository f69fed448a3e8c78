"""placer-apply end to end on the tiny NMT with 2 logical CPU devices (all runs in one fresh process)."""

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from tests.cli import ROOT

CONFIG = "configs/nmt.py:tiny"


@pytest.fixture(scope="module")
def placements(tmp_path_factory, tiny_model, extracted_graph):
    """Three 2-GPU placements: one TF runs as given, one with a BiasAdd away from
    its MatMul (valid, but Grappler fuses the pair onto the MatMul's device) and
    one splitting a variable read from its variable (invalid)."""
    from placer.core.placement import Placement  # noqa: PLC0415

    folder = tmp_path_factory.mktemp("cli")
    model = tiny_model(CONFIG)
    graph = extracted_graph(CONFIG)
    # Encoder on GPU:0, everything else on GPU:1; colocated ops follow their group.
    devs = np.array([0 if n.startswith(("encoder/", "gradients/encoder/")) else 1 for n in graph.names])
    first = {}
    for i, key in enumerate(graph.colocation):
        if key:
            devs[i] = first.setdefault(key, devs[i])
    gpus = ["/device:GPU:0", "/device:GPU:1"]
    index = {n: i for i, n in enumerate(graph.names)}

    def flipped(op):
        d = devs.copy()
        d[index[op]] = 1 - d[index[op]]
        return Placement.from_ops(graph, d, gpus, method="split")

    # The output layer's BiasAdd (no colocation key) on the other device than its MatMul.
    bias = model.graph.get_operation_by_name("softmax/BiasAdd")
    assert bias.inputs[0].op.type == "MatMul" and not graph.colocation[index[bias.name]]
    # A variable read (it shares its variable's colocation key) on the other device.
    read = next(
        n for n, t in zip(graph.names, graph.types, strict=True) if t == "ReadVariableOp" and n.startswith("encoder/")
    )
    paths = {"folder": folder, "bias": bias.name, "matmul": bias.inputs[0].op.name, "read": read}
    for kind, p in (
        ("good", Placement.from_ops(graph, devs, gpus, method="split")),
        ("fused", flipped(bias.name)),
        ("bad", flipped(read)),
    ):
        paths[kind] = str(folder / f"{kind}.json")
        p.save(paths[kind])
    return paths


MAP = "--device_map=GPU:0=CPU:0,GPU:1=CPU:1"
# Each run's placer-apply flags (after --config, --logical_cpus=2 and --steps=2); {p} is the placements fixture.
RUNS = {
    "strict": ["--placement={p[good]}", MAP, "--strict", "--norewrite", "--report={p[folder]}/report.json"],
    "report_exists": ["--placement={p[good]}", MAP, "--report={p[folder]}/report.json"],
    "fused_strict": ["--placement={p[fused]}", MAP, "--strict"],
    "fused": ["--placement={p[fused]}", MAP, "--report={p[folder]}/fused_report.json"],
    "bad": ["--placement={p[bad]}", MAP, "--strict"],
    "no_map": ["--placement={p[good]}"],
}
# One fresh process (logical devices must be set before TF starts) runs placer-apply in turn, in process,
# for each entry of RUNS, and records its exit status, output and the report file as it was after the run.
SCRIPT = """
import json, os, sys
from graphs import local_cluster
local_cluster.configure_logical_cpus(2)
from tests import binaries

out = {}
for key, args in json.loads(sys.argv[1]).items():
    r = binaries.run("placer.apply_main", *args)
    report = next((a.split("=", 1)[1] for a in args if a.startswith("--report=")), None)
    text = open(report).read() if report and os.path.exists(report) else None
    out[key] = {"returncode": r.returncode, "stdout": r.stdout, "stderr": r.stderr, "report": text}
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def runs(placements):
    common = [f"--config={CONFIG}", "--logical_cpus=2", "--steps=2"]
    argv = {key: common + [a.format(p=placements) for a in args] for key, args in RUNS.items()}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(argv)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)  # fmt: skip
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, p.stderr[-3000:]
    return {k: types.SimpleNamespace(**v) for k, v in json.loads(lines[-1][len("RESULT ") :]).items()}


@pytest.mark.slow
def test_strict_run_verifies_every_op_and_writes_the_report(runs):
    p = runs["strict"]
    assert p.returncode == 0, p.stderr[-2000:]
    assert "step time:" in p.stdout and "moved by TF: 0" in p.stdout
    r = json.loads(p.report)
    assert r["moved"] == {} and r["fused"] == {}
    assert r["verified_ops"] > 500 and r["devices"] == ["/device:CPU:0", "/device:CPU:1"]
    assert {d: s["ops_placed"] > 0 for d, s in r["per_device"].items()} == {
        "/device:CPU:0": True,
        "/device:CPU:1": True,
    }
    # An existing report is kept: exit 2 before any work.
    p = runs["report_exists"]
    assert p.returncode == 2 and "exists" in p.stderr and p.report == runs["strict"].report


@pytest.mark.slow
def test_strict_fails_when_grappler_moves_a_fused_op(runs, placements):
    # The placement is valid, but the remapper fuses softmax/BiasAdd into the
    # MatMul feeding it, and the fused op runs on the MatMul's device.
    p = runs["fused_strict"]
    assert p.returncode == 2, p.stderr[-2000:]
    line = next(ln for ln in p.stderr.splitlines() if "--strict" in ln)
    assert "--strict: 1 ops did not run where placed" in line
    assert f"{placements['bias']!r} (BiasAdd) placed on /device:CPU:0, ran on /device:CPU:1" in line
    assert "Grappler fused it into" in line and "--norewrite" in line
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_without_strict_the_fused_op_is_listed(runs, placements):
    p = runs["fused"]
    assert p.returncode == 0, p.stderr[-2000:]
    assert "fused by Grappler into an op on another device: 1" in p.stdout
    assert f"  {placements['bias']}: placed on /device:CPU:0, ran on /device:CPU:1 as " in p.stdout
    assert "moved by TF: 0" in p.stdout
    r = json.loads(p.report)
    assert list(r["fused"]) == [placements["bias"]] and r["moved"] == {}
    assert r["fused"][placements["bias"]]["ran"] == "/device:CPU:1"
    assert "FusedMatMul" in r["fused"][placements["bias"]]["as"]


@pytest.mark.slow
def test_a_variable_read_away_from_its_variable_is_rejected_before_running(runs, placements):
    p = runs["bad"]
    assert p.returncode == 2, p.stderr[-2000:]
    line = next(ln for ln in p.stderr.splitlines() if "resource" in ln)
    assert "1 ops take a resource placed on another device" in line
    assert f"{placements['read']} on /device:CPU:1, its resource " in line and "the variable's device" in line
    assert "step time:" not in p.stdout and "Traceback" not in p.stderr


@pytest.mark.slow
def test_devices_missing_here_need_a_device_map(runs):
    p = runs["no_map"]
    assert p.returncode == 2
    assert "'/device:GPU:0', '/device:GPU:1' are not on this machine" in p.stderr and "--device_map" in p.stderr


def test_validate_names_a_read_split_from_its_variable():
    # In process: w -> Read/ReadVariableOp -> y -> loss, the read on another device than w.
    import tensorflow as tf  # noqa: PLC0415

    from graphs import extract  # noqa: PLC0415
    from placer.apply import devices as apply  # noqa: PLC0415
    from placer.core.errors import InputError  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415

    g = tf.Graph()
    with g.as_default():
        w = tf.compat.v1.get_variable("w", [3, 2], use_resource=True)
        tf.reduce_sum(tf.matmul(tf.ones([4, 3], name="x"), w.read_value(), name="y"), name="loss")
    graph = extract.extract(g, name="small")
    cpus = ["/device:CPU:0", "/device:CPU:1"]
    devs = [1 if n in ("y", "loss", "Read/ReadVariableOp") else 0 for n in graph.names]
    p = Placement.from_ops(graph, devs, cpus, method="test")
    # Extraction gives the read its variable's colocation key ...
    with pytest.raises(InputError, match=r"1 ops break colocation.*Read/ReadVariableOp on /device:CPU:1, group 'w'"):
        apply.validate(p, graph, cpus)
    # ... and with the TF graph the message says why.
    with pytest.raises(
        InputError,
        match=r"1 ops take a resource .* TF always runs such an op on the resource's device.*"
        r"Read/ReadVariableOp on /device:CPU:1, its resource w on /device:CPU:0",
    ):
        apply.validate(p, graph, cpus, tf_graph=g)
    assert apply.resource_splits(apply.op_devices(p), g) == [("Read/ReadVariableOp", "w")]
    # The placement TF will run (the read moved to w's device) passes.
    followed = apply.follow_resources(p, g)
    assert apply.op_devices(followed)["Read/ReadVariableOp"] == "/device:CPU:0"
    apply.validate(followed, graph, cpus, tf_graph=g)
