"""Same-budget searches on a graph whose optimum needs a split, measured by the simulator."""

import numpy as np
import pytest

from baselines import registry
from placer.core.errors import InputError
from placer.measure.simulator import Simulator
from tests.baselines.helpers import check_legal, make_cluster, make_graph
from tests.hand_graphs import two_chains


class Counting:
    """A measurer that counts the placements it was given."""

    def __init__(self, inner):
        self.inner, self.count = inner, 0

    def measure(self, placements):
        self.count += len(placements)
        return self.inner.measure(placements)


@pytest.mark.parametrize("name", ["random_search", "local_search"])
def test_search_finds_the_split_within_its_budget(name):
    g, cl = two_chains(cpu_seconds=10.0), make_cluster(2, cpu=False)
    m = Counting(Simulator(g, cl))
    single = Simulator(g, cl).measure([registry.place("single_gpu", g, cl)])[0].step_time
    p = registry.place(name, g, cl, seed=0, measurer=m, budget=48)
    check_legal(p, g, cl)
    assert single == pytest.approx(6.0)
    assert p.metadata["step_time"] == pytest.approx(3.0)
    assert Simulator(g, cl).measure([p])[0].step_time == pytest.approx(3.0)
    assert m.count == 48
    assert p.metadata["method"] == name


@pytest.mark.parametrize("name", sorted(registry.MEASURED))
def test_search_without_a_measurer_or_budget_fails_in_one_line(name):
    g, cl = two_chains(cpu_seconds=10.0), make_cluster(2)
    with pytest.raises(InputError, match="needs a measurer"):
        registry.place(name, g, cl)
    with pytest.raises(InputError, match="budget"):
        registry.place(name, g, cl, measurer=Simulator(g, cl), budget=0)


def test_same_seed_same_result():
    g, cl = two_chains(4, cpu_seconds=10.0), make_cluster(2)
    a = registry.place("local_search", g, cl, seed=3, measurer=Simulator(g, cl), budget=20)
    b = registry.place("local_search", g, cl, seed=3, measurer=Simulator(g, cl), budget=20)
    np.testing.assert_array_equal(a.devices, b.devices)


def test_local_search_starts_from_a_random_placement_when_single_gpu_runs_out_of_memory():
    # 1.5 MB GPUs, 1 MB per op output: one GPU cannot hold all six ops, so single_gpu fails.
    g = make_graph(
        [f"{c}{i}" for c in "ab" for i in range(3)],
        [(f"{c}{i}", f"{c}{i + 1}", 0) for c in "ab" for i in range(2)],
        persistent_bytes=[500_000] * 6,
    )
    cl = make_cluster(2, cpu=False, memory=1_600_000)
    sim = Simulator(g, cl)
    assert not sim.measure([registry.place("single_gpu", g, cl)])[0].ok
    p = registry.place("local_search", g, cl, seed=0, measurer=sim, budget=40)
    assert sim.measure([p])[0].ok and p.metadata["step_time"] == pytest.approx(3.0)
