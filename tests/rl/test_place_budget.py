"""placer-place --max_seconds alone: samples chunk after chunk until the time is spent, not 64 and stop."""

import pytest

from placer.core import cluster as cluster_lib
from placer.core import generated
from placer.core.errors import InputError
from placer.rl import graph_policy, place_lib
from tests.rl.test_transfer import tiny_config


class Clock:
    """time.time for place_lib: one second later at every call."""

    def __init__(self):
        self.now = 0.0

    def time(self):
        self.now += 1.0
        return self.now


def test_a_budget_alone_samples_until_it_is_spent(monkeypatch):
    config = tiny_config("gen:chain:16:0")
    policy = graph_policy.build(config.placer.policy, seed=0)
    graph = generated.generate("layered", 40, 3)
    monkeypatch.setattr(place_lib, "time", Clock())
    result = place_lib.place(
        policy, graph, cluster_lib.load("k80x4"), config.placer, samples=None, seed=0, source="t", max_seconds=10
    )
    # Clock: t0 = 1. Chunk k (from 1) is checked at 3k - 1 with the last chunk's 1 s added:
    # k=1: 2 - 1 + 0 = 1, k=2: 5 - 1 + 1 = 5, k=3: 8, k=4: 11 > 10 -> three chunks of 64.
    assert result["samples"] == 3 * place_lib.CHUNK


def test_neither_a_count_nor_a_budget_is_refused():
    config = tiny_config("gen:chain:16:0")
    policy = graph_policy.build(config.placer.policy, seed=0)
    with pytest.raises(InputError, match="max_seconds"):
        place_lib.place(
            policy, generated.generate("layered", 40, 3), cluster_lib.load("k80x4"), config.placer,
            samples=None, seed=0, source="t",
        )  # fmt: skip
