"""The README's "From a graph to a placement" commands, run as written on the tiny NMT.

The commands are read from README.md itself; only the model size and the
number of measured placements are made small, and placer-apply's GPUs are
mapped onto logical CPUs. TensorFlow's log level is left unset, so the test
also checks that no TF log line reaches the terminal: placer-train runs in a
fresh process for that, as its installed console script, and so does
placer-apply, which splits the CPU before TF starts (tests/placer/test_cli.py
checks placer-extract's extraction with Grappler costs the same way); the
others, and the refusals, run in this process.
placer-train runs a second time in this process, which must give the fresh
process's placement bit for bit: the same seed, the same result.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from graphs import pipeline
from placer.core import cluster as cluster_lib
from placer.core import io as graph_io
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from tests import binaries
from tests.cli import ROOT

SECTION = "## From a graph to a placement you train with"
# A line as TF's C++ logging (absl, glog) writes it: "I0000 00:00:1796.. 123 file.cc:42] ...".
NATIVE_LOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\]|^WARNING: All log messages before absl")


def readme_commands() -> list[list[str]]:
    """The placer-* commands of the README section, backslash continuations joined, as argv lists."""
    text = open(os.path.join(ROOT, "README.md")).read()
    block = text[text.index(SECTION) :].split("```")[1]
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.split() for line in joined.splitlines() if line.startswith(".venv/bin/placer-")]


def small(argv: list[str]) -> tuple[str, list[str]]:
    """The same command's module and arguments, on the tiny model with a 2-step search."""
    binary = argv[0].rsplit("/", 1)[1].removeprefix("placer-")
    args = []
    for a in argv[1:]:
        a = re.sub(r"^--config=configs/(\w+)\.py$", rf"--config={ROOT}/configs/\1.py:tiny", a)
        a = re.sub(r"^--steps=\d+$", "--steps=2", a)
        args.append(re.sub(r"^--max_placements=\d+$", f"--max_placements={PLACEMENTS}", a))
    if binary == "train":
        args += ["--noprogress"]
    if binary == "apply":  # this machine has no GPUs: the placement's devices go to logical CPUs
        gpus = ",".join(f"/device:GPU:{i}=/device:CPU:{i + 1}" for i in range(4))
        args += ["--logical_cpus=5", f"--device_map={gpus}"]
    return f"placer.{binary}_main", args


PLACEMENTS = 48  # placer-train's budget here (the README's is larger)

# placer-train runs in a fresh process, as installed, where TF prints its start-up lines unless the
# binary keeps them quiet; the others run in this process.
FRESH = ("placer.train_main", "placer.apply_main")  # placer-apply sets up logical CPUs before TF starts


def script(module: str) -> str:
    """The console script of a binary's module (placer.train_main -> .venv/bin/placer-train)."""
    return os.path.join(os.path.dirname(sys.executable), "placer-" + module.split(".")[1].removesuffix("_main"))


def _same_training(tmp_path, args: list[str], env) -> None:
    """placer-train's `args` again, in this process and another workdir: the same best placement and curve."""
    again = [re.sub(r"^--workdir=.*$", "--workdir=runs/again", a) for a in args]
    r = binaries.run("placer.train_main", *again, cwd=str(tmp_path), PLACER_CACHE=env["PLACER_CACHE"])
    assert r.returncode == 0, r.stderr[-3000:]
    here, there = (json.loads((tmp_path / "runs" / d / "best_placement.json").read_text()) for d in ("again", "nmt"))
    assert here["ops"] == there["ops"] and here["metadata"]["step_time"] == there["metadata"]["step_time"]
    rows = [(tmp_path / "runs" / d / "best_curve.csv").read_text().splitlines() for d in ("again", "nmt")]
    assert [row.split(",")[:2] for row in rows[0][1:]] == [row.split(",")[:2] for row in rows[1][1:]]


@pytest.mark.slow
def test_readme_steps_run_as_written_without_tf_noise(tmp_path):
    commands = readme_commands()
    assert [c[0].rsplit("-", 1)[1] for c in commands] == ["extract", "train", "measure", "compare", "apply"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_CPP")}
    env.update(PYTHONPATH=ROOT, PLACER_CACHE=str(tmp_path / "cache"), MPLBACKEND="Agg")
    for argv in commands:
        module, args = small(argv)
        if module in FRESH:
            r = subprocess.run(
                [script(module), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
            )
        else:
            r = binaries.run(module, *args, cwd=str(tmp_path), PLACER_CACHE=env["PLACER_CACHE"], MPLBACKEND="Agg")
        assert r.returncode == 0, f"{argv[0]}: {r.stderr[-3000:]}"
        noise = [x for x in r.stderr.splitlines() if NATIVE_LOG.match(x)]
        assert noise == [], f"{argv[0]} printed TF log lines: {noise[:3]}"
        if module == "placer.train_main":
            _same_training(tmp_path, args, env)
    graph = json.loads((tmp_path / "nmt.graph.json").read_text())
    assert graph["device_types"] == ["CPU", "GPU"]
    best = json.loads((tmp_path / "runs" / "nmt" / "best_placement.json").read_text())
    assert 0 < best["metadata"]["samples"] <= PLACEMENTS
    assert json.loads((tmp_path / "nmt.trace.json").read_text())


def test_graph_without_costs_is_refused_in_one_line(tmp_path):
    g = tmp_path / "g.json"
    graph_io.save(OpGraph.create("bare", ["a", "b"], ["MatMul"] * 2, [("a", "b", 8)]), str(g))  # no costs
    for binary, extra in (
        ("compare", []),
        ("measure", ["--baseline=single_gpu"]),
        ("train", [f"--workdir={tmp_path / 'w'}"]),
    ):
        r = binaries.run(f"placer.{binary}_main", f"--graph={g}", "--cluster=k80x4", *extra)
        assert r.returncode == 2, (binary, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(g) in lines[0] and "no op costs" in lines[0], (binary, r.stderr)
    assert not (tmp_path / "w").exists()


def test_graph_with_costs_for_other_device_types_is_refused(tmp_path):
    graph = OpGraph.create("cpu_only", ["a"], ["MatMul"], [], device_types=["CPU"], compute_cost=[[1.0]])
    gpus = cluster_lib.make("gpus", [cluster_lib.Device("/device:GPU:0", "GPU", 1 << 30)])
    graph_io.save(graph, str(tmp_path / "g.json"))
    with pytest.raises(InputError, match=r"g\.json: graph 'cpu_only' has op costs for CPU, none for .* \(GPU\)"):
        pipeline.load_graph(gpus, graph_path=str(tmp_path / "g.json"))
