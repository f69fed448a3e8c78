"""placer-compare and its library on a hand-built 4-op graph, with answers worked out by hand."""

import csv
import json
import re

import pytest

from placer.compare import compare_lib, tables
from placer.core import cluster as cluster_lib
from placer.core import io as graph_io
from placer.core.placement import Placement
from placer.measure.simulator import Simulator
from tests import binaries

MB = 10**6


def op(name, gpu, persistent=0):
    return {
        "name": name,
        "type": "T",
        "output_shapes": [],
        "output_bytes": 0,
        "persistent_bytes": persistent,
        "colocation": "",
        "cost": {"CPU": 10.0 * gpu, "GPU": gpu},
    }


# Named like the NMT builder's scopes so the expert rules apply: input and
# layer 0 on GPU:0, layer 1 and the softmax on GPU:1. Edges carry no bytes, so
# transfers are free on the zero-latency links below.
#   x (1 s on GPU) -> a (4 s), x -> b (4 s), a -> c, b -> c (1 s); a and b own 0.6 MB each.
GRAPH = {
    "format": "placer.opgraph",
    "version": 1,
    "name": "nmt",
    "device_types": ["CPU", "GPU"],
    "ops": [
        op("input/x", 1.0),
        op("encoder/layer_0/a", 4.0, 6 * MB // 10),
        op("encoder/layer_1/b", 4.0, 6 * MB // 10),
        op("softmax/c", 1.0),
    ],
    "edges": [
        {"src": s, "dst": d, "bytes": 0, "control": False}
        for s, d in (
            ("input/x", "encoder/layer_0/a"),
            ("input/x", "encoder/layer_1/b"),
            ("encoder/layer_0/a", "softmax/c"),
            ("encoder/layer_1/b", "softmax/c"),
        )
    ],
}


def cluster_spec(gpu_memory, gpus=2):
    devices = [{"name": "/device:CPU:0", "type": "CPU", "memory_bytes": 10**11, "speed": 1.0}]
    devices += [
        {"name": f"/device:GPU:{i}", "type": "GPU", "memory_bytes": gpu_memory, "speed": 1.0} for i in range(gpus)
    ]
    return {"name": "tiny", "devices": devices, "links": {"default": {"bandwidth": 1e9, "latency": 0.0}, "pairs": []}}


def write_cluster(tmp_path, gpu_memory, gpus=2):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(cluster_spec(gpu_memory, gpus)))
    return path


def rl_placement(graph, **metadata):
    # x on GPU:1, a on GPU:0, b and c on GPU:1: x 0-1, a and b 1-5, c 5-6 -> 6 s.
    return Placement.from_ops(
        graph, [2, 1, 2, 2], ("/device:CPU:0", "/device:GPU:0", "/device:GPU:1"), method="rl", **metadata
    )


def test_speedups_worked_by_hand(tmp_path):
    graph = graph_io.from_json(GRAPH)
    cluster = cluster_lib.load(str(write_cluster(tmp_path, 10**9)))
    rows = compare_lib.compare(
        graph, cluster, Simulator(graph, cluster), ["single_cpu", "single_gpu", "expert"], [rl_placement(graph)]
    )
    by = {r.method: r for r in rows}
    assert list(by) == ["single_cpu", "single_gpu", "expert", "rl"]
    # single CPU: 10 + 40 + 40 + 10 = 100 s; single GPU: 1 + 4 + 4 + 1 = 10 s;
    # expert: x 0-1 and a 1-5 on GPU:0, b 1-5 and c 5-6 on GPU:1 = 6 s.
    assert by["single_cpu"].step_time == pytest.approx(100.0)
    assert by["single_gpu"].step_time == pytest.approx(10.0)
    assert by["expert"].step_time == pytest.approx(6.0)
    assert by["rl"].step_time == pytest.approx(6.0)
    assert by["single_cpu"].speedup_vs_reference == pytest.approx(0.06)
    assert by["single_cpu"].speedup_vs_single_gpu == pytest.approx(0.1)
    assert by["expert"].speedup_vs_single_gpu == pytest.approx(10 / 6)
    assert by["rl"].speedup_vs_reference == pytest.approx(1.0)
    # Lower bound: critical path x, a, c = 1 + 4 + 1 = 6 s (work / 3 devices is 10/3 s).
    assert by["expert"].ratio_to_lower_bound == pytest.approx(1.0)
    assert by["single_gpu"].ratio_to_lower_bound == pytest.approx(10 / 6)
    # Peak memory: the variables of a (GPU:0) and b (GPU:1).
    assert by["expert"].peak_memory == pytest.approx((0.0, 0.6 * MB, 0.6 * MB))
    assert by["single_gpu"].peak_memory == pytest.approx((0.0, 1.2 * MB, 0.0))
    assert by["rl"].place_seconds is None and by["expert"].place_seconds >= 0
    assert tables.best(rows).method == "expert"


def test_not_strict_reports_inapplicable_baseline():
    graph = graph_io.from_json({**GRAPH, "name": "other"})  # no expert rules for this name
    cluster = cluster_lib.make(
        "c", [cluster_lib.Device("/device:CPU:0", "CPU", 10**11), cluster_lib.Device("/device:GPU:0", "GPU", 10**11)]
    )
    rows = compare_lib.compare(graph, cluster, Simulator(graph, cluster), ["expert", "single_gpu"], strict=False)
    assert rows[0].failure == tables.NOT_APPLICABLE and "no expert placement" in rows[0].message
    assert rows[1].speedup_vs_reference is None and rows[1].step_time == pytest.approx(10.0)


def test_given_lower_bound_is_the_one_divided_by(tmp_path):
    # placer-compare computes the bound once for its printout and hands it in (its LP takes minutes at 200,000 ops).
    graph = graph_io.from_json(GRAPH)
    cluster = cluster_lib.load(str(write_cluster(tmp_path, 10**9)))
    rows = compare_lib.compare(graph, cluster, Simulator(graph, cluster), ["single_gpu"], lower_bound=5.0)
    assert rows[0].ratio_to_lower_bound == pytest.approx(10.0 / 5.0)  # not 10 / 6, the bound it would compute


def run(tmp_path, *args):
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    return binaries.run(
        "placer.compare_main", f"--graph={tmp_path / 'g.json'}", *args, cwd=tmp_path, timeout=180, MPLBACKEND="Agg"
    )


def expect_error(out, *words):
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()  # progress lines may come first; one error line, no traceback
    errors = [x for x in lines if x.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0] and "Traceback" not in out.stderr, out.stderr
    for w in words:
        assert w in errors[0], errors[0]


def test_cli_all_methods_with_oom_and_pngs(tmp_path):
    # 1 MB GPUs: single_gpu puts a and b (0.6 MB each) on GPU:0 and runs out of memory.
    graph = graph_io.from_json(GRAPH)
    rl_placement(graph).save(str(tmp_path / "best_placement.json"))
    out = run(
        tmp_path,
        f"--cluster={write_cluster(tmp_path, MB)}",
        f"--placements={tmp_path / 'best_placement.json'}",
        f"--out={tmp_path / 'out'}",
    )
    assert out.returncode == 0, out.stderr
    from baselines import registry

    with open(tmp_path / "out" / "table.csv") as f:
        rows = list(csv.DictReader(f))
    given = f"rl ({tmp_path / 'best_placement.json'})"  # a given placement's row: its method and file
    assert [r["method"] for r in rows] == registry.names() + [given, "bound"]
    # The bound row: the critical path x, a, c = 6 s binds (the load LP gives 10 / 2.1 = 4.76 s).
    assert float(rows[-1]["step_time_s"]) == pytest.approx(6.0) and rows[-1]["ratio_to_lower_bound"] == "1"
    assert rows[-1]["message"].startswith("6.000 s (critical path binds; load 4.762 s)")
    assert list(rows[0])[: len(tables.CSV_COLUMNS)] == list(tables.CSV_COLUMNS)
    assert list(rows[0])[len(tables.CSV_COLUMNS) :] == [
        "peak_bytes:/device:CPU:0",
        "peak_bytes:/device:GPU:0",
        "peak_bytes:/device:GPU:1",
    ]
    by = {r["method"]: r for r in rows}
    assert by["single_gpu"]["failure"] == "oom" and by["single_gpu"]["step_time_s"] == ""
    assert all(r["speedup_vs_single_gpu"] == "" for r in rows)  # the reference failed
    assert float(by["expert"]["step_time_s"]) == pytest.approx(6.0)
    assert float(by["single_cpu"]["speedup_vs_expert"]) == pytest.approx(0.06)
    md = (tmp_path / "out" / "table.md").read_text()
    assert re.search(r"^\| single_gpu +\| OOM +\|", md, re.M), md
    assert re.search(r"^single_gpu +OOM ", out.stdout, re.M), out.stdout
    # Why the single-GPU column is empty, in the terminal and the Markdown.
    assert "vs single GPU: n/a, single_gpu failed (out of memory on /device:GPU:0" in out.stdout
    assert "- vs single GPU: n/a, single_gpu failed" in md
    # Each baseline that placed the graph has its placement written, loadable for this graph.
    for name in registry.names():
        p = Placement.load(str(tmp_path / "out" / f"placement_{name}.json"))
        p.check_graph(graph)
        assert p.metadata["method"] == name
    assert not list((tmp_path / "out").glob("placement_rl*.json"))
    # The fastest row is drawn by default (several tie at 6 s here; the first of them).
    first_best = next(r["method"] for r in rows if r["step_time_s"] and float(r["step_time_s"]) == pytest.approx(6.0))
    assert sorted(p.name for p in (tmp_path / "out").glob("timeline_*")) == [f"timeline_{first_best}.png"]
    for name in ("step_times.png", f"timeline_{first_best}.png"):
        data = (tmp_path / "out" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_cli_timeline_of_given_method(tmp_path):
    out = run(
        tmp_path,
        f"--cluster={write_cluster(tmp_path, 10**9)}",
        "--methods=single_cpu,scotch",
        f"--out={tmp_path / 'o'}",
        "--timeline=single_cpu",
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "o" / "timeline_single_cpu.png").read_bytes()[:4] == b"\x89PNG"
    with open(tmp_path / "o" / "table.csv") as f:
        assert [r["method"] for r in csv.DictReader(f)] == ["single_cpu", "scotch", "bound"]


def test_cli_unknown_method(tmp_path):
    out = run(tmp_path, f"--cluster={write_cluster(tmp_path, 10**9)}", "--methods=expert,bogus")
    expect_error(out, "'bogus'", "single_gpu", "scotch", "m_sct")


def test_cli_placement_of_another_graph(tmp_path):
    other = graph_io.from_json({**GRAPH, "edges": GRAPH["edges"][:3]})  # one edge fewer
    Placement.from_ops(other, [1, 1, 1, 1], ("/device:CPU:0", "/device:GPU:0", "/device:GPU:1")).save(
        str(tmp_path / "p.json")
    )
    out = run(
        tmp_path,
        f"--cluster={write_cluster(tmp_path, 10**9)}",
        "--methods=single_cpu",
        f"--placements={tmp_path / 'p.json'}",
    )
    expect_error(out, "p.json", "fingerprint")


def test_cli_gpu_baseline_without_gpu(tmp_path):
    out = run(tmp_path, f"--cluster={write_cluster(tmp_path, 10**9, gpus=0)}", "--methods=single_cpu,single_gpu")
    expect_error(out, "single_gpu", "no GPU")


def _row(method, step, failure=None):
    return compare_lib.Row(method, step, failure, None, None, None, (), None)


def test_table1_speedup_as_the_paper_defines_it():
    from bench import table1

    # Paper, NMT on 2 GPUs: expert 4.99 s is the best baseline, RL 4.04 s: 4.99 / 4.04 - 1 = 23.5%.
    rows = {
        "single_cpu": _row("single_cpu", 10.72),
        "single_gpu": _row("single_gpu", None, "oom"),
        "scotch": _row("scotch", 14.19),
        "mincut": _row("mincut", 11.54),
        "expert": _row("expert", 4.99),
        "m_etf": _row("m_etf", 3.0),
        "rl": _row("rl", 4.04),
    }
    assert table1.rl_speedup(rows) == pytest.approx(0.235, abs=5e-4)
    # Counting the extra baselines, m_etf (3.0 s) beats RL: 3.0 / 4.04 - 1.
    assert table1.rl_speedup(rows, table1.PAPER_COLUMNS + table1.EXTRA_COLUMNS) == pytest.approx(3.0 / 4.04 - 1)
    assert table1.rl_speedup({**rows, "rl": _row("rl", None, "oom")}) is None


def test_cli_reference_file_is_the_speedup_baseline(tmp_path):
    graph = graph_io.from_json(GRAPH)
    rl_placement(graph).save(str(tmp_path / "mine.json"))  # 6 s, worked out in rl_placement
    out = run(
        tmp_path,
        f"--cluster={write_cluster(tmp_path, 10**9)}",
        "--methods=single_cpu,single_gpu",
        f"--reference={tmp_path / 'mine.json'}",
        f"--out={tmp_path / 'o'}",
    )
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "o" / "table.csv") as f:
        rows = {r["method"]: r for r in csv.DictReader(f)}
    mine = f"rl ({tmp_path / 'mine.json'})"
    assert list(rows) == ["single_cpu", "single_gpu", mine, "bound"]
    # single CPU 100 s, single GPU 10 s, against the file's 6 s.
    assert float(rows["single_cpu"][f"speedup_vs_{mine}"]) == pytest.approx(0.06)
    assert float(rows["single_gpu"][f"speedup_vs_{mine}"]) == pytest.approx(0.6)
    assert float(rows[mine][f"speedup_vs_{mine}"]) == pytest.approx(1.0)
    assert f"vs {mine}" in out.stdout and "n/a" not in out.stdout
    assert f"reference: {mine} (--reference)" in out.stdout.splitlines()


def test_cli_missing_reference_is_explained_or_refused(tmp_path):
    cluster = f"--cluster={write_cluster(tmp_path, 10**9)}"
    out = run(tmp_path, cluster, "--methods=single_cpu,single_gpu")
    assert out.returncode == 0, out.stderr
    # No expert row: the fastest baseline (single GPU, 10 s against the CPU's 100 s) is the reference.
    lines = out.stdout.splitlines()
    assert "reference: single_gpu, the fastest baseline (expert is not among the compared placements)" in lines
    assert re.search(r"^single_cpu +100.0 s +900.0% slower ", out.stdout, re.M), out.stdout
    expect_error(run(tmp_path, cluster, "--methods=single_cpu", "--reference=nobody"), "--reference", "'nobody'")


def test_cli_out_is_replaced_as_one_set_only_with_overwrite(tmp_path):
    cluster = f"--cluster={write_cluster(tmp_path, 10**9)}"
    first = run(tmp_path, cluster, "--methods=single_cpu,scotch", f"--out={tmp_path / 'o'}", "--timeline=single_cpu")
    assert first.returncode == 0, first.stderr
    before = {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()}
    again = run(tmp_path, cluster, "--methods=single_cpu,scotch", f"--out={tmp_path / 'o'}", "--timeline=scotch")
    expect_error(again, "--out", "--overwrite")
    assert {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()} == before
    replaced = run(
        tmp_path, cluster, "--methods=single_cpu,scotch", f"--out={tmp_path / 'o'}", "--timeline=scotch", "--overwrite"
    )
    assert replaced.returncode == 0, replaced.stderr
    # The old timeline does not stay beside the new one, and no temporary folder is left.
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "placement_scotch.json",
        "placement_single_cpu.json",
        "step_times.png",
        "table.csv",
        "table.md",
        "timeline_scotch.png",
    ]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_search_budget_is_the_rl_runs_unless_given():
    graph = graph_io.from_json(GRAPH)
    given = [rl_placement(graph), rl_placement(graph, samples=48), rl_placement(graph, samples=96)]
    assert compare_lib.search_budget(0, given) == 96  # the largest search behind a given placement
    assert compare_lib.search_budget(7, given) == 7
    assert compare_lib.search_budget(0, given[:1]) == compare_lib.DEFAULT_SEARCH_BUDGET
    with pytest.raises(compare_lib.InputError, match="--search_budget"):
        compare_lib.search_budget(-1, given)


