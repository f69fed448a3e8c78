"""The benchmark suite's machinery: the split, resuming, and the report computed from result files alone."""

from __future__ import annotations

import ast
import json
import multiprocessing
import os
import subprocess

import pytest

from bench import suite, suite_graphs, suite_report, suite_runs


def test_split_covers_every_suite_graph_exactly_once():
    split = suite.load_split()
    names = [g.name for g in suite_graphs.all_graphs()]
    assert sorted(split["tune"] + split["test"]) == sorted(names)
    assert len(set(split["tune"] + split["test"])) == len(split["tune"]) + len(split["test"])
    # The tune split: the paper graphs, two application families and one DAG size.
    tune = suite_graphs.by_name(split["tune"])
    assert {g.name for g in tune if g.family == "paper"} == {"rnnlm", "nmt", "inception_v3"}
    assert len({g.family for g in tune if g.kind == "keras"}) == 2
    assert [g.name for g in tune if g.kind == "dag"] == ["dag300"]
    # A test-split family shares no graph with the tune split's families.
    tune_families = {g.family for g in tune}
    assert not [g.name for g in suite_graphs.by_name(split["test"]) if g.family in tune_families and g.kind == "keras"]


def test_every_keras_graph_has_its_model_function():
    tree = ast.parse(open(suite_graphs.MODELS_FILE).read())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    keras = [g for g in suite_graphs.all_graphs() if g.kind == "keras"]
    assert len([g for g in keras if g.family != "sequence"]) >= 20
    assert len({g.family for g in keras if g.family != "sequence"}) >= 8
    assert [g.source for g in keras if g.source not in functions] == []


def _baseline_jobs(graphs, methods, seed=0):
    return [{"graph": g, "cluster": "k80x2", "method": m, "budget": 0, "seed": seed, "kind": "baseline"}
            for g in graphs for m in methods]  # fmt: skip


def test_resume_runs_only_what_has_no_result(tmp_path):
    results = str(tmp_path / "results")
    jobs = _baseline_jobs(["dag300", "dag1000"], ["single_gpu", "m_topo"])
    assert suite.execute(jobs, results, {"baseline": "abc1234"}, workers=0, log=lambda *_: None) == 4
    files = sorted(os.path.relpath(os.path.join(d, f), results) for d, _, fs in os.walk(results) for f in fs)
    assert files == [
        "k80x2/dag1000/m_topo-b0-s0-abc1234.json", "k80x2/dag1000/single_gpu-b0-s0-abc1234.json",
        "k80x2/dag300/m_topo-b0-s0-abc1234.json", "k80x2/dag300/single_gpu-b0-s0-abc1234.json",
    ]  # fmt: skip
    first = {f: os.path.getmtime(os.path.join(results, f)) for f in files}
    assert (
        suite.execute(jobs, results, {"baseline": "abc1234"}, workers=0, log=lambda *_: None) == 0
    )  # all done: nothing reruns
    os.remove(os.path.join(results, files[0]))  # as if killed before that run finished
    assert suite.execute(jobs, results, {"baseline": "abc1234"}, workers=0, log=lambda *_: None) == 1
    assert {f: os.path.getmtime(os.path.join(results, f)) for f in files[1:]} == {f: first[f] for f in files[1:]}
    # A run of another code commit is not a result of this one.
    assert len(suite_runs.pending(jobs, results, {"baseline": "def5678"})) == 4
    r = json.load(open(os.path.join(results, files[1])))
    # single_gpu on one GPU of k80x2: every op on one device, so no faster than the bound, and a valid result.
    assert r["best"] >= r["bound"] > 0 and r["ops"] == 1000 and r["placements"] == 1


def _run(graph, method, seed, best, budget=1000, curve=None, kind="learned", bound=0.1, seconds=10.0):
    return {
        "graph": graph, "cluster": "k80x4", "method": method, "budget": budget if kind == "learned" else 0,
        "seed": seed, "kind": kind, "commit": "c0ffee0", "ops": 50, "groups": 12, "bound": bound,
        "bound_term": "critical path", "best": best, "placements": budget if kind == "learned" else 1,
        "curve": curve if curve is not None else [[1, best, 0.0]], "search_seconds": seconds,
        "wall_seconds": seconds + 1, "finished": "2026-01-01T00:00:00Z",
    }  # fmt: skip


