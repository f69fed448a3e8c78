"""What every binary shares: --help lists its own flags, --verbosity, and config overrides without --config."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from configs import common
from placer import cli
from placer.core import io as graph_io
from placer.core.op_graph import OpGraph
from tests.cli import ROOT

BINARIES = [
    "extract_main",
    "measure_main",
    "train_main",
    "compare_main",
    "apply_main",
    "search_main",
    "pretrain_main",
    "place_main",
    "demo",
]


def python(code: str, *args: str, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, **kw
    )


@pytest.mark.parametrize("binary", BINARIES)
def test_help_lists_the_binarys_own_flags(binary):
    module = f"placer.{binary}"
    listed = python(
        f"import json, {module}; from absl import flags; "
        f"print(json.dumps([{module}.__doc__, {{f.name: f.help for f in flags.FLAGS.flags_by_module_dict()[{module!r}]}}]))"
    )
    doc, own = json.loads(listed.stdout)
    assert own, listed.stderr
    # As an installed console script runs it: sys.argv[0] is the script, not the module.
    r = python(f"import sys; sys.argv[0] = 'placer-x'; from {module} import run; run()", "--help")
    for name, help_text in own.items():
        assert f"--{name}:" in r.stdout or f"--[no]{name}:" in r.stdout, (name, r.stdout)
        assert " ".join(help_text.split())[:40] in " ".join(r.stdout.split()), (name, r.stdout)
    assert doc.splitlines()[0] in r.stdout


def test_verbosity_asked():
    assert not cli.verbosity_asked(["p"])
    assert not cli.verbosity_asked(["p", "--verbosity=-1"])
    assert cli.verbosity_asked(["p", "--verbosity=0"])
    assert cli.verbosity_asked(["p", "-v", "1"])
    assert cli.verbosity_asked(["p", "--v=2"])
    assert not cli.verbosity_asked(["p", "--verbose_thing=3"])


def test_config_overrides_work_with_graph_and_no_config(tmp_path):
    assert common.get_config().placer.train.warm_start  # the default does warm-start
    graph = OpGraph.create(
        "chain", ["a", "b"], ["MatMul"] * 2, [("a", "b", 8)], device_types=["GPU"], compute_cost=np.ones((2, 1))
    )
    graph_io.save(graph, str(tmp_path / "g.json"))
    spec = {
        "name": "two",
        "devices": [{"name": f"/device:GPU:{i}", "type": "GPU", "memory_bytes": 1 << 30} for i in range(2)],
        "links": {"default": {"bandwidth": 1e9, "latency": 0.0}},
    }
    (tmp_path / "c.json").write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=ROOT)
    base = [sys.executable, "-m", "placer.train_main", "--noprogress", f"--workdir={tmp_path / 'w'}"]
    r = subprocess.run(
        [*base, f"--graph={tmp_path / 'g.json'}", f"--cluster={tmp_path / 'c.json'}", "--steps=1",
         "--config.placer.train.warm_start=", "--config.placer.policy.hidden_size=8"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((tmp_path / "w" / "summary.json").read_text())["warm_start"] is None
    r = subprocess.run(base, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.strip() == "error: give --config=configs/MODEL.py or --graph=FILE"


def test_tf_logs_off_by_default_and_back_with_verbosity(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_CPP")}
    env["PYTHONPATH"] = ROOT
    argv = [sys.executable, "-m", "placer.extract_main", "--config=configs/nmt.py:tiny", "--costs=none"]
    quiet = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    loud = subprocess.run([*argv, "--verbosity=0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr + loud.stderr
    assert quiet.stderr == ""
    assert loud.stderr.strip(), "TensorFlow's own start-up lines come back with --verbosity=0"
    same = [x for x in quiet.stdout.splitlines() if "time:" not in x]
    assert same == [x for x in loud.stdout.splitlines() if "time:" not in x]
