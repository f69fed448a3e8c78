"""The benchmark suite: every placement method on graphs no setting was tuned on, next to a lower bound.

Runs every registered method (placer.rl.methods) at `--budget` placements
and every baseline (baselines.registry) on every suite graph
(bench/suite_graphs.py) and cluster, one result file per run under
bench/results/suite/ (bench/suite_runs.py), skipping runs already done: a
killed suite resumes, another machine continues from the committed files.
The full tier then runs the three best methods and the best learned one at
`--final_budget` (chosen on the tune split of bench/suite_split.json), and
each method for `--wall_seconds` of wall time (seed 0, first cluster) for the
equal-wall-time view. Then it writes the "Suite" section of BENCHMARKS.md and
bench/out/suite/ratio_to_bound.png from the result files alone.

  make bench-suite-quick      # 6 graphs, 1 seed, 1,000 placements, k80x4
  make bench-suite            # everything
  python -m bench.suite --report_only   # the report from bench/results/suite/ alone
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import time

from absl import app, flags

from bench import report, suite_graphs, suite_report, suite_runs
from placer import cli
from placer.core import atomic

TASKS_PER_PROCESS = 8  # runs per worker process before a fresh one (TensorFlow's memory does not all come back)
SPLIT = os.path.join(suite_graphs.ROOT, "bench", "suite_split.json")
OUT = os.path.join(suite_graphs.ROOT, "bench", "out", "suite")
NOTE_FILE = "NOTE.md"  # in the results folder: the note of the run that wrote them
SLOW_FIRST = ("seq2seq",)  # methods that take 10-20 times the others' wall time per run
# The learned target: at or under the reference on this share of test-split pairs, and no graph's median
# ratio to it above TARGET_WORST.
TARGET_SHARE = 2 / 3
TARGET_WORST = 1.02
# Registered methods that learn nothing: the plain searches and the CP-SAT solve.
UNLEARNED = (*suite_runs.SEARCHES, "exact")
QUICK_GRAPHS = ["rnnlm", "mobilenetv3small", "regnetx002", "transformer_encoder", "lstm_lm", "dag1000"]


def define_flags() -> None:
    """Defines the suite's flags (when run as a script; tests import this module beside other bench scripts)."""
    global \
        _TIER, \
        _GRAPHS, \
        _CLUSTERS, \
        _METHODS, \
        _BASELINES, \
        _SEEDS, \
        _BUDGET, \
        _FINAL, \
        _TOP, \
        _WALL, \
        _WALL_GRAPHS, \
        _WORKERS, \
        _RAY, \
        _RESULTS, \
        _OUT, \
        _REPORT_ONLY, \
        _WRITE, \
        _COMMIT, \
        _NOTE, \
        _DRY
    _TIER = flags.DEFINE_enum("tier", "full", ["full", "quick"], "quick: QUICK_GRAPHS, seed 0, k80x4, no later phases.")
    _GRAPHS = flags.DEFINE_list("graphs", [], "Suite graphs to run (default: the tier's).")
    _CLUSTERS = flags.DEFINE_list(
        "clusters", [], f"Clusters (default: {', '.join(suite_graphs.CLUSTERS)}; quick: k80x4)."
    )
    _METHODS = flags.DEFINE_list("methods", [], "Registered methods to run (default: every one).")
    _BASELINES = flags.DEFINE_list("baselines", [], "Baselines to run (default: every one that does not search).")
    _SEEDS = flags.DEFINE_list("seeds", [], "Seeds (default: 0,1,2; quick: 0).")
    _BUDGET = flags.DEFINE_integer("budget", 1000, "Measured placements of every method's run.")
    _FINAL = flags.DEFINE_integer("final_budget", 4000, "Placements of the later phase (0: none).")
    _TOP = flags.DEFINE_integer("top", 3, "Methods run again at --final_budget (and the best learned one).")
    _WALL = flags.DEFINE_integer("wall_seconds", 300, "Wall-time runs of this many seconds (0: none).")
    _WALL_GRAPHS = flags.DEFINE_list(
        "wall_graphs", QUICK_GRAPHS, "Graphs of the wall-time runs (each method for --wall_seconds, 7 methods a graph)."
    )
    _WORKERS = flags.DEFINE_integer("workers", 2, "Runs at a time in worker processes (0: in this process).")
    _RAY = flags.DEFINE_string(
        "ray_address", "", "Run the jobs as Ray tasks on this cluster (the checkout on every node)."
    )
    _RESULTS = flags.DEFINE_string("results", suite_runs.RESULTS, "Folder of the result files.")
    _OUT = flags.DEFINE_string("out", OUT, "Folder of the PNG.")
    _REPORT_ONLY = flags.DEFINE_bool("report_only", False, "Run nothing: write the report from the result files.")
    _WRITE = flags.DEFINE_bool("write", True, "Write the BENCHMARKS.md section.")
    _COMMIT = flags.DEFINE_string(
        "commit", "", "Report the results of this code commit (default: those of the current code)."
    )
    _NOTE = flags.DEFINE_string(
        "note",
        "",
        "A sentence for the section (how long the run took, what was left out); kept in the results folder's "
        f"{NOTE_FILE} for later reports.",
    )
    _DRY = flags.DEFINE_bool("dry_run", False, "Print the runs still to do, run nothing.")


