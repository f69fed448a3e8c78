"""Output checks before any work, and a folder of outputs replaced as one set."""

import os

import pytest

from placer.core import atomic
from placer.core.errors import InputError


def test_output_file_checks(tmp_path):
    (tmp_path / "f").write_text("old")
    (tmp_path / "d").mkdir()
    atomic.check_output_file(str(tmp_path / "new" / "deeper" / "x.json"), "out")  # folders made later
    atomic.check_output_file(str(tmp_path / "f"), "out", overwrite=True)
    for path, words in [
        (tmp_path / "f", "exists (give --overwrite"),
        (tmp_path / "d", "is a folder"),
        (tmp_path / "f" / "x.json", "is a file, not a folder"),
        ("/proc/x.json", "cannot write in /proc"),
    ]:
        with pytest.raises(InputError, match=r"^--out: .*" + words.replace("(", r"\(")):
            atomic.check_output_file(str(path), "out")
    assert sorted(os.listdir(tmp_path)) == ["d", "f"]  # the checks leave nothing


def test_output_dir_checks(tmp_path):
    (tmp_path / "f").write_text("old")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("old")
    (tmp_path / "empty").mkdir()
    atomic.check_output_dir(str(tmp_path / "empty"), "out")
    atomic.check_output_dir(str(tmp_path / "full"), "workdir", reuse=True)
    with pytest.raises(InputError, match="--out: .* exists and is not empty"):
        atomic.check_output_dir(str(tmp_path / "full"), "out")
    with pytest.raises(InputError, match="--workdir: .* is a file, not a folder"):
        atomic.check_output_dir(str(tmp_path / "f"), "workdir", reuse=True)


def test_folder_set_replaces_the_whole_folder(tmp_path):
    out = tmp_path / "out"
    with atomic.folder_set(str(out)) as folder:
        for name in ("table.md", "timeline_a.png"):
            with open(os.path.join(folder, name), "w") as f:
                f.write("first")
        assert not out.exists()  # nothing is visible until the set is complete
    assert sorted(os.listdir(out)) == ["table.md", "timeline_a.png"]
    with pytest.raises(InputError, match="--overwrite"):
        with atomic.folder_set(str(out)):
            pass
    with atomic.folder_set(str(out), overwrite=True) as folder:
        with open(os.path.join(folder, "timeline_b.png"), "w") as f:
            f.write("second")
    assert sorted(os.listdir(out)) == ["timeline_b.png"]  # the old timeline is gone with its set
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_folder_set_keeps_the_old_set_when_writing_fails(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "table.md").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic.folder_set(str(out), overwrite=True) as folder:
            with open(os.path.join(folder, "table.md"), "w") as f:
                f.write("half")
            raise RuntimeError("plot failed")
    assert (out / "table.md").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_overwrite_refuses_a_folder_holding_other_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "table.md").write_text("old")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="'notes.txt'"):
        with atomic.folder_set(str(out), overwrite=True, owned=("table.md", "timeline_*.png")):
            pass
    assert sorted(os.listdir(out)) == ["notes.txt", "table.md"]