# Reference step times per (graph, seed), and what each method got; worked out by hand below.
REF = {("g1", 0): 0.2, ("g1", 1): 0.2, ("g2", 0): 0.4, ("g2", 1): 0.4}
MIXED = {("g1", 0): 0.18, ("g1", 1): 0.2002, ("g2", 0): 0.48, ("g2", 1): 0.38}  # ratios 0.9, 1.001, 1.2, 0.95
BETTER = {k: v * f for (k, v), f in zip(REF.items(), (0.5, 0.6, 0.45, 0.55), strict=True)}


def _hand_made() -> list[dict]:
    out = []
    for (g, s), t in REF.items():
        out.append(_run(g, "annealing_warm", s, t, curve=[[1, 2 * t, 0.0], [300, t, 30.0]], seconds=100.0))
        out.append(_run(g, "mixed", s, MIXED[(g, s)]))
        out.append(_run(g, "better", s, BETTER[(g, s)]))
        out.append(_run(g, "single_gpu", s, 3 * t, kind="baseline"))
    return out


def test_report_counts_wins_ties_losses_from_result_files(tmp_path):
    for r in _hand_made():
        suite_runs.save(str(tmp_path), r)
    results = suite_report.latest(suite_runs.load_all(str(tmp_path)))
    rows = {r["method"]: r for r in suite_report.method_summary(results, {"g1", "g2"}, 1000, "annealing_warm")}
    # mixed: ratios 0.9 (win), 1.001 (tie: within 0.2%), 1.2 (loss), 0.95 (win); median (0.95 + 1.001) / 2.
    assert (rows["mixed"]["wins"], rows["mixed"]["ties"], rows["mixed"]["losses"]) == (2, 1, 1)
    assert rows["mixed"]["median_ratio"] == pytest.approx(0.9755)
    # Signed ranks of the differences -0.02, +0.0002, +0.08, -0.02... g2 s1 is -0.02 too: ranks 1 (0.0002),
    # 2.5 and 2.5 (the two -0.02), 4 (0.08): W+ = 5 = W-, the middle of the distribution, so p = 1.
    assert rows["mixed"]["p"] == pytest.approx(1.0)
    # better: 4 wins of 4 (ratios 0.45 to 0.6); the exact two-sided p of W+ = 0 over n = 4 is 2 / 2**4.
    assert (rows["better"]["wins"], rows["better"]["median_ratio"]) == (4, pytest.approx(0.525))
    assert rows["better"]["p"] == pytest.approx(0.125)
    assert (rows["annealing_warm"]["ties"], rows["annealing_warm"]["p"]) == (4, None)
    assert rows["single_gpu"]["losses"] == 4 and rows["single_gpu"]["median_ratio"] == pytest.approx(3.0)
    # Wall time per placement: 10 s for 1,000 placements.
    assert rows["mixed"]["seconds_per_placement"] == pytest.approx(0.01)


def test_report_counts_runs_above_the_fastest_baseline():
    results = _hand_made()  # single_gpu, the only baseline, is 3x annealing_warm's step time everywhere
    results.append(_run("g1", "stuck", 0, 0.8))  # 0.8 s against single_gpu's 0.6 s: 1.333x
    results.append(_run("g2", "stuck", 0, 1.2))  # exactly single_gpu's: not above
    results.append(_run("g2", "stuck", 0, 9.0, budget="300s"))  # a wall-time run is not counted
    above = suite_report.above_best_baseline(results)
    assert above["annealing_warm"] == (0, 4, 1.0) and above["mixed"][:2] == (0, 4)
    assert above["stuck"] == (1, 2, pytest.approx(0.8 / 0.6))
    assert "single_gpu" not in above
    line = suite.above_baselines(results)[0]
    assert "`stuck` 1 of 2 (up to 1.333x)" in line and "`annealing_warm` 0 of 4;" in line


