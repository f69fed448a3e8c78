"""Placement files record how many placements their method measured, and placer-compare
gives its same-budget searches that many, or says which budget it used and why."""

import pytest

from configs import pretrain
from placer.compare import compare_lib
from placer.core import cluster as cluster_lib
from placer.core import generated
from placer.core import io as graph_io
from placer.core.placement import Placement
from placer.rl import graph_policy, place_lib
from tests.inprocess import call


def compare(capsys, *argv):
    """Runs placer-compare in this process; returns (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = call("placer.compare_main", *argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def zero_shot(tmp_path_factory):
    """A graph file and placer-place's placement of it (greedy plus 5 samples, untrained policy)."""
    folder = tmp_path_factory.mktemp("zero_shot")
    graph = generated.generate("layered", 24, 1)
    config = pretrain.get_config("small")
    config.placer.policy.gnn_hidden_size = 16
    config.placer.policy.gnn_layers = 1
    policy = graph_policy.build(config.placer.policy, seed=0)
    result = place_lib.place(policy, graph, cluster_lib.load("k80x4"), config.placer, samples=5, seed=0, source="test")
    graph_io.save(graph, str(folder / "g.graph.json"))
    result["placement"].save(str(folder / "zero_shot.json"))
    return folder


def test_zero_shot_placement_records_what_it_measured(zero_shot):
    # The greedy placement and the 5 samples: 6 measured.
    assert Placement.load(str(zero_shot / "zero_shot.json")).metadata["samples"] == 6


def test_compare_gives_searches_the_recorded_count(zero_shot, capsys):
    path = zero_shot / "zero_shot.json"
    code, out, err = compare(
        capsys,
        f"--graph={zero_shot / 'g.graph.json'}",
        "--cluster=k80x4",
        "--methods=local_search",
        f"--placements={path}",
        f"--out={zero_shot / 'out'}",
    )
    assert code == 0, err
    assert f"same-budget searches: 6 measured placements each (as many as {path} measured" in out
    searched = Placement.load(str(zero_shot / "out" / "placement_local_search.json"))
    assert searched.metadata["budget"] == 6 and searched.metadata["samples"] == 6


def test_compare_says_when_the_flag_shrinks_a_search(zero_shot, capsys):
    path = zero_shot / "zero_shot.json"
    code, out, err = compare(
        capsys,
        f"--graph={zero_shot / 'g.graph.json'}",
        "--cluster=k80x4",
        "--methods=random_search",
        f"--placements={path}",
        "--search_budget=4",
    )
    assert code == 0, err
    assert f"4 measured placements each (set by --search_budget; fewer than {path} measured 6)" in out


def test_compare_says_why_it_used_the_default(zero_shot, capsys, tmp_path):
    unrecorded = Placement.load(str(zero_shot / "zero_shot.json"))
    metadata = {k: v for k, v in unrecorded.metadata.items() if k != "samples"}
    path = tmp_path / "old.json"
    Placement.from_ops(
        graph_io.load(str(zero_shot / "g.graph.json")), unrecorded.devices, unrecorded.device_names, **metadata
    ).save(str(path))
    code, out, err = compare(
        capsys,
        f"--graph={zero_shot / 'g.graph.json'}",
        "--cluster=k80x4",
        "--methods=random_search",
        f"--placements={path}",
    )
    assert code == 0, err
    budget = compare_lib.DEFAULT_SEARCH_BUDGET
    assert f"{budget} measured placements each (the default: {path} record no count of measured placements" in out
