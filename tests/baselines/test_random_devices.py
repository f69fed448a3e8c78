"""baselines.space.random_group_devices: the random tie-class placements random_search, bench/simulator.py,
bench/fidelity_split.py and bench/gpu_check.py draw."""

import numpy as np

from baselines import space
from placer.core.grouping import Grouping
from tests.baselines.helpers import make_cluster, make_graph


def graph_and_groups():
    # a has no GPU kernel and is tied to b (one colocation key); c and d run anywhere.
    g = make_graph(
        ["a", "b", "c", "d"],
        [("a", "b", 1), ("b", "c", 1), ("c", "d", 1)],
        gpu=[np.nan, 1.0, 1.0, 1.0],
        colocation=["k", "k", "", ""],
    )
    return g, Grouping.from_labels(g, np.arange(4), tie_labels=np.array([0, 0, 2, 3]))


def test_tie_classes_share_a_device_with_kernels_and_free_groups_spread_evenly():
    g, groups = graph_and_groups()
    cluster = make_cluster(2)  # CPU:0, GPU:0, GPU:1
    draws = space.random_group_devices(g, cluster, groups, 300, np.random.default_rng(0))
    assert draws.shape == (300, 4)
    # {a, b}: only the CPU (device 0) has a kernel for a, so both are always there.
    assert (draws[:, 0] == 0).all() and (draws[:, 1] == 0).all()
    # c and d: uniform over 3 devices, 100 each expected (binomial std 8.2; 60 to 140 is about 5 std).
    for col in (2, 3):
        counts = np.bincount(draws[:, col], minlength=3)
        assert counts.min() > 60 and counts.max() < 140, counts
    # c and d drawn independently: all 9 pairs occur.
    assert len({(int(x), int(y)) for x, y in draws[:, 2:]}) == 9
    again = space.random_group_devices(g, cluster, groups, 300, np.random.default_rng(0))
    np.testing.assert_array_equal(draws, again)


def test_devices_restrict_the_draw_even_where_no_kernel_is_left():
    g, groups = graph_and_groups()
    cluster = make_cluster(2)
    draws = space.random_group_devices(g, cluster, groups, 200, np.random.default_rng(1), devices=[1, 2])
    # Every group on a GPU; {a, b} (no GPU kernel for a) still shares one, left for the measurer to refuse.
    assert set(np.unique(draws)) == {1, 2}
    np.testing.assert_array_equal(draws[:, 0], draws[:, 1])
