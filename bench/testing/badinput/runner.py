"""Runs a case of the bad-input corpus end to end, as a user would, and reports what it gave."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable

from bench.testing import run_module
from bench.testing.badinput.inputs import CLUSTER, GRAPH, Case, as_json, measure_argv, placement


@dataclasses.dataclass
class Outcome:
    """What one run of a case gave."""

    exit_status: int
    stderr_lines: list[str]
    words_missing: list[str]
    left_behind: list[str]

    @property
    def ok(self) -> bool:
        one = len(self.stderr_lines) == 1 and self.stderr_lines[0].startswith("error:")
        return self.exit_status == 2 and one and not self.words_missing and not self.left_behind


def write_inputs(case: Case, folder: str) -> None:
    """Writes the good graph, cluster and placement files into `folder`, the hostile one in place of its kind's."""
    files = {"graph": ("g.json", as_json(GRAPH)), "cluster": ("c.json", as_json(CLUSTER))}
    files["placement"] = ("p.json", as_json(placement()))
    for kind, (name, data) in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(case.content if case.kind == kind and case.content is not None else data)
    if case.setup:
        case.setup(folder)


def snapshot(folder: str) -> dict[str, str]:
    """Every path under `folder` with a hash of its content ("dir" for folders)."""
    out = {}
    for root, dirs, names in os.walk(folder):
        for n in dirs:
            out[os.path.relpath(os.path.join(root, n), folder)] = "dir"
        for n in names:
            path = os.path.join(root, n)
            if not os.path.isfile(path):  # a FIFO or device: opening it could block
                out[os.path.relpath(path, folder)] = "special"
                continue
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


def run_case(case: Case, folder: str, run: Callable = run_module) -> Outcome:
    """Runs `case` end to end in the empty folder `folder` and reports what it gave.

    Args:
      case: the case.
      folder: an empty folder for its files.
      run: runs a binary as `run(module, *args, cwd=..., timeout=...)` and
        returns a subprocess.CompletedProcess; default a fresh process.
    """
    write_inputs(case, folder)
    before = snapshot(folder)
    argv = (case.argv or measure_argv)(folder)
    r = run(argv[0], *argv[1:], cwd=folder, timeout=300)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    words = [w.format(dir=folder) for w in case.words]
    missing = [w for w in words if not lines or w not in lines[-1]]
    after = snapshot(folder)
    left = sorted(p for p in after if before.get(p) != after[p]) + sorted(p for p in before if p not in after)
    return Outcome(r.returncode, lines, missing, left)
