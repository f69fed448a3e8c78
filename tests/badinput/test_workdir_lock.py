"""A workdir in use is locked: a second run on it exits 2 naming the holder's pid; the lock dies with its holder."""

import fcntl
import os
import subprocess
import sys

import pytest

from bench.testing.badinput import cases, runner
from placer.core import locks
from placer.core.errors import InputError
from tests.badinput.inprocess import run_binary
from tests.cli import ROOT


@pytest.fixture
def files(tmp_path):
    runner.write_inputs(cases.Case("good", "none", "the good files", None, ()), str(tmp_path))
    return tmp_path


def hold(workdir) -> int:
    """Locks `workdir` as a running binary would, through a descriptor opened apart from the code under test."""
    workdir.mkdir(exist_ok=True)
    fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


@pytest.mark.parametrize(
    ("binary", "argv"),
    [
        ("train_main", ["--graph={d}/g.json", "--cluster={d}/c.json", "--steps=1", "--noprogress"]),
        ("pretrain_main", ["--steps=1", "--noprogress"]),
        ("search_main", ["--jobs={d}/none.py", "--slots=2"]),
        ("bench.slaq_replay", ["--trace={d}/none.csv", "--slots=2"]),
    ],
)
def test_second_run_on_a_locked_workdir_exits_2_naming_the_holder(files, capsys, binary, argv):
    held = hold(files / "w")
    try:
        status = run_binary(binary, *(a.format(d=files) for a in argv), f"--workdir={files}/w")
    finally:
        os.close(held)
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert f"in use by process {os.getpid()}" in err[0] and "--workdir" in err[0], err
    assert os.listdir(files / "w") == []  # the refused run wrote nothing


def test_lock_of_a_child_is_refused_while_it_lives_and_free_once_it_is_killed(tmp_path):
    workdir = tmp_path / "w"
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; from placer.core import locks; locks.lock_workdir(sys.argv[1]); "
         "print('locked', flush=True); sys.stdin.read()", str(workdir)],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(InputError, match=rf"--workdir: {workdir} is in use by process {child.pid};"):
            locks.claim_workdir(str(workdir))
    finally:
        child.kill()  # SIGKILL: no clean-up runs in the child; the OS drops its lock
        child.wait()
    locks.claim_workdir(str(workdir))
    try:
        assert locks.holder(str(workdir)) == os.getpid()
    finally:
        locks.release_all()


def test_lock_is_released_when_the_binary_returns(files, capsys):
    w = files / "w"
    argv = [f"--jobs={files}/none.py", "--slots=2", f"--workdir={w}"]
    assert run_binary("search_main", *argv) == 2  # no such jobs file: refused after the workdir was locked
    assert "none.py" in capsys.readouterr().err
    assert not w.exists()  # the lock made the folder; a refused run leaves nothing behind
    (w / "keep").mkdir(parents=True)
    assert run_binary("search_main", *argv) == 2
    os.close(hold(w))  # free again: nothing of the earlier run holds it
    assert os.listdir(w) == ["keep"]  # the lock writes nothing in the folder