def load_split(path: str = SPLIT) -> dict[str, list[str]]:
    """The fixed split: {"tune": [graph names], "test": [graph names]}."""
    with open(path) as f:
        split = json.load(f)
    return {"tune": list(split["tune"]), "test": list(split["test"])}


def first_jobs(graphs, clusters, methods, baselines, seeds, budget: int) -> list[dict]:
    """Every method at `budget` and every baseline, on every graph, cluster and seed."""
    jobs = []
    for g in graphs:
        for c in clusters:
            for s in seeds:
                jobs += [{"graph": g, "cluster": c, "method": m, "budget": budget, "seed": s, "kind": "learned"} for m in methods]  # fmt: skip
                jobs += [{"graph": g, "cluster": c, "method": b, "budget": 0, "seed": s, "kind": "baseline"} for b in baselines]  # fmt: skip
    return jobs


def chosen(results: list[dict], tune: set[str], budget: int, top: int) -> list[str]:
    """The `top` methods with the lowest median ratio to the reference at `budget` on the tune split's graphs
    (every graph when the tune split has no results), the best learned one (not in UNLEARNED),
    and the reference itself, which every ratio at the later budget is taken against."""
    graphs = tune if any(r["graph"] in tune for r in results) else {r["graph"] for r in results}
    rows = suite_report.method_summary(
        [r for r in results if r["kind"] != "baseline"], graphs, budget, suite_runs.REFERENCE
    )
    ranked = [r["method"] for r in sorted(rows, key=lambda r: (r["median_ratio"] is None, r["median_ratio"] or 0))]
    learned = [m for m in ranked if m not in UNLEARNED]
    return list(dict.fromkeys([*ranked[:top], *learned[:1], suite_runs.REFERENCE]))


def later_jobs(results, graphs, clusters, seeds, split, budget, final, top, wall, wall_graphs=None) -> list[dict]:
    """The full tier's later phases: the chosen methods at `final` placements; every method for `wall` s
    on `wall_graphs` (default: `graphs`)."""
    jobs = []
    if final:
        for m in chosen(results, set(split["tune"]), budget, top):
            jobs += [{"graph": g, "cluster": c, "method": m, "budget": final, "seed": s, "kind": "learned"}
                     for g in graphs for c in clusters for s in seeds]  # fmt: skip
    if wall:
        for r in results:  # each method's budget run on (graph, first cluster, first seed) gives its rate
            if (r["kind"], r["cluster"], r["seed"], r["budget"]) == ("learned", clusters[0], seeds[0], budget) and r["graph"] in (graphs if wall_graphs is None else wall_graphs) and r["best"]:  # fmt: skip
                rate = r["placements"] / max(r["search_seconds"], 1e-9)  # placements a second
                cap = max(budget, int(rate * wall))  # a budget for the cooling: what it measures in `wall` s
                jobs.append({**{k: r[k] for k in ("graph", "cluster", "method", "seed", "kind")}, "budget": f"{wall}s", "cap": cap})  # fmt: skip
    return jobs