def test_report_reads_smaller_budgets_and_wall_times_off_the_curves():
    results = _hand_made()
    # annealing_warm on g1 seed 0: 0.4 s from its first placement, 0.2 s from its 300th (at 30 s of 100 s).
    assert suite_report.value(results, "g1", "k80x4", "annealing_warm", 256, 0) == pytest.approx(0.4)
    assert suite_report.value(results, "g1", "k80x4", "annealing_warm", 1000, 0) == pytest.approx(0.2)
    assert suite_report.value(results, "g1", "k80x4", "annealing_warm", 4000, 0) is None  # no run that long
    assert suite_report.value(results, "g1", "k80x4", "single_gpu", 256, 0) == pytest.approx(0.6)  # baseline
    # 1,000 placements in 100 s: 10 a second, so 200 by 20 s (best 0.4 s) and all 1,000 by 300 s (ended early).
    assert suite_report.at_wall(results, "g1", "k80x4", "annealing_warm", 0, 20.0) == (pytest.approx(0.4), 200, False)  # fmt: skip
    assert suite_report.at_wall(results, "g1", "k80x4", "annealing_warm", 0, 300.0) == (pytest.approx(0.2), 1000, True)  # fmt: skip
    table = suite_report.graph_table(results, 1000)
    assert "| g1 " in table and "200.0 ms (2.000x)" in table and "600.0 ms (6.000x)" in table
    assert suite_report.wall_table(results, 60.0) == "No wall-time runs."
    # A 300 s run of `mixed` on g2 seed 1 (40 placements a second, 0.5 s until 50 s, then 0.3 s): the table has
    # that triple only; annealing_warm has no wall-time run there, so its 1,000-placement run (done at 100 s).
    results.append(_run("g2", "mixed", 1, 0.3, budget="300s", curve=[[1, 0.5, 0.0], [2000, 0.3, 50.0]], seconds=300.0))  # fmt: skip
    results[-1]["placements"] = 12000
    rows = [line for line in suite_report.wall_table(results, 60.0).splitlines() if line.startswith("| g2")]
    cells = [c.strip() for c in rows[0].split("|")[1:-1]]
    assert len(rows) == 1 and cells[:5] == ["g2", "k80x4", "1", "400.0 ms (600)", "300.0 ms (2,400)"]


def test_section_is_written_from_results_alone(tmp_path):
    png = str(tmp_path / "ratio.png")
    results = _hand_made()
    suite_report.plot(results, 1000, png)
    split = {"tune": [], "test": ["g1", "g2"]}
    body = suite.section(results, split, {"split_commit": "5p1it00"}, png)
    assert os.path.getsize(png) > 0
    assert "`c0ffee0` (16 runs)" in body and "`5p1it00`" in body and "2 graphs (2 of the test split)" in body
    assert "failed" not in body
    failed = {**results[1], "best": None, "error": "InputError: no expert placement for this graph: g1"}
    assert suite.failures([failed]) == [
        "- `mixed` failed on 1 runs (g1): InputError: no expert placement for this graph: g1",
        "",
    ]
    assert "### Step time at 256 placements" in body and "### Test split at 1,000 placements" in body
    summary = body.split("### Test split at 1,000 placements")[1].split("###")[0]
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in summary.splitlines() if line.startswith("| ")]
    rows = {c[0]: c[1:] for c in cells}
    assert rows["mixed"] == ["4", "0.9755", "2/1/1", "1", "10 ms"]
    assert rows["better"] == ["4", "0.5250", "4/0/0", "0.125", "10 ms"]
    # The learned target at 1,000: mixed is at or under on 3 of 4 pairs, but g2's median ratio is
    # (1.2 + 0.95) / 2 = 1.075, over 1.02; better's worst graph is g1, (0.5 + 0.6) / 2.
    target = body.split("### Test split at 1,000 placements")[1].split("###")[0]
    assert "`mixed` (learns): at or under `annealing_warm` on 3 of 4 pairs (75%; target 2/3), worst graph median 1.0750x (g2; target at most 1.02x): NOT met" in target  # fmt: skip
    assert "`better` (learns): at or under `annealing_warm` on 4 of 4 pairs (100%; target 2/3), worst graph median 0.5500x (g1; target at most 1.02x): met" in target  # fmt: skip
    assert "`annealing_warm` (learns)" not in body
    assert rows["single_gpu"][:3] == ["4", "3.0000", "0/0/4"]


