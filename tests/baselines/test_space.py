"""baselines.space, the search space every group search shares, on hand-built cases."""

import numpy as np

from baselines import space
from placer.core.grouping import Grouping
from tests.baselines.helpers import make_cluster, make_graph


def test_a_class_may_use_only_the_devices_all_its_ops_run_on():
    ok = np.array([[True, False], [True, True], [False, False]])  # op 0 runs on device 0 only, op 2 nowhere
    # Class 0 {op 0, op 1}: device 0. Class 1 {op 2} and class 2 (no op) may go anywhere (the measurer reports it).
    want = [[True, False], [True, True], [True, True]]
    np.testing.assert_array_equal(space.allowed_devices(np.array([0, 0, 1]), 3, ok), want)
    # A class with an op that runs nowhere may go anywhere, whatever its other ops need.
    np.testing.assert_array_equal(space.allowed_devices(np.array([0, 1, 1]), 2, ok), [[True, False], [True, True]])


def test_class_devices_follow_the_weighted_vote_among_allowed_devices():
    op_devices = np.array([0, 1, 1, 2, 2, 2])
    op_class = np.array([0, 0, 0, 1, 1, 0])
    allowed = np.array([[True, True, True], [True, True, False]])
    # Class 0: devices 0, 1, 1, 2 -> 1. Class 1: both ops on device 2, not allowed -> the lowest allowed (0).
    np.testing.assert_array_equal(space.class_devices(op_devices, op_class, allowed), [1, 0])
    # Weighted: op 0 (device 0) weighs 5, more than the two on device 1.
    weight = np.array([5.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(space.class_devices(op_devices, op_class, allowed, weight), [0, 0])
    # A tie goes to the lower device.
    np.testing.assert_array_equal(space.class_devices(np.array([2, 1]), np.array([0, 0]), allowed[:1]), [1])


def test_a_move_sends_one_movable_class_to_another_allowed_device():
    # a runs only on the CPU (device 0), so its tie class {a, b} cannot move; c and d may go anywhere.
    g = make_graph(["a", "b", "c", "d"], [("a", "b", 1), ("b", "c", 1), ("c", "d", 1)], gpu=[np.nan, 1.0, 1.0, 1.0])
    groups = Grouping.from_labels(g, np.arange(4), tie_labels=np.array([0, 0, 2, 3]))
    s = space.Space(g, make_cluster(2), groups, 0)
    np.testing.assert_array_equal(s.movable(), [False, True, True])
    cur = np.array([0, 1, 2])
    moves = space.uniform_moves(s, np.random.default_rng(0), cur, 200)
    changed = moves != cur
    assert (changed.sum(axis=1) == 1).all() and not changed[:, 0].any()
    # Both movable classes move, to both other devices each.
    assert {(int(c), int(moves[i, c])) for i, c in zip(*np.nonzero(changed), strict=True)} == {
        (1, 0),
        (1, 2),
        (2, 0),
        (2, 1),
    }
    # The majority device of each class's ops.
    np.testing.assert_array_equal(s.from_ops(np.array([0, 0, 2, 1])), [0, 2, 1])
