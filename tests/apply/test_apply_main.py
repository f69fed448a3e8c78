"""placer-apply end to end on the tiny NMT with 2 logical CPU devices (each run in its own process)."""

import json

import numpy as np
import pytest

from tests.cli import run_module

CONFIG = "configs/nmt.py:tiny"


@pytest.fixture(scope="module")
def placements(tmp_path_factory):
    """Three 2-GPU placements: one TF runs as given, one with a BiasAdd away from
    its MatMul (valid, but Grappler fuses the pair onto the MatMul's device) and
    one splitting a variable read from its variable (invalid)."""
    import models  # noqa: PLC0415 (TF)
    from graphs import extract  # noqa: PLC0415
    from placer.core.configs_util import load_config  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415

    folder = tmp_path_factory.mktemp("cli")
    model = models.build(load_config(CONFIG).model)
    graph = extract.extract(model.metagraph, name=model.name)
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


def _run(*args):
    return run_module("placer.apply_main", f"--config={CONFIG}", "--logical_cpus=2", "--steps=2", *args)


MAP = "--device_map=GPU:0=CPU:0,GPU:1=CPU:1"


def test_strict_run_verifies_every_op_and_writes_the_report(placements):
    report = str(placements["folder"] / "report.json")
    p = _run(f"--placement={placements['good']}", MAP, "--strict", "--norewrite", f"--report={report}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "step time:" in p.stdout and "moved by TF: 0" in p.stdout
    r = json.load(open(report))
    assert r["moved"] == {} and r["fused"] == {}
    assert r["verified_ops"] > 500 and r["devices"] == ["/device:CPU:0", "/device:CPU:1"]
    assert {d: s["ops_placed"] > 0 for d, s in r["per_device"].items()} == {
        "/device:CPU:0": True,
        "/device:CPU:1": True,
    }
    # An existing report is kept: exit 2 before any work.
    before = open(report).read()
    p = _run(f"--placement={placements['good']}", MAP, f"--report={report}")
    assert p.returncode == 2 and "exists" in p.stderr and open(report).read() == before


def test_strict_fails_when_grappler_moves_a_fused_op(placements):
    # The placement is valid, but the remapper fuses softmax/BiasAdd into the
    # MatMul feeding it, and the fused op runs on the MatMul's device.
    p = _run(f"--placement={placements['fused']}", MAP, "--strict")
    assert p.returncode == 2, p.stderr[-2000:]
    line = next(ln for ln in p.stderr.splitlines() if "--strict" in ln)
    assert "--strict: 1 ops did not run where placed" in line
    assert f"{placements['bias']!r} (BiasAdd) placed on /device:CPU:0, ran on /device:CPU:1" in line
    assert "Grappler fused it into" in line and "--norewrite" in line
    assert "Traceback" not in p.stderr


def test_without_strict_the_fused_op_is_listed(placements):
    report = str(placements["folder"] / "fused_report.json")
    p = _run(f"--placement={placements['fused']}", MAP, f"--report={report}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "fused by Grappler into an op on another device: 1" in p.stdout
    assert f"  {placements['bias']}: placed on /device:CPU:0, ran on /device:CPU:1 as " in p.stdout
    assert "moved by TF: 0" in p.stdout
    r = json.load(open(report))
    assert list(r["fused"]) == [placements["bias"]] and r["moved"] == {}
    assert r["fused"][placements["bias"]]["ran"] == "/device:CPU:1"
    assert "FusedMatMul" in r["fused"][placements["bias"]]["as"]


def test_a_variable_read_away_from_its_variable_is_rejected_before_running(placements):
    p = _run(f"--placement={placements['bad']}", MAP, "--strict")
    assert p.returncode == 2, p.stderr[-2000:]
    line = next(ln for ln in p.stderr.splitlines() if "resource" in ln)
    assert "1 ops take a resource placed on another device" in line
    assert f"{placements['read']} on /device:CPU:1, its resource " in line and "the variable's device" in line
    assert "step time:" not in p.stdout and "Traceback" not in p.stderr


def test_devices_missing_here_need_a_device_map(placements):
    p = _run(f"--placement={placements['good']}")
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
