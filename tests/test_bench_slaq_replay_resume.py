"""bench/slaq_replay.py --resume: the allocators a stopped replay finished are read back, the others replayed."""

import json

from tests.inprocess import call
from tests.test_bench_slaq_replay import _trace


def test_resume_reads_back_finished_allocators_and_replays_the_rest(tmp_path, capsys):
    out = tmp_path / "out"
    args = [f"--trace={_trace(tmp_path)}", "--slots=4", "--epoch_s=1", "--policy=both", f"--workdir={out}"]
    assert call("bench.slaq_replay", *args) == 0
    slaq = (out / "slaq" / "summary.json").read_text()
    fair = json.loads((out / "fair" / "summary.json").read_text())
    (out / "fair" / "summary.json").unlink()  # as a run stopped after SLAQ's replay leaves it
    capsys.readouterr()

    assert call("bench.slaq_replay", *args) == 2  # without --resume: refused, and told how to continue
    assert "pass --resume to continue it" in capsys.readouterr().err

    assert call("bench.slaq_replay", *args, "--resume") == 0
    said = capsys.readouterr().out
    assert "slaq read back; fair replayed from the start" in said
    assert (out / "slaq" / "summary.json").read_text() == slaq  # not replayed again
    assert json.loads((out / "fair" / "summary.json").read_text())["mean_time_to"] == fair["mean_time_to"]
    assert "slaq: mean time to 90%" in said and "fair (" in said  # the comparison still covers both


def test_resume_with_other_settings_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    args = [f"--trace={_trace(tmp_path)}", "--epoch_s=1", "--policy=slaq", f"--workdir={out}"]
    assert call("bench.slaq_replay", *args, "--slots=4") == 0
    capsys.readouterr()
    assert call("bench.slaq_replay", *args, "--slots=3", "--resume") == 2
    assert "changed since: slots (4, this run 3);" in capsys.readouterr().err
