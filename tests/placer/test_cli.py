"""What every binary shares: --help lists its own flags, --verbosity, and config overrides without --config.

Each console script runs once as installed, in its own process (--help); the
TF log test needs fresh processes (what TF prints when it is first imported,
and while Grappler computes op costs); the rest run the binaries in this
process (tests/binaries.py).
"""

import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from absl import flags

from configs import common
from placer import cli
from placer.core import io as graph_io
from placer.core.op_graph import OpGraph
from tests import binaries
from tests.cli import ROOT

# The console scripts of setup.py and their modules; placer.demo is run with `python -m`.
SCRIPTS = {
    "placer-extract": "placer.extract_main",
    "placer-measure": "placer.measure_main",
    "placer-train": "placer.train_main",
    "placer-compare": "placer.compare_main",
    "placer-apply": "placer.apply_main",
    "placer-search": "placer.search_main",
    "placer-pretrain": "placer.pretrain_main",
    "placer-place": "placer.place_main",
}
# What --help exits with (placer.cli turns absl's 1 into 0).
HELP_EXIT = 0


def own_flags(module_name: str) -> tuple[str, dict[str, str]]:
    """The module's docstring and {flag name: help} of the flags it defines."""
    with binaries.isolated_flags():
        sys.modules.pop(module_name, None)
        module = importlib.import_module(module_name)
        own = {f.name: f.help for f in flags.FLAGS.flags_by_module_dict()[module_name]}
        sys.modules.pop(module_name, None)
    return module.__doc__, own


def check_help_lists(module_name: str, text: str) -> None:
    doc, own = own_flags(module_name)
    assert own
    for name, help_text in own.items():
        assert f"--{name}:" in text or f"--[no]{name}:" in text, (name, text)
        assert " ".join(help_text.split())[:40] in " ".join(text.split()), (name, text)
    assert doc.splitlines()[0] in text


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_installed_script_help_lists_the_binarys_own_flags(script):
    # The console script as installed (setup.py's entry point), in its own process: sys.argv[0] is the
    # script, not the module, and the flags listed must still be the binary's.
    path = os.path.join(os.path.dirname(sys.executable), script)
    r = subprocess.run([path, "--help"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == HELP_EXIT, r.stderr[-2000:]
    check_help_lists(SCRIPTS[script], r.stdout)


def test_demo_help_lists_its_own_flags():
    r = binaries.run("placer.demo", "--help", program="placer-demo")
    assert r.returncode == HELP_EXIT, r.stderr[-2000:]
    check_help_lists("placer.demo", r.stdout)


def test_verbosity_asked():
    assert not cli.verbosity_asked(["p"])
    assert not cli.verbosity_asked(["p", "--verbosity=-1"])
    assert cli.verbosity_asked(["p", "--verbosity=0"])
    assert cli.verbosity_asked(["p", "-v", "1"])
    assert cli.verbosity_asked(["p", "--v=2"])
    assert not cli.verbosity_asked(["p", "--verbose_thing=3"])


@pytest.mark.slow
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
    base = ["--noprogress", f"--workdir={tmp_path / 'w'}"]
    r = binaries.run(
        "placer.train_main", *base, f"--graph={tmp_path / 'g.json'}", f"--cluster={tmp_path / 'c.json'}", "--steps=1",
        "--config.placer.train.method=seq2seq", "--config.placer.train.warm_start=",
        "--config.placer.policy.hidden_size=8",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((tmp_path / "w" / "summary.json").read_text())["warm_start"] is None
    r = binaries.run("placer.train_main", *base)
    assert r.returncode == 2 and r.stderr.strip() == "error: give --config=configs/MODEL.py or --graph=FILE"


@pytest.mark.slow
def test_tf_logs_off_by_default_and_back_with_verbosity(tmp_path):
    # The README's first step, on the smallest model: extraction with Grappler's op costs, each run with an
    # empty cache of its own so that both build the model and run Grappler (where TF's C++ code would log).
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_CPP")}
    env["PYTHONPATH"] = ROOT
    argv = [sys.executable, "-m", "placer.extract_main", "--config=configs/rnnlm.py:tiny", "--cluster=k80x4"]
    quiet, loud = (
        subprocess.run(
            argv + extra,
            cwd=ROOT,
            env=dict(env, PLACER_CACHE=str(tmp_path / name)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        for name, extra in (("quiet", []), ("loud", ["--verbosity=0"]))
    )
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr + loud.stderr
    assert quiet.stderr == ""
    assert loud.stderr.strip(), "TensorFlow's own start-up lines come back with --verbosity=0"
    same = [x for x in quiet.stdout.splitlines() if "time:" not in x]
    assert same == [x for x in loud.stdout.splitlines() if "time:" not in x]
