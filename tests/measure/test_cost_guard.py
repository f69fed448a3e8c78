"""The per-op cost check shared by the backends, on hand-made costs."""

import numpy as np

from placer.core.op_graph import OpGraph
from placer.measure import cost_guard


def _graph():
    return OpGraph.create("g", ["a", "b", "c", "d"], ["MatMul", "Add", "Sum", "Const"], [("a", "b"), ("b", "c")])


def test_drops_over_the_tolerance_only():
    unplaced = np.array([1.0, 2.0, 0.0, np.nan])
    placed = np.array([0.91, 1.7, 0.0, 1.0])  # a -9% (allowed), b -15%, c and d not comparable
    assert cost_guard.cost_drops(placed, unplaced).tolist() == [False, True, False, False]
    assert cost_guard.cost_drops(placed, unplaced, tolerance=0.2).tolist() == [False, False, False, False]
    assert not cost_guard.cost_drops(np.array([np.nan, 3.0, 1.0, 1.0]), unplaced).any()  # rises and gaps pass


def test_flag_names_the_op_that_lost_most_seconds():
    g = _graph()
    unplaced = np.array([10e-3, 1e-6, 1e-3, 0.0])
    placed = np.array([1e-3, 1e-9, 1e-3, 0.0])  # a loses 9 ms (-90%), b 1 us (-99.9%)
    flag = cost_guard.cost_flag(g, np.array([1, 0, 0, 0]), ["/device:GPU:0", "/device:GPU:1"], placed, unplaced)
    assert flag.startswith(
        "op 'a' (MatMul) costs 1.00 ms on /device:GPU:1 under this placement, 10.0 ms unplaced (90.0% less)"
    )
    assert flag.endswith("2 ops cost over 10% less than unplaced")
    assert cost_guard.cost_flag(g, np.zeros(4, int), ["/device:GPU:0"], unplaced, unplaced) == ""