def test_a_report_without_note_keeps_the_one_given_before(tmp_path):
    results = str(tmp_path / "results")
    assert suite.run_note(results, "") == ""
    assert suite.run_note(results, "A preview.", keep=False) == "A preview."
    assert suite.run_note(results, "") == ""  # a preview stores nothing
    assert suite.run_note(results, "Took 3 h on 2 cores.\n") == "Took 3 h on 2 cores."
    assert suite.run_note(results, "") == "Took 3 h on 2 cores."
    assert suite.run_note(results, "Took 2 h.") == "Took 2 h."  # a new note replaces it
    assert suite.run_note(results, "") == "Took 2 h."
    assert suite_runs.load_all(results) == []  # the note is not a result


@pytest.mark.slow
def test_a_learned_run_records_its_budget_curve_and_groups():
    job = {"graph": "dag300", "cluster": "k80x2", "method": "annealing", "budget": 24, "seed": 0, "kind": "learned"}
    r = suite_runs.run_job(job)
    assert r.get("error") is None and r["placements"] == 24 and r["groups"] > 0
    # The best-so-far curve only falls, ends at the run's best, and none of it beats the bound.
    times = [t for _, t, _ in r["curve"]]
    assert times == sorted(times, reverse=True) and times[-1] == r["best"] >= r["bound"]
    assert suite_report.value([r], "dag300", "k80x2", "annealing", 24, 0) == r["best"]


def test_the_two_speed_cluster_runs_ops_at_half_speed_on_its_slow_gpus():
    import numpy as np  # noqa: PLC0415

    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core.op_graph import OpGraph  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415
    from placer.measure import registry  # noqa: PLC0415

    cluster = cluster_lib.load("k80x4_slow4")
    assert [d.type for d in cluster.devices] == ["CPU"] + ["GPU"] * 8
    assert [d.speed for d in cluster.devices[1:]] == [1.0] * 4 + [0.5] * 4
    # Two independent ops of 10 ms on a GPU (no edges, no bytes): apart on two fast GPUs they take 10 ms
    # (plus one GPU dispatch); one of them on a slow GPU takes 20 ms there.
    graph = OpGraph.create("two", ["a", "b"], ["MatMul"] * 2, [], device_types=("CPU", "GPU"),
                           compute_cost=np.array([[1.0, 0.01], [1.0, 0.01]]))  # fmt: skip
    names = [d.name for d in cluster.devices]
    fast, mixed = Placement.from_ops(graph, [1, 2], names), Placement.from_ops(graph, [1, 5], names)
    m_fast, m_mixed = registry.make_measurer("sim", graph, cluster).measure([fast, mixed])
    dispatch = cluster.devices[1].dispatch
    assert m_fast.step_time == pytest.approx(0.01 + dispatch, rel=1e-6)
    assert m_mixed.step_time == pytest.approx(0.02 + dispatch, rel=1e-6)


