"""Counts the processes each test starts, when PLACER_COUNT_SUBPROCESSES names a file.

A pytest plugin (tests/conftest.py loads it). With the variable set, every
`subprocess.Popen` and `multiprocessing.Process.start` in the test process is
counted against the test running (its setup, call and teardown), and one JSON
line per test is appended to the file:
`{"test": nodeid, "own": n, "ray": m, "commands": [...], "cpu_s": s}`. "ray" counts the
processes Ray starts for its own cluster (ray.init's head, raylet, workers),
told apart by a Ray module on the caller's stack; "own" counts the rest, the
ones the suite asks for. The summary at the end of the run gives the total
and the tests that start any; then the tests that took the most CPU time
(this process's and its finished children's; unlike wall time it hardly
changes with the machine's load).

    PLACER_COUNT_SUBPROCESSES=/tmp/counts.jsonl python -m pytest tests
"""

from __future__ import annotations

import json
import multiprocessing.process
import os
import resource
import subprocess
import sys
import time

import pytest

ENV = "PLACER_COUNT_SUBPROCESSES"
_RAY = os.sep + "ray" + os.sep
_current = {"test": None, "own": 0, "ray": 0, "commands": [], "cpu_s": 0.0}


def _started_by_ray() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if _RAY in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def _record(command) -> None:
    if _started_by_ray():
        _current["ray"] += 1
        return
    _current["own"] += 1
    if isinstance(command, (list, tuple)):
        command = " ".join(str(part) for part in command)
    _current["commands"].append(str(command)[:200])


def _wrap() -> None:
    popen_init = subprocess.Popen.__init__
    process_start = multiprocessing.process.BaseProcess.start

    def counted_init(self, args, *rest, **kwargs):
        _record(args)
        popen_init(self, args, *rest, **kwargs)

    def counted_start(self):
        _record(f"multiprocessing {self.name}")
        process_start(self)

    subprocess.Popen.__init__ = counted_init
    multiprocessing.process.BaseProcess.start = counted_start


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children: a load-independent measure of a test's work."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")  # pytest-xdist's workers carry it


def pytest_configure(config):
    path = os.environ.get(ENV)
    if not path:
        return
    if _is_controller(config):
        open(path, "w").close()  # this run's counts only
    _wrap()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current.update(test=item.nodeid, own=0, ray=0, commands=[])
    cpu = _cpu_seconds()
    yield
    path = os.environ.get(ENV)
    if path:
        _current["cpu_s"] = round(_cpu_seconds() - cpu, 2)
        with open(path, "a") as f:  # one short line per write: appends from several workers stay whole
            f.write(json.dumps(dict(_current)) + "\n")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    path = os.environ.get(ENV)
    if not path or not _is_controller(config):
        return
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    own = sum(r["own"] for r in rows)
    ray = sum(r["ray"] for r in rows)
    write = terminalreporter.write_line
    write(f"subprocesses started by tests: {own} (Ray's own cluster processes, not counted: {ray}); {path}")
    for r in sorted(rows, key=lambda r: -r["own"]):
        if r["own"]:
            write(f"  {r['own']:3d}  {r['test']}")
    write(f"CPU seconds, this process and its children, all tests: {sum(r['cpu_s'] for r in rows):.1f}; top 15:")
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[:15]:
        write(f"  {r['cpu_s']:6.2f}  {r['test']}")
