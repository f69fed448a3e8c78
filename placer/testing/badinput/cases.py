"""The bad-input corpus: hostile files, flag values and output paths, each with its expected one-line error.

Every case is run as a user would run it (a binary, exit status, stderr) by
`runner.run_case`: it must exit with status 2, print exactly one stderr line
that starts with "error:" and holds every expected word (the file, field or
op), and leave no new or changed file behind. `tests/badinput/test_corpus.py`
runs the file cases (placer/testing/badinput/inputs.py) through their readers
in-process and some cases end to end; `bench/probe.py` runs them all end to
end and writes the table to BENCHMARKS.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from placer.testing import ROOT
from placer.testing.badinput.inputs import (
    CLUSTER,
    DEVICES,
    FILE_CASES,
    GRAPH,
    Case,
    as_json,
    graph_with,
    measure_argv,
    placement,
)

__all__ = ["CASES", "CLUSTER", "DEVICES", "GRAPH", "Case", "as_json", "graph_with", "placement"]


def _flag(name, what, argv, *words):
    return Case(name, "flag", what, None, words, argv=lambda d: argv)


def _flag_cases() -> list[Case]:
    nmt = os.path.join(ROOT, "configs", "nmt.py")
    tiny = f"--config={nmt}:tiny"
    return [
        _flag(
            "train-measure", "--measure=nope", ["placer.train_main", tiny, "--workdir=w", "--measure=nope"], "--measure"
        ),
        _flag(
            "search-policy",
            "--policy=nope",
            ["placer.search_main", "--jobs=x", "--workdir=w", "--policy=nope"],
            "--policy",
        ),
        _flag(
            "train-variant",
            "--config=configs/nmt.py:bogus",
            ["placer.train_main", f"--config={nmt}:bogus", "--workdir=w"],
            "bogus",
        ),
        _flag(
            "train-config-missing",
            "--config=configs/nope.py",
            ["placer.train_main", "--config=configs/nope.py", "--workdir=w"],
            "configs/nope.py",
        ),
        _flag(
            "extract-target-groups",
            "--target_groups=-1",
            ["placer.extract_main", "--graph=g", "--target_groups=-1"],
            "--target_groups",
        ),
        _flag(
            "extract-top-types", "--top_types=-1", ["placer.extract_main", "--graph=g", "--top_types=-1"], "--top_types"
        ),
        _flag("apply-warmup", "--warmup=-1", ["placer.apply_main", "--warmup=-1"], "--warmup"),
        _flag("apply-logical-cpus", "--logical_cpus=0", ["placer.apply_main", "--logical_cpus=0"], "--logical_cpus"),
    ]


def _touch(*names: str) -> Callable[[str], None]:
    def setup(d: str) -> None:
        for n in names:
            if n.endswith("/"):
                os.makedirs(os.path.join(d, n), exist_ok=True)
                with open(os.path.join(d, n, "old.txt"), "w") as f:
                    f.write("old\n")
            else:
                with open(os.path.join(d, n), "w") as f:
                    f.write("old\n")

    return setup


def _out(name, what, argv, setup, *words):
    return Case(name, "output", what, None, words, argv=argv, setup=setup)


def _output_cases() -> list[Case]:
    cmp = "placer.compare_main --methods=single_gpu --graph={d}/g.json --cluster={d}/c.json --out={d}/x"
    return [
        _out(
            "compare-out-file",
            "compare --out names a file",
            lambda d: cmp.format(d=d).split(),
            _touch("x"),
            "--out",
            "is a file",
        ),
        _out(
            "compare-out-exists",
            "compare --out names a folder with files",
            lambda d: cmp.format(d=d).split(),
            _touch("x/"),
            "--out",
            "--overwrite",
        ),
        _out(
            "extract-out-dir",
            "extract --out names a folder",
            lambda d: ["placer.extract_main", f"--graph={d}/g.json", f"--out={d}/x"],
            _touch("x/"),
            "--out",
            "folder",
        ),
        _out(
            "extract-out-exists",
            "extract --out names an existing file",
            lambda d: ["placer.extract_main", f"--graph={d}/g.json", f"--out={d}/x"],
            _touch("x"),
            "--out",
            "--overwrite",
        ),
        _out(
            "extract-out-unwritable",
            "extract --out in a folder nobody can write",
            lambda d: ["placer.extract_main", f"--graph={d}/g.json", "--out=/proc/x.json"],
            None,
            "--out",
            "/proc",
        ),
        _out(
            "extract-out-under-file",
            "extract --out inside a file",
            lambda d: ["placer.extract_main", f"--graph={d}/g.json", f"--out={d}/x/g.json"],
            _touch("x"),
            "--out",
            "not a folder",
        ),
        _out(
            "measure-trace-dir",
            "measure --trace names a folder",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/x"],
            _touch("x/"),
            "--trace",
            "folder",
        ),
        _out(
            "measure-trace-exists",
            "measure --trace names an existing file",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/x"],
            _touch("x"),
            "--trace",
            "--overwrite",
        ),
        _out(
            "train-workdir-file",
            "train --workdir names a file",
            lambda d: ["placer.train_main", f"--graph={d}/g.json", f"--workdir={d}/x"],
            _touch("x"),
            "--workdir",
            "is a file",
        ),
    ]


CASES: list[Case] = FILE_CASES + _flag_cases() + _output_cases()
