"""Every binary takes --model=FILE.py:FUNCTION (a tiny tf_keras model), and the example of examples/ runs end to end.

The binaries that place on this machine's devices (placer-apply, placer-measure
--measure=session, and the example's whole workflow) run in one fresh process,
which splits the CPU into 4 logical devices before TensorFlow starts; the
others run in this process.
"""

import json
import os
import re
import subprocess
import sys
import types

import pytest

from placer.core import io as graph_io
from placer.core.placement import Placement
from tests.binaries import run
from tests.cli import ROOT

MLP = os.path.join(ROOT, "tests", "testdata", "keras_models.py") + ":mlp"
MODEL = [f"--model={MLP}", "--batch_size=4"]


def _ok(r):
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    return r.stdout


@pytest.mark.slow
def test_extract_writes_the_models_costed_step(tmp_path):
    out = _ok(run("placer.extract_main", *MODEL, "--cluster=k80x2", f"--out={tmp_path / 'mlp.graph.json'}"))
    assert "graph: mlp" in out
    g = graph_io.load(str(tmp_path / "mlp.graph.json"))
    assert g.name == "mlp" and "train_op" in g.names and set(g.device_types) == {"CPU", "GPU"}
    assert not [n for n, t in zip(g.names, g.types, strict=True) if t.startswith("Placeholder")]
    # --batch_size without --model, and --model beside a config's model, are refused in one line.
    r = run("placer.extract_main", "--config=configs/nmt.py:tiny", "--batch_size=8")
    assert (
        r.returncode == 2
        and r.stderr.strip()
        == "error: --batch_size needs --model (a --config model sets it as --config.model.batch_size=N)"
    )
    r = run("placer.extract_main", "--config=configs/nmt.py:tiny", *MODEL)
    assert r.returncode == 2 and "give one of --config=configs/MODEL.py and --model" in r.stderr


@pytest.mark.slow
def test_measure_sim_and_grappler(tmp_path):
    for kind in ("sim", "grappler"):
        out = _ok(run("placer.measure_main", *MODEL, "--cluster=k80x2", "--baseline=single_gpu", f"--measure={kind}"))
        assert "step time" in out


def test_compare_places_the_model(tmp_path):
    out = _ok(run("placer.compare_main", *MODEL, "--cluster=k80x2", "--methods=single_gpu,scotch"))
    assert "graph: mlp" in out and "single_gpu" in out and "scotch" in out


@pytest.mark.slow
def test_train_searches_the_model(tmp_path):
    argv = [*MODEL, "--cluster=k80x2", f"--workdir={tmp_path}", "--max_placements=24"]
    _ok(run("placer.train_main", *argv, "--config.placer.train.method=annealing", "--noprogress"))
    summary = json.load(open(tmp_path / "summary.json"))
    assert summary["graph"] == "mlp" and summary["placements"] == 24
    assert Placement.load(str(tmp_path / "best_placement.json")).metadata["step_time"] == pytest.approx(
        summary["best_step_time"]
    )


@pytest.mark.slow
def test_place_with_a_pretrained_policy(tmp_path):
    from placer.rl import pretrain_lib  # noqa: PLC0415
    from tests.rl.test_transfer import tiny_config  # noqa: PLC0415

    policy = tmp_path / "policy"
    pretrain_lib.run(tiny_config("gen:chain:16:0"), workdir=str(policy), steps=1, seed=0, progress=False, log=print)
    out = _ok(
        run("placer.place_main", f"--policy={policy}", *MODEL, "--cluster=k80x2", "--max_placements=16",
            f"--out={tmp_path / 'p.json'}")
    )  # fmt: skip
    assert "mlp on k80x2" in out and Placement.load(str(tmp_path / "p.json")).metadata["samples"] == 16


# One fresh process with 4 logical CPUs runs each entry in turn, in process; {d} is the test's folder.
K3 = [f"--model={MLP}".replace(":mlp", ":keras3_mlp"), "--batch_size=4"]
TINY = ["--model=examples/tiny_cnn.py:tiny_cnn", "--batch_size=8"]
RUNS = {
    "compare_local": ["placer.compare_main", *MODEL, "--cluster=local:4", "--methods=single_cpu,scotch", "--out={d}/cmp"],
    "session": ["placer.measure_main", *MODEL, "--cluster=local:4", "--placement={d}/cmp/placement_scotch.json",
                "--measure=session"],
    "apply": ["placer.apply_main", *MODEL, "--placement={d}/cmp/placement_scotch.json", "--logical_cpus=4",
              "--steps=2", "--strict", "--report={d}/apply.json"],
    # A Keras 3 model: traced, placed, measured in a session and applied alike.
    "keras3_compare": ["placer.compare_main", *K3, "--cluster=local:4", "--methods=single_cpu", "--out={d}/k3"],
    "keras3_session": ["placer.measure_main", *K3, "--cluster=local:4", "--placement={d}/k3/placement_single_cpu.json",
                       "--measure=session"],
    "keras3_apply": ["placer.apply_main", *K3, "--placement={d}/k3/placement_single_cpu.json", "--logical_cpus=4",
                     "--steps=2", "--strict", "--report={d}/k3_apply.json"],
    # The example: docs/own_model.md's commands (example_extract, _train, _compare, _apply), added below.
}  # fmt: skip
SECTION = "## From the file to a placement you train with"


