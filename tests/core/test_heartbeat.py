"""placer.core.heartbeat: a run without a progress bar prints a line at least every 30 s, and only then."""

from placer.core.heartbeat import EVERY_S, Heartbeat


def test_a_line_once_30_seconds_passed_and_not_before():
    now = [0.0]
    lines = []
    beat = Heartbeat(log=lines.append, clock=lambda: now[0])
    assert EVERY_S <= 30
    for t in (1.0, 29.9):  # under 30 s since the start: silent
        now[0] = t
        assert not beat(lambda: "x")
    now[0] = 30.0
    assert beat(lambda: f"at {now[0]:.0f} s")
    now[0] = 59.0  # 29 s after the last line
    assert not beat(lambda: "y")
    now[0] = 60.5
    assert beat(lambda: f"at {now[0]:.1f} s")
    assert lines == ["at 30 s", "at 60.5 s"]


def test_with_a_progress_bar_it_stays_silent():
    lines = []
    beat = Heartbeat(enabled=False, log=lines.append, clock=lambda: 1e9)
    assert not beat(lambda: "x") and lines == []