def execute(jobs: list[dict], results: str, commits: dict, workers: int, ray_address: str = "", log=print) -> int:
    """Runs the jobs that have no result yet, saving each result as it finishes; returns how many ran.

    `commits`: each run's code commit by suite_runs.key (suite_runs.code_commits). `workers` 0: one
    after another in this process; else that many at a
    time in spawned worker processes, a fresh one every TASKS_PER_PROCESS runs; with
    `ray_address`, as Ray tasks of that cluster.
    """
    todo = suite_runs.pending(jobs, results, commits)
    at = ", ".join(sorted(set(commits.values())))
    log(f"{len(jobs) - len(todo)} of {len(jobs)} runs done at {at}; {len(todo)} to run")
    # The slowest method first, so the pool's last minutes are not one long run alone.
    todo = [{**j, "commit": commits[suite_runs.key(j)]} for j in todo]
    todo.sort(key=lambda j: j["method"] not in SLOW_FIRST)

    def done(k: int, r: dict) -> None:
        suite_runs.save(results, r)
        best = suite_report.sig4(r.get("best")) if r.get("best") is not None else r.get("error") or r.get("failure")
        log(f"[{k}/{len(todo)}] {r['graph']} {r['cluster']} {r['method']} b{r['budget']} s{r['seed']}: {best} "
            f"({r['wall_seconds']:.0f} s)")  # fmt: skip

    if ray_address:
        import ray  # noqa: PLC0415 (the optional ray extra)

        ray.init(address=ray_address, log_to_driver=False)
        remote = ray.remote(num_cpus=1, max_calls=1)(run_in_worker)
        refs = [remote.remote(j) for j in todo]
        for k in range(1, len(refs) + 1):
            (ready,), refs = ray.wait(refs, num_returns=1)
            done(k, ray.get(ready))
    elif workers <= 0:
        for k, j in enumerate(todo, 1):
            done(k, suite_runs.run_job(j))
    else:
        # multiprocessing's Pool, not concurrent.futures: Python 3.11's executor can hang when a worker
        # retires after max_tasks_per_child.
        spawn = multiprocessing.get_context("spawn")
        with spawn.Pool(workers, worker_start, maxtasksperchild=TASKS_PER_PROCESS) as pool:
            for k, r in enumerate(pool.imap_unordered(suite_runs.run_job, todo, chunksize=1), 1):
                done(k, r)
    return len(todo)


def worker_start() -> None:
    """Readies a fresh worker process: OR-Tools loads before TensorFlow, as the exact method needs
    (placer.measure.exact says why), and TensorFlow's C++ logs stay off."""
    cli.quiet_tensorflow([])
    from placer.measure import exact  # noqa: F401, PLC0415 (before any run imports TensorFlow)


def run_in_worker(job: dict) -> dict:
    """`suite_runs.run_job` as a Ray task (a fresh process each)."""
    worker_start()
    return suite_runs.run_job(job)


def prepare_one(graph: str, cluster: str) -> tuple[str, str, str]:
    """Builds (or reads) one costed graph; returns (graph, cluster, its op count or why it failed)."""
    try:
        return graph, cluster, f"{suite_runs.prepare_graph(graph, cluster)[2]}"
    except Exception as e:  # noqa: BLE001 (its runs record the error; the other graphs go on)
        return graph, cluster, f"failed: {type(e).__name__}: {e}".splitlines()[0][:200]


def prepare(graphs: list[str], clusters: list[str], workers: int, log=print) -> None:
    """Builds every costed graph once (cached), the first cluster's in parallel, then the others. A graph
    that fails to build is named; its runs then fail alike and record why."""
    for c in clusters:
        t0 = time.time()
        if workers <= 0:
            sizes = [prepare_one(g, c) for g in graphs]
        else:
            with multiprocessing.get_context("spawn").Pool(workers, worker_start, maxtasksperchild=1) as pool:
                sizes = pool.starmap(prepare_one, [(g, c) for g in graphs], chunksize=1)
        log(f"{c}: {len(sizes)} graphs in {time.time() - t0:.0f} s ({', '.join(f'{g} {n}' for g, _, n in sizes)})")


def split_commit() -> str:
    """The commit that last changed the split file (short hash)."""
    r = subprocess.run(["git", "-C", suite_graphs.ROOT, "log", "-1", "--format=%h", "--", SPLIT], capture_output=True, text=True)  # fmt: skip
    return r.stdout.strip() or "uncommitted"


def failures(results: list[dict]) -> list[str]:
    """One line per method with failed runs: how many, on which graphs, the first error."""
    out = []
    for m in dict.fromkeys(r["method"] for r in results):
        bad = [r for r in results if r["method"] == m and r.get("best") is None]
        if bad:
            why = bad[0].get("error") or bad[0].get("failure") or "no placement ran"
            graphs = ", ".join(sorted({r["graph"] for r in bad}))
            out.append(f"- `{m}` failed on {len(bad)} runs ({graphs}): {why}")
    return [*out, ""] if out else []


