"""What keeps grouping near-linear on large graphs: bounded colocation searches and giving up on colours early."""

import numpy as np

from placer.core.grouping import group
from placer.core.op_graph import OpGraph


def colocated_across(chain_len: int) -> OpGraph:
    """v -> c0 -> ... -> c{k-1}, and r (colocated with v) a source that sorts after the whole chain."""
    names = ["v"] + [f"c{i}" for i in range(chain_len)] + ["r"]
    edges = [(names[i], names[i + 1], 8) for i in range(chain_len)]
    colocation = ["loc:@v"] + [""] * chain_len + ["loc:@v"]
    return OpGraph.create("across", names, ["Op"] * len(names), edges, colocation=colocation)


def only_colocation(g: OpGraph):
    return group(g, merge_single_consumer=False, colocate_gradients=False)


def test_colocated_ops_a_short_search_apart_merge():
    g = colocated_across(5)
    gr = only_colocation(g)
    i = g.index()
    assert gr.op_group[i["v"]] == gr.op_group[i["r"]]
    assert gr.num_groups == 6


def test_colocated_ops_a_long_search_apart_are_tied_not_merged():
    # No path joins v and r, but proving it means visiting the 100 chain ops placed between
    # them: the merge is refused after the closure's budget, and the two are tied instead.
    g = colocated_across(100)
    gr = only_colocation(g)
    i = g.index()
    gv, gr_ = gr.op_group[i["v"]], gr.op_group[i["r"]]
    assert gv != gr_
    assert gr.tie[gv] == gr.tie[gr_]
    assert gr.num_groups == 102 and gr.acyclic


def alternating_chain(n: int) -> OpGraph:
    names = [f"op{i}" for i in range(n)]
    return OpGraph.create("chain", names, ["Op"] * n, [(names[i], names[i + 1], 64) for i in range(n - 1)])


def test_coloured_grouping_gives_up_when_colours_keep_too_many_groups():
    g = alternating_chain(10)
    colors = np.arange(10) % 2  # neighbours never share a colour: no merge is possible
    assert group(g, target_groups=2, op_colors=colors, give_up_above=5) is None
    kept = group(g, target_groups=2, op_colors=colors, give_up_above=10)
    assert kept is not None and kept.num_groups == 10


def test_coloured_grouping_that_can_reach_the_limit_is_not_given_up():
    g = alternating_chain(10)
    colors = np.repeat([0, 1], 5)  # two runs of one colour: coarsening can leave two groups
    gr = group(g, target_groups=2, op_colors=colors, give_up_above=2)
    assert gr is not None and gr.num_groups == 2
    assert len(set(colors[gr.op_group == 0])) == 1
