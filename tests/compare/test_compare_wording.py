"""placer-compare's columns say what they hold: changes in words, times with units; it says when it searches."""

import json

import pytest

from placer.compare import plots, tables
from placer.core import io as graph_io
from tests.compare.test_compare import GRAPH, rl_placement, write_cluster
from tests.inprocess import call


def test_against_reads_a_speedup_as_the_step_times_change():
    # expert 6 s against single_gpu 10 s: speedup 10/6, step time 40.0% lower.
    assert tables.against(10 / 6) == "40.0% faster"
    # single_cpu 100 s against expert 6 s: speedup 0.06, step time +1566.7%.
    assert tables.against(0.06) == "1566.7% slower"
    assert tables.against(1.0) == "the same"


def test_log_scale_once_bars_differ_more_than_10x():
    # Worked in test_compare: single_cpu 100 s, single_gpu 10 s, expert 6 s: 100 / 6 > 10.
    assert plots.log_scale([100.0, 10.0, 6.0])
    assert not plots.log_scale([10.0, 6.0])  # 10 / 6 < 10


def test_cli_table_in_words_and_the_search_announced(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    graph = graph_io.from_json(GRAPH)
    rl_placement(graph).save(str(tmp_path / "mine.json"))  # 6 s
    code = call(
        "placer.compare_main",
        f"--graph={tmp_path / 'g.json'}",
        f"--cluster={write_cluster(tmp_path, 10**9)}",
        "--methods=single_gpu,expert,random_search",
        "--search_budget=3",
        f"--placements={tmp_path / 'mine.json'}",
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "random_search: searching, 3 measured placements" in err
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
    # single_gpu 10 s against the expert's 6 s: 66.7% slower; the expert against single_gpu: 40.0% faster.
    assert "10.00 s" in rows["single_gpu"] and "66.7% slower" in rows["single_gpu"]
    assert "6.000 s" in rows["expert"] and "40.0% faster" in rows["expert"]
    assert "faster is better" in out


@pytest.mark.parametrize("speedup", [float("nan"), None, 0.0])
def test_against_without_a_reference_is_empty(speedup):
    assert tables.against(speedup) == ""