def above_baselines(results: list[dict]) -> list[str]:
    """One line: how often each method's final best is above the fastest baseline of its graph and seed."""
    rows = suite_report.above_best_baseline(results)
    if not rows:
        return []
    parts = [f"`{m}` {a} of {n}" + (f" (up to {w:.3f}x)" if a else "") for m, (a, n, w) in rows.items()]
    return [
        "Runs whose final best is above the fastest baseline of the same graph, cluster and seed (the methods "
        "with a warm start, as seq2seq, annealing_warm and exact have, start from it and should have none): "
        + "; ".join(parts)
        + ".",
        "",
    ]


def learned_target(results: list[dict], test: set[str], budget: int, rows: list[dict]) -> list[str]:
    """Per method that learns (not a baseline, not in UNLEARNED), at `budget`: the share of test-split pairs
    where it is at or under the reference (within 0.2%) and its worst graph's median ratio, against the targets."""
    learners = {r["method"] for r in results if r["kind"] != "baseline"} - set(UNLEARNED)
    out = []
    for r in rows:
        if not r["pairs"] or r["method"] not in learners:
            continue
        at = r["wins"] + r["ties"]
        graph, worst = suite_report.worst_graph(results, test, budget, r["method"], suite_runs.REFERENCE)
        met = at >= TARGET_SHARE * r["pairs"] and worst <= TARGET_WORST
        out.append(
            f"- `{r['method']}` (learns): at or under `{suite_runs.REFERENCE}` on {at} of {r['pairs']} pairs "
            f"({at / r['pairs']:.0%}; target 2/3), worst graph median {worst:.4f}x ({graph}; target at most "
            f"{TARGET_WORST:.2f}x): {'met' if met else 'NOT met'}"
        )
    return [*out, ""] if out else []


def section(results: list[dict], split: dict, settings: dict, png: str) -> str:
    """The Markdown of the "Suite" section, from result files alone."""
    results = suite_report.latest(results)
    test = set(split["test"])
    budgets = sorted({int(b) for r in results if str(b := r["budget"]).isdigit() and int(b) > 0})
    counted = sorted({256, *budgets}) if budgets and budgets[0] > 256 else budgets
    commits = ", ".join(f"`{c}` ({n} runs)" for c, n in suite_report.commits(results).items())
    graphs = sorted({r["graph"] for r in results})
    seeds = sorted({r["seed"] for r in results})
    clusters = ", ".join(dict.fromkeys(r["cluster"] for r in results))
    hosts = ", ".join(sorted({r.get("host", "?") for r in results}))
    lines = [
        f"Results of code commit {commits}; split `bench/suite_split.json` of commit `{settings['split_commit']}` "
        f"(defaults and hyperparameters may be chosen on its tune split only; the summaries below are on its "
        f"test split). {len(graphs)} graphs ({len(test & set(graphs))} of the test split), clusters {clusters}, "
        f"seeds {', '.join(map(str, seeds))}: {len(results)} runs, {suite_report.wall_total(results) / 3600:.2f} h "
        f"of run wall time summed over runs (on {hosts}). Simulator, op-level measurement; step times are medians "
        "over seeds, 4 significant figures; a ratio is to the lower bound (1x would be optimal). A method's figure "
        "at N placements is read from the best-so-far curve of its run of the smallest budget of at least N; a "
        "baseline places once. Keras graphs: one SGD step at batch 32, 96x96x3 images or 32 tokens, Grappler "
        "costs. Wall times are of runs that shared the machine with each other and with other work.",
        "",
        *([settings["note"], ""] if settings.get("note") else []),
        *failures(results),
        *above_baselines(results),
    ]
    for b in counted:
        lines += [f"### Step time at {b:,} placements", "", suite_report.graph_table(results, b), ""]
    for b in counted:
        rows = suite_report.method_summary(results, test, b, suite_runs.REFERENCE)
        lines += [f"### Test split at {b:,} placements: each method against `{suite_runs.REFERENCE}`", ""]
        lines += [suite_report.summary_table(rows, suite_runs.REFERENCE) if rows else "No test-split results.", ""]
        lines += learned_target(results, test, b, rows)
    for t in suite_report.WALL_TIMES:
        lines += [f"### Equal wall time: best step time after {t:.0f} s (placements measured by then)", "",
                  suite_report.wall_table(results, t), "",
                  "`*`: the run ended before this time (its budget spent), so the figure is its final best; "
                  "the placements are those it measured.", ""]  # fmt: skip
    lines += [f"![every method's ratio to the lower bound per graph]({os.path.relpath(png, suite_graphs.ROOT)})", ""]
    return "\n".join(lines)


