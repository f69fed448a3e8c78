"""bench/report.py: a rerun replaces its own section of BENCHMARKS.md and names the commit it measured."""

from bench import report


def test_a_section_is_replaced_in_place_with_its_commit_and_the_others_are_kept(tmp_path, monkeypatch):
    path = tmp_path / "BENCHMARKS.md"
    monkeypatch.setattr(report, "PATH", str(path))
    report.update_section("a", "First", "old a", "bench/a.py")
    report.update_section("b", "Second", "only b", "bench/b.py")
    report.update_section("a", "First", "new a", "bench/a.py", at="abc1234")
    text = path.read_text()
    assert text.startswith(report.HEADER)
    assert "old a" not in text and text.count("<!-- bench:a -->") == 1
    # The rerun section stays where it was, before b, and says which commit its figures come from.
    assert text.index("new a") < text.index("only b")
    assert "_Written by `bench/a.py` at commit abc1234 on " in text
    assert "_Written by `bench/b.py` on " in text
