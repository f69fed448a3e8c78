"""The grouping's floor: graphs that the single-consumer rule would swallow keep at least the floor."""

import numpy as np

from placer.core.grouping import group, group_floor
from placer.core.op_graph import OpGraph
from tests.hand_graphs import chains


def fan_in(n: int) -> OpGraph:
    names = [f"src{i}" for i in range(n)] + ["sink"]
    return OpGraph.create("fan_in", names, ["Const"] * n + ["AddN"], [(f"src{i}", "sink", 8) for i in range(n)])


def layered(layers: int, width: int) -> OpGraph:
    """Each op of a layer feeds the op below it and its right neighbour's; the last layer feeds one op."""
    names = [f"l{i}_{j}" for i in range(layers) for j in range(width)] + ["loss"]
    edges = [
        (f"l{i}_{j}", f"l{i + 1}_{k}", 32)
        for i in range(layers - 1)
        for j in range(width)
        for k in {j, (j + 1) % width}
    ]
    edges += [(f"l{layers - 1}_{j}", "loss", 4) for j in range(width)]
    return OpGraph.create("layered", names, ["Conv2D"] * (layers * width) + ["Sum"], edges)


def test_floor_is_eight_per_device_at_least_32_never_above_the_target():
    assert group_floor(256, 5) == 40
    assert group_floor(256, 2) == 32
    assert group_floor(20, 5) == 20
    assert group_floor(0, 5) == 40


def test_chain_of_300_is_cut_into_even_pieces_not_swallowed():
    g = chains(1, 300, 64)
    assert group(g).num_groups == 1  # without a floor the paper's rule merges it whole
    gr = group(g, target_groups=256, min_groups=32)
    # Pieces of at most 300 // 32 = 9 ops: 34 groups, each a run of the chain.
    assert gr.num_groups == 34
    assert gr.sizes().max() == 9
    assert np.all(np.diff(gr.op_group) >= 0)


def test_fan_in_to_one_sink_keeps_the_floor():
    g = fan_in(300)
    gr = group(g, target_groups=40, min_groups=40)
    assert gr.num_groups >= 40
    # Coarsening keeps its balance cap: no group over 4 x 301 / 40 ops.
    assert gr.sizes().max() <= int(np.ceil(4 * 301 / 40))


def test_layered_dag_ending_in_one_op_keeps_the_floor():
    g = layered(10, 30)
    gr = group(g, target_groups=32, min_groups=group_floor(32, 4))
    assert gr.num_groups >= 32
    assert gr.acyclic


def test_group_counts_are_deterministic():
    g = layered(8, 20)
    counts = {group(g, target_groups=40, min_groups=40).num_groups for _ in range(3)}
    assert len(counts) == 1
