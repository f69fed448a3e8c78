"""The bad-input corpus: hostile files, flag values and output paths, each with its expected one-line error.

Every case is run as a user would run it (a binary, exit status, stderr) by
`runner.run_case`: it must exit with status 2, print exactly one stderr line
that starts with "error:" and holds every expected word (the file, field or
op), and leave no new or changed file behind. `tests/badinput/test_corpus.py`
runs the file cases (bench/testing/badinput/inputs.py) through their readers
in-process and some cases end to end; `bench/probe.py` runs them all end to
end and writes the table to BENCHMARKS.md.
"""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import Callable

from bench.testing import ROOT
from bench.testing.badinput.inputs import (
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


def _link(target: str, name: str, *, hard: bool = False) -> Callable[[str], None]:
    def setup(d: str) -> None:
        (os.link if hard else os.symlink)(os.path.join(d, target), os.path.join(d, name))

    return setup


def _fifo(d: str) -> None:
    os.mkfifo(os.path.join(d, "x"))


def _bomb(d: str) -> None:
    """g.json becomes 8 MiB of spaces gzip-compressed to about 8 KiB (the probe's cap is 1 MiB)."""
    with open(os.path.join(d, "g.json"), "wb") as f:
        f.write(gzip.compress(b" " * (8 << 20), mtime=0))


def _aliasing_cases() -> list[Case]:
    over = "--overwrite"
    cmp = "placer.compare_main --methods=single_gpu --graph={d}/g.json --cluster={d}/c.json"
    return [
        _out(
            "measure-trace-is-graph",
            "measure --trace names the --graph input, with --overwrite",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/g.json", over],
            None,
            "--trace",
            "--graph",
        ),
        _out(
            "measure-trace-is-placement",
            "measure --trace names the --placement input, with --overwrite",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/p.json", over],
            None,
            "--trace",
            "--placement",
        ),
        _out(
            "measure-trace-alias",
            "measure --trace is the --graph input by another path (sub/.././g.json)",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/sub/.././g.json", over],
            _touch("sub/"),
            "--trace",
            "--graph",
        ),
        _out(
            "measure-trace-hard-link",
            "measure --trace is a hard link to the --graph input",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/h.json", over],
            _link("g.json", "h.json", hard=True),
            "--trace",
            "--graph",
        ),
        _out(
            "measure-trace-symlink",
            "measure --trace is a symbolic link to the --placement input",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/s.json", over],
            _link("p.json", "s.json"),
            "--trace",
            "--placement",
        ),
        _out(
            "measure-trace-fifo",
            "measure --trace names a FIFO",
            lambda d: [*measure_argv(d)[:-1], f"--trace={d}/x", over],
            _fifo,
            "--trace",
            "special file",
        ),
        _out(
            "measure-trace-dev-null",
            "measure --trace=/dev/null",
            lambda d: [*measure_argv(d)[:-1], "--trace=/dev/null", over],
            None,
            "--trace",
            "/dev/null",
        ),
        _out(
            "extract-out-is-graph",
            "extract --out names its --graph input, with --overwrite",
            lambda d: ["placer.extract_main", f"--graph={d}/g.json", f"--out={d}/g.json", over],
            None,
            "--out",
            "--graph",
        ),
        _out(
            "compare-overwrite-holds-input",
            "compare --overwrite of the folder holding its --placements input",
            lambda d: [*cmp.format(d=d).split(), f"--placements={d}/x/placement_a.json", f"--out={d}/x", over],
            _copy("p.json", "x/placement_a.json"),
            "--out",
            "--placements",
        ),
        _out(
            "train-workdir-holds-input",
            "train --graph is a file train writes in --workdir (history.json)",
            lambda d: ["placer.train_main", f"--graph={d}/w/history.json", f"--workdir={d}/w"],
            _copy("g.json", "w/history.json"),
            "--workdir",
            "--graph",
        ),
        Case(
            "graph-gzip-bomb",
            "limit",
            "a 8 KiB gzip graph expanding to 8 MiB of spaces, --max_input_mib=1",
            None,
            ("g.json", "1 MiB", "--max_input_mib"),
            argv=lambda d: [*measure_argv(d), "--max_input_mib=1"],
            setup=_bomb,
        ),
    ]


def _copy(src: str, dst: str) -> Callable[[str], None]:
    def setup(d: str) -> None:
        os.makedirs(os.path.dirname(os.path.join(d, dst)), exist_ok=True)
        shutil.copyfile(os.path.join(d, src), os.path.join(d, dst))

    return setup


CASES: list[Case] = FILE_CASES + _flag_cases() + _output_cases() + _aliasing_cases()
