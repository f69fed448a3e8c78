"""placer-apply end to end on the tiny NMT with 2 logical CPU devices (each run in its own process)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = "configs/nmt.py:tiny"


@pytest.fixture(scope="module")
def placements(tmp_path_factory):
    """A 2-GPU placement TF runs as given, and one splitting a variable read from its variable."""
    import models  # noqa: PLC0415 (TF)
    from graphs import extract  # noqa: PLC0415
    from placer import apply  # noqa: PLC0415
    from placer.configs_util import load_config  # noqa: PLC0415
    from placer.placement import Placement  # noqa: PLC0415

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
    good = apply.follow_resources(Placement.from_ops(graph, devs, gpus, method="split"), model.graph)
    # Move one variable read away from its variable.
    where = apply.op_devices(good)
    read = next(
        n for n, t in zip(graph.names, graph.types, strict=True) if t == "ReadVariableOp" and n.startswith("encoder/")
    )
    bad_devs = good.devices.copy()
    bad_devs[good.op_names.index(read)] = 1 - gpus.index(where[read])
    bad = Placement.from_ops(graph, bad_devs, gpus, method="split")
    paths = {"good": str(folder / "good.json"), "bad": str(folder / "bad.json"), "folder": folder, "read": read}
    good.save(paths["good"])
    bad.save(paths["bad"])
    return paths


def _run(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "placer.apply_main", f"--config={CONFIG}", "--logical_cpus=2", "--steps=2", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


MAP = "--device_map=GPU:0=CPU:0,GPU:1=CPU:1"


def test_strict_run_verifies_every_op_and_writes_the_report(placements):
    report = str(placements["folder"] / "report.json")
    p = _run(f"--placement={placements['good']}", MAP, "--strict", "--norewrite", f"--report={report}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "step time:" in p.stdout and "moved by TF otherwise: 0" in p.stdout
    r = json.load(open(report))
    assert r["moved"] == {} and r["fused"] == {} and r["moved_to_resource"] == {}
    assert r["verified_ops"] > 500 and r["devices"] == ["/device:CPU:0", "/device:CPU:1"]
    assert {d: s["ops_placed"] > 0 for d, s in r["per_device"].items()} == {
        "/device:CPU:0": True,
        "/device:CPU:1": True,
    }
    # An existing report is kept: exit 2 before any work.
    before = open(report).read()
    p = _run(f"--placement={placements['good']}", MAP, f"--report={report}")
    assert p.returncode == 2 and "exists" in p.stderr and open(report).read() == before


def test_strict_fails_when_tf_must_move_a_variable_read(placements):
    p = _run(f"--placement={placements['bad']}", MAP, "--strict")
    assert p.returncode == 2, p.stderr[-2000:]
    assert "--strict: 1 ops read a resource" in p.stderr and placements["read"] in p.stderr
    assert "Traceback" not in p.stderr


def test_without_strict_the_move_is_listed(placements):
    p = _run(f"--placement={placements['bad']}", MAP, "--norewrite")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "moved by TF to the device of the resource they read (predicted): 1" in p.stdout
    assert placements["read"] in p.stdout and "moved by TF otherwise: 0" in p.stdout


def test_devices_missing_here_need_a_device_map(placements):
    p = _run(f"--placement={placements['good']}")
    assert p.returncode == 2
    assert "'/device:GPU:0', '/device:GPU:1' are not on this machine" in p.stderr and "--device_map" in p.stderr
