"""bench/transfer.py clears only what an earlier run of it wrote under --out."""

from tests import binaries


def test_clear_outputs_keeps_files_it_did_not_write(tmp_path):
    with binaries.isolated_flags():  # bench/transfer.py defines --out, as other bench scripts do
        from bench import transfer

    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "other_run").mkdir()
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "weights.h5").write_text("old")
    (tmp_path / "search" / "gen_layered").mkdir(parents=True)
    (tmp_path / "results.json").write_text("{}")
    transfer.clear_outputs(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "other_run"]
    assert (tmp_path / "notes.txt").read_text() == "mine"
    transfer.clear_outputs(str(tmp_path))  # nothing of its own left: a no-op
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "other_run"]