def doc_commands(folder: str) -> dict[str, list[str]]:
    """docs/own_model.md's commands, as written, on the tiny example: smaller batch and search, the apply checked."""
    text = open(os.path.join(ROOT, "docs", "own_model.md")).read()
    block = re.sub(r"\\\n\s*", " ", text[text.index(SECTION) :].split("```")[1])
    out = {}
    for line in block.splitlines():
        if not line.startswith(".venv/bin/placer-"):
            continue
        line = line.replace("examples/mobilenet_v2.py:mobilenet_v2", "examples/tiny_cnn.py:tiny_cnn --batch_size=8")
        line = line.replace("runs/mnv2", f"{folder}/run").replace("mnv2.graph.json.gz", f"{folder}/tiny.graph.json")
        argv = line.split()
        binary = argv[0].rsplit("-", 1)[1]
        extra = {
            # A fast search that runs on CPU-only clusters; 200 measured placements.
            "train": ["--config.placer.train.method=annealing_warm", "--noprogress"],
            "compare": ["--methods=single_cpu,scotch,random_search", "--reference=single_cpu"],
            "apply": ["--steps=2", "--strict", f"--report={folder}/example_apply.json"],
        }.get(binary, [])
        argv = [re.sub(r"^--max_placements=\d+$", "--max_placements=200", a) for a in argv[1:]] + extra
        out[f"example_{binary}"] = [f"placer.{binary}_main", *argv]
    assert list(out) == ["example_extract", "example_train", "example_compare", "example_apply"], out
    return out


SCRIPT = """
import json, sys
from graphs import local_cluster
local_cluster.configure_logical_cpus(4)
from tests import binaries

out = {}
for key, argv in json.loads(sys.argv[1]).items():
    r = binaries.run(argv[0], *argv[1:])
    out[key] = {"returncode": r.returncode, "stdout": r.stdout, "stderr": r.stderr}
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("own_model")
    argv = {key: [a.format(d=d) for a in args] for key, args in RUNS.items()} | doc_commands(str(d))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(argv)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=1200)  # fmt: skip
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, p.stderr[-3000:]
    runs = {k: types.SimpleNamespace(**v) for k, v in json.loads(lines[-1][len("RESULT ") :]).items()}
    return d, runs


@pytest.mark.slow
def test_session_measure_and_apply_run_the_model_on_logical_cpus(local_runs):
    d, runs = local_runs
    _ok(runs["compare_local"])
    assert "step time" in _ok(runs["session"])
    out = _ok(runs["apply"])
    report = json.load(open(d / "apply.json"))
    assert report["graph"]["name"] == "mlp" and report["moved"] == {} and report["fused"] == {}
    assert report["verified_ops"] > 50 and "moved by TF: 0" in out


@pytest.mark.slow
def test_a_keras3_model_is_compared_measured_and_applied(local_runs):
    d, runs = local_runs
    assert "single_cpu" in _ok(runs["keras3_compare"])
    assert "step time" in _ok(runs["keras3_session"])
    _ok(runs["keras3_apply"])
    report = json.load(open(d / "k3_apply.json"))
    assert report["moved"] == {} and report["fused"] == {} and report["verified_ops"] > 30


@pytest.mark.slow
def test_the_example_runs_end_to_end(local_runs):
    d, runs = local_runs
    assert "graph: tiny_cnn" in _ok(runs["example_extract"])
    summary = json.load(open(d / "run" / "summary.json"))
    assert summary["graph"] == "tiny_cnn" and summary["placements"] == 200
    compare = _ok(runs["example_compare"])
    assert "annealing_warm (" in compare and "random_search" in compare  # the search's row: its method and file
    assert os.path.exists(d / "run" / "compare" / "table.md")
    _ok(runs["example_apply"])
    report = json.load(open(d / "example_apply.json"))
    # --strict: every op of the step that ran was traced on the device the search gave it; the rest are outside
    # the step (initialisers) or were folded away by Grappler.
    assert report["moved"] == {} and report["fused"] == {}
    accounted = report["verified_ops"] + report["not_in_step"] + len(report["not_traced"])
    assert accounted == report["graph"]["ops"] and report["verified_ops"] > 50
    assert report["step_time_s"] > 0
