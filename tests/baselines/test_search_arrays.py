"""The same-budget searches hand device arrays to the simulator and still search as before.

Before, every candidate became a Placement (legalised by baselines.common.finish)
and went through `Measurer.measure`. Now the simulator receives the device
arrays; a measurer without `takes_device_arrays` still gets Placements. Both
routes must see the same candidates in the same order and return the same
placement.
"""

import numpy as np
import pytest

from baselines import common, registry
from baselines.space import Space
from placer.core import grouping
from placer.core.placement import Placement
from placer.measure.simulator import Simulator
from tests.baselines.helpers import make_cluster, make_graph


def _graph():
    """Eight ops in two chains, a colocated pair across them, one CPU-only op."""
    ops = [f"{c}{i}" for c in "ab" for i in range(4)]
    edges = [(f"{c}{i}", f"{c}{i + 1}", 1000 * (i + 1)) for c in "ab" for i in range(3)] + [("a1", "b2", 500)]
    gpu = np.array([1.0, 2.0, 1.0, 3.0, 2.0, np.nan, 1.0, 1.0])
    colocation = ["", "v", "", "", "", "", "v", ""]
    return make_graph(ops, edges, gpu=gpu, cpu=np.full(8, 4.0), colocation=colocation)


class PlacementsOnly:
    """The simulator behind the Placement route, recording each candidate's op devices."""

    def __init__(self, sim):
        self.sim, self.rows = sim, []

    def measure(self, placements):
        self.rows.extend(np.asarray(p.devices, np.int64) for p in placements)
        return self.sim.measure(placements)


class Arrays(Simulator):
    """The simulator behind the array route, recording each candidate's op devices."""

    rows: list

    def measure_devices(self, batch, op_group=None):
        self.rows.extend(np.asarray(batch, np.int64))
        return super().measure_devices(batch, op_group)


@pytest.mark.parametrize("name", ["random_search", "local_search"])
@pytest.mark.parametrize("seed", [0, 5])
def test_arrays_and_placements_see_the_same_candidates(name, seed):
    g, cl = _graph(), make_cluster(2, latency=0.1, bandwidth=1e4)
    via_placements = PlacementsOnly(Simulator(g, cl))
    arrays = Arrays(g, cl)
    arrays.rows = []
    a = registry.place(name, g, cl, seed=seed, measurer=via_placements, budget=40, batch=8, target_groups=4)
    b = registry.place(name, g, cl, seed=seed, measurer=arrays, budget=40, batch=8, target_groups=4)
    assert len(via_placements.rows) == len(arrays.rows) == 40
    np.testing.assert_array_equal(np.stack(via_placements.rows), np.stack(arrays.rows))
    np.testing.assert_array_equal(a.devices, b.devices)
    assert a.metadata["step_time"] == b.metadata["step_time"]
    # The best placement's recorded time is what the simulator measures for it.
    assert Simulator(g, cl).measure([b])[0].step_time == b.metadata["step_time"]


def test_candidate_devices_are_the_legalised_ones():
    # Groups that split the colocated pair and mix the CPU-only op with GPU ops, on
    # arbitrary devices: most rows break a rule and must come out as common.legalize makes them.
    g, cl = _graph(), make_cluster(2)
    groups = grouping.Grouping.from_labels(g, np.array([0, 0, 1, 1, 2, 2, 3, 3]))
    space = Space(g, cl, groups, 4)
    rng = np.random.default_rng(0)
    leaders = rng.integers(0, cl.num_devices, (64, groups.num_leaders))
    got = space.devices(leaders)
    raw = groups.expand(leaders)[:, groups.op_group]
    want = np.stack([common.legalize(g, cl, row) for row in raw])
    np.testing.assert_array_equal(got, want)
    assert (raw != want).any(axis=1).sum() > 10  # the slow route was taken, and agreed
    assert (raw == want).all(axis=1).sum() > 0  # and the fast one


def test_placement_of_best_is_a_finished_placement():
    g, cl = _graph(), make_cluster(2)
    groups = grouping.group(g, target_groups=4)
    space = Space(g, cl, groups, 4)
    leaders = np.zeros(groups.num_leaders, np.int64) + 1
    p = space.placement(leaders, "local_search")
    want = common.finish(g, cl, groups.expand(leaders)[groups.op_group], "local_search")
    assert isinstance(p, Placement)
    np.testing.assert_array_equal(p.devices, want.devices)