def test_later_phases_pick_on_the_tune_split_and_size_wall_runs_by_rate():
    results = _hand_made()
    # On g1 and g2 the ratios to annealing_warm are: better 0.525, mixed 0.9755, annealing_warm 1.
    # The reference always runs at the later budget too: every ratio there is taken against it.
    assert suite.chosen(results, {"g1", "g2"}, 1000, top=1) == ["better", "annealing_warm"]
    assert suite.chosen(results, {"g1", "g2"}, 1000, top=3) == ["better", "mixed", "annealing_warm"]
    # A tune split without results: every graph decides.
    assert suite.chosen(results, {"nothing"}, 1000, top=1) == ["better", "annealing_warm"]
    jobs = suite.later_jobs(results, ["g1"], ["k80x4"], [0], {"tune": ["g1"]}, 1000, 4000, 1, 300)
    assert [(j["method"], j["budget"]) for j in jobs if j["budget"] == 4000] == [("better", 4000), ("annealing_warm", 4000)]  # fmt: skip
    wall = {j["method"]: j["cap"] for j in jobs if j["budget"] == "300s"}
    # annealing_warm measured 1,000 placements in 100 s: 3,000 in 300 s; the others 1,000 in 10 s: 30,000.
    assert wall == {"annealing_warm": 3000, "mixed": 30000, "better": 30000}
    # Wall-time runs only on the graphs named for them; the 4,000-placement phase still covers every graph.
    jobs = suite.later_jobs(results, ["g1", "g2"], ["k80x4"], [0], {"tune": ["g1"]}, 1000, 4000, 1, 300, ["g2"])
    assert {j["graph"] for j in jobs if j["budget"] == "300s"} == {"g2"}
    assert {j["graph"] for j in jobs if j["budget"] == 4000} == {"g1", "g2"}
    jobs = suite.later_jobs(results, ["g1", "g2"], ["k80x4"], [0], {"tune": ["g1"]}, 1000, 4000, 1, 300, [])
    assert not [j for j in jobs if j["budget"] == "300s"]  # none named: none run


def test_each_methods_results_are_keyed_to_the_code_its_runs_import():
    files = {m: set(suite_runs.code_files(m)) for m in ("seq2seq", "exact", "annealing_warm", "baseline")}
    shared = {"placer/measure/fast.py", "placer/core/op_graph.py", "placer/rl/train_lib.py", "baselines"}
    shared |= {"placer/__init__.py", "placer/core/__init__.py"}  # a package's code runs on its modules' import
    assert all(shared <= f for f in files.values())  # the simulator, the graph, the loop: every run measures them
    # A method's own code makes only its results stale: CP-SAT's model is exact's, the learner seq2seq's.
    assert "placer/measure/exact_model.py" in files["exact"] and "placer/rl/learn_seq2seq.py" in files["seq2seq"]
    assert "placer/measure/exact_model.py" not in files["seq2seq"] | files["annealing_warm"] | files["baseline"]
    assert "placer/rl/learn_seq2seq.py" not in files["exact"] | files["annealing_warm"]
    assert "placer/rl/learn_anneal.py" in files["exact"]  # exact's hint is annealing's
    assert not any(f.startswith(("placer/sharing", "placer/apply", "placer/compare")) for f in set().union(*files.values()))  # fmt: skip


