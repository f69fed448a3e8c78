"""Outputs never destroy inputs, go only to regular files, survive a full disk, and take the umask's permissions."""

import errno
import os
import stat
import sys

import pytest

from bench.testing.badinput import cases, runner
from placer import cli
from placer.core import atomic
from placer.core.errors import InputError
from tests import binaries
from tests.badinput.inprocess import run_binary


@pytest.fixture
def files(tmp_path):
    """The corpus's good graph (g.json), cluster (c.json) and placement (p.json) in tmp_path."""
    runner.write_inputs(cases.Case("good", "none", "the good files", None, ()), str(tmp_path))
    return tmp_path


def measure(d, *extra):
    return run_binary("measure_main", f"--graph={d}/g.json", f"--cluster={d}/c.json", f"--placement={d}/p.json", *extra)


def one_error_line(capsys) -> str:
    """The run's one error line; progress lines may come before it, a traceback may not."""
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert err and err[-1].startswith("error: "), err
    assert sum(x.startswith("error: ") for x in err) == 1 and not any("Traceback" in x for x in err), err
    return err[-1]


@pytest.mark.parametrize(
    ("trace", "setup", "flag"),
    [
        ("g.json", None, "--graph"),
        ("p.json", None, "--placement"),
        ("d/../d/./g.json", None, "--graph"),  # the alias of the issue: d/g.json is also given as --graph
        ("hard.json", lambda d: os.link(d / "g.json", d / "hard.json"), "--graph"),
        ("soft.json", lambda d: os.symlink(d / "p.json", d / "soft.json"), "--placement"),
    ],
)
def test_trace_that_is_an_input_is_refused_and_the_input_kept(files, capsys, trace, setup, flag):
    (files / "d").mkdir()
    (files / "d" / "g.json").write_bytes((files / "g.json").read_bytes())
    graph = "d/g.json" if trace.startswith("d/") else "g.json"
    if setup:
        setup(files)
    before = runner.snapshot(str(files))
    status = run_binary(
        "measure_main",
        f"--graph={files / graph}",
        f"--cluster={files}/c.json",
        f"--placement={files}/p.json",
        f"--trace={files}/{trace}",
        "--overwrite",
    )
    line = one_error_line(capsys)
    assert status == 2 and "--trace" in line and flag in line, line
    assert runner.snapshot(str(files)) == before  # every input byte for byte, nothing added


def test_compare_overwrite_never_deletes_the_placement_it_reads(files, capsys):
    (files / "cmp").mkdir()
    kept = files / "cmp" / "placement_mine.json"  # named like an output, so --overwrite would replace it
    kept.write_bytes((files / "p.json").read_bytes())
    argv = [f"--graph={files}/g.json", f"--cluster={files}/c.json", "--methods=single_gpu"]
    status = run_binary("compare_main", *argv, f"--placements={kept}", f"--out={files}/cmp", "--overwrite")
    line = one_error_line(capsys)
    assert status == 2 and "--placements" in line and "--out" in line, line
    assert kept.read_bytes() == (files / "p.json").read_bytes()
    # The same command with the placement kept elsewhere replaces the folder.
    status = run_binary("compare_main", *argv, f"--placements={files}/p.json", f"--out={files}/cmp", "--overwrite")
    assert status == 0 and (files / "cmp" / "table.md").exists() and not kept.exists()