def test_cli_searches_measure_as_many_placements_as_the_rl_run(tmp_path):
    graph = graph_io.from_json(GRAPH)
    rl_placement(graph, samples=40).save(str(tmp_path / "best_placement.json"))
    out = run(
        tmp_path,
        f"--cluster={write_cluster(tmp_path, 10**9)}",
        "--methods=random_search,local_search",
        f"--placements={tmp_path / 'best_placement.json'}",
        f"--out={tmp_path / 'o'}",
    )
    assert out.returncode == 0, out.stderr
    assert "same-budget searches: 40 measured placements each" in out.stdout
    for name in ("random_search", "local_search"):
        assert Placement.load(str(tmp_path / "o" / f"placement_{name}.json")).metadata["budget"] == 40
    out = run(tmp_path, f"--cluster={write_cluster(tmp_path, 10**9)}", "--methods=local_search", "--search_budget=-3")
    expect_error(out, "--search_budget")


def test_cli_any_graph_without_expert_rules_compares_with_the_fastest_baseline(tmp_path):
    """The hand-built graph renamed "mine": no expert rules, so the "vs" column compares with the fastest
    baseline. Worked out: single CPU runs 10 s of GPU work 10x slower, 100 s; the best placements split a and
    b over the GPUs, 1 + 4 + 1 = 6 s; the single CPU is then 100 / 6 = 16.7x slower."""
    (tmp_path / "mine.json").write_text(json.dumps({**GRAPH, "name": "mine"}))
    out = binaries.run(
        "placer.compare_main", f"--graph={tmp_path / 'mine.json'}", f"--cluster={write_cluster(tmp_path, 10**9)}",
        "--methods=all", f"--out={tmp_path / 'o'}", cwd=tmp_path, timeout=180, MPLBACKEND="Agg",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "o" / "table.csv") as f:
        rows = {r["method"]: r for r in csv.DictReader(f)}
    (said,) = [x for x in out.stdout.splitlines() if x.startswith("reference: ")]
    ref = re.fullmatch(r"reference: (\S+), the fastest baseline \(expert has no placement here \((.*)\)\)", said)
    assert ref and "no expert placement for this graph: mine" in ref.group(2), said
    assert float(rows[ref.group(1)]["step_time_s"]) == pytest.approx(6.0)
    assert float(rows["single_cpu"][f"speedup_vs_{ref.group(1)}"]) == pytest.approx(0.06)
    assert rows["expert"]["failure"] == "n/a"