def run_note(results_dir: str, note: str, keep: bool = True) -> str:
    """The section's note: `note` (with `keep`, stored in the results folder), or without it the stored one.

    So a report written again without --note (`make bench-suite` once every run is done) keeps what was
    said of the run; a new --note replaces it.
    """
    path = os.path.join(results_dir, NOTE_FILE)
    note = note.strip()
    if note and keep:
        os.makedirs(results_dir, exist_ok=True)
        atomic.write_text(path, note + "\n")
    if note or not os.path.exists(path):
        return note
    with open(path) as f:
        return f.read().strip()


def write_report(results_dir: str, out: str, settings: dict, write: bool, commit: str = "", log=print) -> str:
    """Writes the PNG and (with `write`) the BENCHMARKS.md section; returns the section's Markdown.

    Only the results of the code as it is go in (suite_runs.current), or with `commit` those of that commit.
    """
    everything = suite_runs.load_all(results_dir)
    mine = [r for r in everything if r["commit"] == commit] if commit else suite_runs.current(everything)
    results = suite_report.latest(mine)
    if not results:
        log(f"{results_dir}: no results of {commit or 'the current code'} yet")
        return ""
    if len(results) < len(everything):
        log(f"{len(everything) - len(results)} results of older code or other commits left out of the report")
    png = os.path.join(out, "ratio_to_bound.png")
    budgets = sorted({int(r["budget"]) for r in results if str(r["budget"]).isdigit() and int(r["budget"]) > 0})
    suite_report.plot(results, budgets[0] if budgets else 0, png)
    body = section(results, load_split(), settings, png)
    if write:
        report.update_section("suite", "Suite", body, "bench/suite.py")
    return body


def main(argv):
    del argv
    quick = _TIER.value == "quick"
    graphs = _GRAPHS.value or (QUICK_GRAPHS if quick else [g.name for g in suite_graphs.all_graphs()])
    suite_graphs.by_name(graphs)  # unknown names fail here, before any run
    clusters = _CLUSTERS.value or (["k80x4"] if quick else list(suite_graphs.CLUSTERS))
    seeds = [int(s) for s in _SEEDS.value or (["0"] if quick else ["0", "1", "2"])]
    if not _REPORT_ONLY.value:
        methods = _METHODS.value or suite_runs.learned_methods()
        baselines = _BASELINES.value or suite_runs.baseline_methods()
        commits = suite_runs.code_commits(methods)
        jobs = first_jobs(graphs, clusters, methods, baselines, seeds, _BUDGET.value)
        if _DRY.value:
            for j in suite_runs.pending(jobs, _RESULTS.value, commits):
                print(j)
            return
        t0 = time.time()
        prepare(graphs, clusters, 0 if _RAY.value else _WORKERS.value)
        execute(jobs, _RESULTS.value, commits, _WORKERS.value, _RAY.value)
        if not quick and (_FINAL.value or _WALL.value):
            mine = suite_report.latest(suite_runs.current(suite_runs.load_all(_RESULTS.value), commits))
            more = later_jobs(
                mine, graphs, clusters, seeds, load_split(), budget=_BUDGET.value, final=_FINAL.value,
                top=_TOP.value, wall=_WALL.value, wall_graphs=[g for g in _WALL_GRAPHS.value if g in graphs],
            )  # fmt: skip
            execute(more, _RESULTS.value, commits, _WORKERS.value, _RAY.value)
        print(f"suite runs finished in {time.time() - t0:.0f} s", flush=True)
    settings = {"split_commit": split_commit(), "note": run_note(_RESULTS.value, _NOTE.value, keep=_WRITE.value)}
    print(write_report(_RESULTS.value, _OUT.value, settings, _WRITE.value, _COMMIT.value))


if __name__ == "__main__":
    define_flags()
    app.run(main)