def test_binaries_with_outputs_refuse_their_inputs_before_any_work(files, capsys):
    w = files / "w"
    w.mkdir()
    (w / "summary.json").write_bytes((files / "g.json").read_bytes())
    refused = [
        ("extract_main", [f"--graph={files}/g.json", f"--out={files}/g.json", "--overwrite"], "--graph"),
        (
            "place_main",
            [f"--policy={files}", f"--graph={files}/g.json", f"--out={files}/c.json", "--overwrite"],
            "--policy",
        ),
        ("train_main", [f"--graph={w}/summary.json", f"--workdir={w}"], "--graph"),
        ("train_main", [f"--graph={files}/g.json", f"--init_from={w}", f"--workdir={w}"], "--init_from"),
        ("search_main", [f"--jobs={w}/run_state.json", f"--workdir={w}"], "--jobs"),
        ("bench.slaq_replay", [f"--trace={w}/inputs.json", f"--workdir={w}"], "--trace"),
    ]
    (w / "run_state.json").write_text("x\n")
    (w / "inputs.json").write_text("x\n")
    for binary, argv, word in refused:
        before = runner.snapshot(str(files))
        assert run_binary(binary, *argv) == 2, binary
        line = one_error_line(capsys)
        assert word in line, (binary, line)
        assert runner.snapshot(str(files)) == before, binary


@pytest.mark.parametrize("special", ["/dev/null", "fifo"])
def test_output_to_a_special_file_is_refused(files, capsys, special):
    if special == "fifo":
        os.mkfifo(files / "fifo")
        special = str(files / "fifo")
    assert measure(files, f"--trace={special}", "--overwrite") == 2
    assert "special file" in one_error_line(capsys)
    assert not stat.S_ISREG(os.stat(special).st_mode)  # still the device or FIFO, not a file renamed over it
    with pytest.raises(InputError, match="special file"):
        atomic.write_text(special, "x")


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_full_disk_is_one_line_naming_the_file_and_the_old_file_stays(tmp_path, monkeypatch, code):
    path = tmp_path / "out.txt"
    path.write_text("old\n")

    def full(*_):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(InputError) as e:
        atomic.write_text(str(path), "new\n")
    assert str(e.value).startswith(f"{path}: cannot write 4 bytes ({os.strerror(code)})")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["out.txt"]  # no temporary file left


def test_full_disk_during_a_binary_is_exit_2_and_the_old_trace_stays(files, capsys, monkeypatch):
    trace = files / "t.json"
    trace.write_text("old\n")

    def full(*_):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    assert measure(files, f"--trace={trace}", "--overwrite") == 2
    line = one_error_line(capsys)
    assert str(trace) in line and "No space left on device" in line, line
    assert trace.read_text() == "old\n"


@pytest.mark.parametrize(("mask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_the_umask_decides_the_permissions_of_outputs(tmp_path, mask, file_mode, dir_mode):
    old = os.umask(mask)
    try:
        atomic.write_text(str(tmp_path / "new" / "a.txt"), "x")
        with atomic.folder_set(str(tmp_path / "set")) as folder:
            atomic.write_bytes(os.path.join(folder, "b.bin"), b"x")
    finally:
        os.umask(old)
    modes = {p: stat.S_IMODE(os.stat(tmp_path / p).st_mode) for p in ("new", "new/a.txt", "set", "set/b.bin")}
    assert modes == {"new": dir_mode, "new/a.txt": file_mode, "set": dir_mode, "set/b.bin": file_mode}


def test_full_disk_in_a_folder_of_outputs_is_one_line(files, capsys, monkeypatch):
    real = os.makedirs

    def full(path, *args, **kwargs):
        if "cmp" in str(path):
            raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "makedirs", full)
    argv = [f"--graph={files}/g.json", f"--cluster={files}/c.json", "--methods=single_gpu"]
    assert run_binary("compare_main", *argv, f"--out={files}/cmp/new") == 2
    line = one_error_line(capsys)
    assert f"{files}/cmp" in line and os.strerror(errno.EDQUOT) in line, line


def test_full_disk_met_anywhere_in_a_binary_is_one_line(tmp_path, capsys, monkeypatch):
    def main(argv):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "checkpoints" / "ckpt-1"))

    monkeypatch.setattr(sys, "argv", ["placer-x"])
    with binaries.isolated_flags(), pytest.raises(SystemExit) as e:  # no binary's required flags are left defined
        cli.run_main(main)
    line = one_error_line(capsys)
    assert e.value.code == 2 and f"{tmp_path}/checkpoints/ckpt-1: cannot write (No space left" in line, line