def test_cli_single_gpu_reference_has_one_column(tmp_path):
    out = run(
        tmp_path, f"--cluster={write_cluster(tmp_path, 10**9)}", "--methods=single_cpu", "--reference=single_gpu",
        f"--out={tmp_path / 'o'}",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    header = out.stdout.splitlines()[2]
    assert header.split()[:5] == ["method", "step", "time", "vs", "single_gpu"] and "single GPU" not in out.stdout
    with open(tmp_path / "o" / "table.csv") as f:
        columns = next(csv.reader(f))
    assert len(columns) == len(set(columns)) and "speedup_vs_single_gpu" in columns
    md = (tmp_path / "o" / "table.md").read_text()
    assert "vs single_gpu" in md and "single GPU" not in md


def test_cli_given_rows_named_by_method_and_file_and_searches_get_the_largest_budget(tmp_path):
    graph = graph_io.from_json(GRAPH)
    rl_placement(graph, samples=40).with_metadata(method="annealing").save(str(tmp_path / "a.json"))
    rl_placement(graph, samples=70).with_metadata(method="cross_entropy").save(str(tmp_path / "b.json"))
    out = run(
        tmp_path, f"--cluster={write_cluster(tmp_path, 10**9)}", "--methods=single_gpu,random_search",
        f"--placements={tmp_path / 'a.json'},{tmp_path / 'b.json'}", f"--out={tmp_path / 'o'}",
        f"--timeline={tmp_path / 'b.json'}",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "o" / "table.csv") as f:
        names = [r["method"] for r in csv.DictReader(f)]
    assert names == ["single_gpu", "random_search", f"annealing ({tmp_path / 'a.json'})",
                     f"cross_entropy ({tmp_path / 'b.json'})", "bound"]  # fmt: skip
    # The second file's search measured more: the same-budget search gets its 70, and the output says why.
    assert Placement.load(str(tmp_path / "o" / "placement_random_search.json")).metadata["budget"] == 70
    assert (
        f"same-budget searches: 70 measured placements each (as many as {tmp_path / 'b.json'} measured (its "
        f"metadata 'samples'), the most of the given files (the others: {tmp_path / 'a.json'} 40))"
    ) in out.stdout.splitlines()
    assert len(list((tmp_path / "o").glob("timeline_cross_entropy*.png"))) == 1
