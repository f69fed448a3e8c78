"""placer-compare's exact row and bound row, on the hand-built graph of test_compare."""

import json

from tests.compare.test_compare import GRAPH, write_cluster
from tests.inprocess import call


def test_exact_row_proves_the_optimum_beside_the_bound_row(tmp_path, capsys):
    # x (1 s) -> a (4 s), b (4 s) -> c (1 s) on CPU + 2 GPUs, free transfers: a and b on different GPUs
    # give 1 + 4 + 1 = 6 s, the critical path, so the bound row is 6 s with the path binding; the load
    # LP spreads the 10 GPU-seconds over two GPUs and the 10x slower CPU: 10 / 2.1 = 4.76 s. The
    # single GPU takes 10 s (1.67x the bound); exact finds 6 s at op level and proves it.
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    code = call(
        "placer.compare_main",
        f"--graph={tmp_path / 'g.json'}",
        f"--cluster={write_cluster(tmp_path, 10**9)}",
        "--methods=single_gpu,exact",
        "--exact_seconds=10",
        "--exact_level=op",
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "exact: CP-SAT for 10 s at op level" in err
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    assert rows["single_gpu"][1:3] == ["10.00", "s"] and "1.67" in rows["single_gpu"]
    assert rows["exact"][1:3] == ["6.000", "s"] and rows["exact"][-6] == "1"
    assert rows["bound"][1:] == ["6.000", "s", "1"]
    assert "bound: 6.000 s (critical path binds; load 4.762 s)" in out
    line = next(x for x in out.splitlines() if x.startswith("exact: simulated"))
    assert "model makespan 6 s, proven bound 6 s (op level; gap 1.0000x)" in line and line.endswith("optimal")


def test_measure_reports_an_exact_placement_against_its_model(tmp_path, capsys):
    # The exact placement of the graph above (6 s), saved by placer-compare, measured by placer-measure:
    # the simulator's 6 s equals the model's makespan, so no line reports a difference; a copy whose
    # recorded makespan is 5 s (20% off) is reported.
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    cluster = write_cluster(tmp_path, 10**9)
    args = [f"--graph={tmp_path / 'g.json'}", f"--cluster={cluster}"]
    code = call("placer.compare_main", *args, "--methods=exact", "--exact_level=op", f"--out={tmp_path / 'o'}")
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    assert call("placer.measure_main", *args, f"--placement={tmp_path / 'o' / 'placement_exact.json'}") == 0
    out = capsys.readouterr().out
    assert "step time: 6.000 s" in out
    assert "exact: model makespan 6 s, proven bound 6 s (op level, optimal)" in out
    assert "differs from the model makespan" not in out
    saved = json.loads((tmp_path / "o" / "placement_exact.json").read_text())
    saved["metadata"]["model_makespan"] = 5.0
    (tmp_path / "p.json").write_text(json.dumps(saved))
    assert call("placer.measure_main", *args, f"--placement={tmp_path / 'p.json'}") == 0
    assert "differs from the model makespan by +20.0% (more than 5%)" in capsys.readouterr().out