def test_a_commit_that_changes_one_methods_file_makes_only_its_results_stale(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    for name in ("shared.py", "mine.py", "theirs.py"):
        (tmp_path / name).write_text("x = 1\n")
    git("add", ".")
    git("commit", "-qm", "first")
    first = suite_runs.code_commit(["shared.py", "mine.py"], root=str(tmp_path))
    (tmp_path / "theirs.py").write_text("x = 2\n")
    git("commit", "-qam", "theirs")
    assert suite_runs.code_commit(["shared.py", "mine.py"], root=str(tmp_path)) == first
    (tmp_path / "mine.py").write_text("x = 3\n")
    assert suite_runs.code_commit(["shared.py", "mine.py"], root=str(tmp_path)) == first + "+changes"
    git("commit", "-qam", "mine")
    assert suite_runs.code_commit(["shared.py", "mine.py"], root=str(tmp_path)) not in (first, first + "+changes")
    results = [{"method": "mine", "kind": "learned", "commit": first}, {"method": "b", "kind": "baseline", "commit": first}]  # fmt: skip
    assert suite_runs.current(results, {"mine": "later", "baseline": first}) == results[1:]


def test_a_graph_that_cannot_be_built_is_named_and_the_others_go_on():
    assert suite.prepare_one("dag300", "k80x2") == ("dag300", "k80x2", "300")
    graph, cluster, why = suite.prepare_one("dag300", "no_such_cluster")
    assert (graph, cluster) == ("dag300", "no_such_cluster") and why.startswith("failed: InputError: no_such_cluster")


def _exact_after_tensorflow() -> float:
    """In a suite worker: loads TensorFlow, as a learned run does, then solves two chains on two GPUs exactly."""
    import tensorflow  # noqa: F401, PLC0415

    from placer.measure import exact  # noqa: PLC0415
    from tests.hand_graphs import chains_and_gpus  # noqa: PLC0415

    _, result = exact.place(*chains_and_gpus(), time_limit=30.0)
    return result.step_time


@pytest.mark.slow
def test_a_suite_worker_can_run_the_exact_method_after_tensorflow():
    # CP-SAT crashes in a process that loaded TensorFlow first; a worker runs learned methods before exact.
    with multiprocessing.get_context("spawn").Pool(1, suite.worker_start) as pool:
        assert pool.apply(_exact_after_tensorflow) == pytest.approx(3.0)  # one chain per GPU, by hand


@pytest.mark.slow
def test_a_pretrained_run_fine_tunes_the_tune_splits_policy_and_pretraining_is_done_once(tmp_path, monkeypatch):
    from bench import suite_transfer
    from graphs import pipeline

    monkeypatch.setattr(pipeline, "CACHE_DIR", str(tmp_path))
    lines = []
    record = str(tmp_path / "record")
    policy = suite_transfer.pretrain(["dag300"], "k80x2", 2, "c0ffee0", log=lines.append, record=record)
    assert json.load(open(os.path.join(policy, "policy.json")))["steps"] == 2
    assert os.path.exists(os.path.join(policy, "graphs", "dag300.graph.json.gz"))
    made = json.load(open(os.path.join(record, "k80x2-s2-c0ffee0.json")))
    assert (made["steps"], made["tune"]) == (2, ["dag300"]) and made["seconds"] > 0
    assert suite_transfer.pretrain(["dag300"], "k80x2", 2, "c0ffee0", log=lines.append, record=record) == policy
    assert sum("tune graphs" in line for line in lines) == 1  # the second call found it made
    (job,) = suite_transfer.jobs(["dag300"], "k80x2", [0], 16, policy)
    r = suite_runs.run_job(job)
    assert (r["method"], r["placements"]) == ("pretrained", 16) and r["best"] >= r["bound"] > 0
    # Its results go stale with the pretraining code and the learner it runs, not with CP-SAT's model.
    files = set(suite_runs.code_files("pretrained"))
    assert {"placer/rl/pretrain_lib.py", "placer/rl/learn_seq2seq.py", "bench/suite_transfer.py"} <= files
    assert "placer/measure/exact_model.py" not in files


def test_the_pretrained_section_judges_the_target_per_budget():
    from bench import suite_transfer

    results = []
    # annealing_warm 1 s everywhere; pretrained at 1,000: 0.9, 1.001 (a tie), 1.1 on three pairs -> 2 of 3, met;
    # at 256 (read off its curve): 1.2, 1.2, 0.95 -> 1 of 3, not met.
    for (g, s), (at256, final) in {("g1", 0): (1.2, 0.9), ("g1", 1): (1.2, 1.001), ("g2", 0): (0.95, 1.1)}.items():
        results.append(_run(g, "annealing_warm", s, 1.0))
        results.append(_run(g, "pretrained", s, final, curve=[[1, at256, 0.0], [900, final, 5.0]]))
    text = suite_transfer.section(results, [], "k80x4")
    assert "`pretrained` at or under `annealing_warm` (within 0.2%) on 1 of 3 pairs (33%; target 2/3): NOT met" in text
    assert "`pretrained` at or under `annealing_warm` (within 0.2%) on 2 of 3 pairs (67%; target 2/3): met" in text
