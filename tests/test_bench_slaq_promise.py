"""bench/slaq_promise.py on a small replay set: slaq-safe stays within 1% of fair, gaps printed to 2 decimals."""

import pytest

from bench import slaq_promise

pytestmark = pytest.mark.slow  # 12 replays of 20 jobs


def test_slaq_safe_keeps_its_promise_on_a_small_replay_set(monkeypatch):
    monkeypatch.setattr(slaq_promise, "SLOTS", (16,))
    got = slaq_promise.gaps(1)  # one stress and one Keras workload
    assert set(got) == {("stress", 16), ("keras", 16)}
    for gaps in got.values():
        assert max(gaps["slaq-safe"]) <= slaq_promise.PROMISE
    text = "\n".join(slaq_promise.lines(got, 1))
    assert "| stress | 16 | " in text and "| keras | 16 | " in text
    row = next(line for line in text.splitlines() if line.startswith("| all |"))
    assert all(cell.strip().endswith("%") and len(cell.strip().split(".")[1]) == 3 for cell in row.split("|")[3:-1])
