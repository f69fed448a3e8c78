"""The suite's transfer runs: a graph policy pretrained on the tune split only, fine-tuned on unseen graphs.

Pretrains one graph policy (placer.rl.pretrain_lib, configs/pretrain.py's
settings) on the tune split's graphs of bench/suite_split.json, `--steps`
policy-gradient steps on one cluster; its placements are not counted. Then, on
each test-split graph, placer-train's seq2seq starts from that policy
(`--init_from`) and measures `--budget` placements, which are counted as every
other method's are. Each run is a suite result of method "pretrained"
(bench/suite_runs.py), so `python -m bench.suite --report_only` sets it
against annealing_warm at 256 and 1,000 placements, on graphs the policy never
saw. The policy is kept in the graph cache (PLACER_CACHE), keyed by the
pretraining code's commit and steps, and is made again where it is missing;
what its pretraining took is committed beside the results (PRETRAIN_RESULTS).
Then it writes the "Suite: a policy pretrained on the tune split" section of
BENCHMARKS.md from the result files alone: the learned target that a
pretrained policy is at or under annealing_warm on at least 2/3 of the
test split's graph-seed pairs at 256 and at 1,000 placements.

  python -m bench.suite_transfer                     # test split, k80x4, seeds 0, 1, 2
  python -m bench.suite_transfer --graphs=mobilenetv3small,regnetx002 --seeds=0
  python -m bench.suite_transfer --report_only       # the section from the result files alone
"""

from __future__ import annotations

import json
import os
import time

from absl import app, flags

from bench import report, suite, suite_graphs, suite_report, suite_runs
from placer.core import atomic

METHOD = "pretrained"  # its name in the result files and the report
RUNS = "seq2seq"  # the registered method that fine-tunes the policy
PRETRAIN_RESULTS = os.path.join(suite_graphs.ROOT, "bench", "results", "suite_pretrain")
BUDGETS = (256, 1000)  # the placements the target is judged at
TARGET = 2 / 3  # of the graph-seed pairs at or under annealing_warm


def define_flags() -> None:
    """Defines the script's flags (when run as a script)."""
    global _GRAPHS, _CLUSTER, _SEEDS, _BUDGET, _STEPS, _WORKERS, _RESULTS, _REPORT_ONLY, _WRITE
    _GRAPHS = flags.DEFINE_list("graphs", [], "Test-split graphs to fine-tune on (default: the whole test split).")
    _CLUSTER = flags.DEFINE_string("cluster", "k80x4", "The cluster of the pretraining and of every run.")
    _SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the fine-tuning runs.")
    _BUDGET = flags.DEFINE_integer("budget", 1000, "Measured placements of each fine-tuning run.")
    _STEPS = flags.DEFINE_integer(
        "steps", 1000, "Pretraining steps (placer-pretrain's default; each measures configs/pretrain.py's samples)."
    )
    _WORKERS = flags.DEFINE_integer("workers", 2, "Runs at a time in worker processes (0: in this process).")
    _RESULTS = flags.DEFINE_string("results", suite_runs.RESULTS, "Folder of the result files.")
    _REPORT_ONLY = flags.DEFINE_bool("report_only", False, "Run nothing: write the section from the result files.")
    _WRITE = flags.DEFINE_bool("write", True, "Write the BENCHMARKS.md section.")


def pretrain_config(specs: list[str], cluster: str):
    """configs/pretrain.py's settings on the graph files `specs` and one cluster, nothing held out."""
    from configs import pretrain  # noqa: PLC0415

    config = pretrain.get_config()
    config.pretrain.graphs, config.pretrain.held_out, config.pretrain.clusters = ",".join(specs), "", cluster
    return config


def pretrain(tune: list[str], cluster: str, steps: int, commit: str, log=print, record: str = PRETRAIN_RESULTS) -> str:
    """The folder of a policy pretrained for `steps` steps on the graphs `tune`, made unless there already.

    The tune graphs are written as graph files beside it (their costs for `cluster`'s device types); what
    a pretraining took goes to `record`/CLUSTER-sSTEPS-COMMIT.json.
    """
    from graphs import pipeline  # noqa: PLC0415
    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core import io as graph_io  # noqa: PLC0415
    from placer.rl import pretrain_lib, transfer_lib  # noqa: PLC0415 (TensorFlow)

    folder = os.path.join(pipeline.CACHE_DIR, f"suite-pretrained-{cluster}-{steps}-{commit}")
    policy = os.path.join(folder, transfer_lib.POLICY_FILE)
    if os.path.exists(policy) and json.load(open(policy)).get("steps", 0) >= steps:
        return folder
    specs = []
    c = cluster_lib.load(cluster)
    for g in suite_graphs.by_name(tune):
        specs.append(os.path.join(folder, "graphs", f"{g.name}.graph.json.gz"))
        if not os.path.exists(specs[-1]):
            os.makedirs(os.path.dirname(specs[-1]), exist_ok=True)
            graph_io.save(suite_graphs.costed_graph(g, c), specs[-1])
    t0 = time.time()
    s = pretrain_lib.run(
        pretrain_config(specs, cluster), workdir=folder, steps=steps, resume=os.path.exists(policy), log=log
    )
    log(f"pretrained {s['steps']} steps on {len(specs)} tune graphs in {time.time() - t0:.0f} s: {folder}")
    done = {"cluster": cluster, "steps": s["steps"], "tune": tune, "commit": commit, "host": os.uname().nodename,
            "seconds": s["train_seconds"], "prepare_seconds": s["prepare_seconds"]}  # fmt: skip
    atomic.write_text(os.path.join(record, f"{cluster}-s{steps}-{commit}.json"), json.dumps(done, indent=1) + "\n")
    return folder


def jobs(graphs, cluster: str, seeds, budget: int, policy: str) -> list[dict]:
    """The fine-tuning runs: each graph and seed, from the policy folder `policy`."""
    return [
        {"graph": g, "cluster": cluster, "method": METHOD, "runs": RUNS, "budget": budget, "seed": s,
         "kind": "learned", "init_from": policy}
        for g in graphs for s in seeds
    ]  # fmt: skip


def section(results: list[dict], pretrainings: list[dict], cluster: str) -> str:
    """The Markdown of the section, from the current code's results on `cluster` alone."""
    mine = [r for r in suite_report.latest(results) if r["cluster"] == cluster]
    graphs = sorted({r["graph"] for r in mine if r["method"] == METHOD})
    if not graphs:
        return "No results of the pretrained policy on the current code yet."
    mine = [r for r in mine if r["graph"] in graphs and r["method"] in (METHOD, RUNS, suite_runs.REFERENCE)]
    commits = ", ".join(f"`{c}` ({n} runs)" for c, n in suite_report.commits(mine).items())
    seeds = ", ".join(map(str, sorted({r["seed"] for r in mine if r["method"] == METHOD})))
    made = ", ".join(f"{p['steps']:,} steps in {p['seconds']:.0f} s on {p['host']} (commit `{p['commit']}`)" for p in pretrainings)  # fmt: skip
    lines = [
        f"Results of code commit {commits}. One graph policy pretrained on the tune split of "
        f"`bench/suite_split.json` only ({', '.join(suite.load_split()['tune'])}; {cluster}; "
        f"configs/pretrain.py's settings; {made or 'no record'}; not counted), then placer-train's {RUNS} "
        f"fine-tuned from it (`--init_from`) on each of {len(graphs)} test-split graphs, seeds {seeds}: each "
        f"run's 1,000 placements counted, as every other method's. Simulator, op level; `{RUNS}` is the same "
        f"method from scratch. Target: at or under `{suite_runs.REFERENCE}` on at least 2/3 of the graph-seed "
        "pairs at 256 and at 1,000 placements.",
        "",
    ]
    for b in BUDGETS:
        rows = suite_report.method_summary(mine, set(graphs), b, suite_runs.REFERENCE)
        got = next((r for r in rows if r["method"] == METHOD), None)
        lines += [f"### At {b:,} placements: each method against `{suite_runs.REFERENCE}`", ""]
        lines += [suite_report.summary_table(rows, suite_runs.REFERENCE), ""]
        if got and got["pairs"]:
            at = got["wins"] + got["ties"]
            verdict = "met" if at >= TARGET * got["pairs"] else "NOT met"
            lines += [f"- `{METHOD}` at or under `{suite_runs.REFERENCE}` (within 0.2%) on {at} of "
                      f"{got['pairs']} pairs ({at / got['pairs']:.0%}; target 2/3): {verdict}", ""]  # fmt: skip
        lines += [suite_report.graph_table(mine, b), ""]
    return "\n".join(lines)


def write_report(results_dir: str, cluster: str, write: bool) -> str:
    """Writes (with `write`) the BENCHMARKS.md section from the current code's result files; returns it."""
    results = suite_runs.current(suite_runs.load_all(results_dir))
    commit = suite_runs.code_commits([METHOD])[METHOD]
    pretrainings = []
    if os.path.isdir(PRETRAIN_RESULTS):
        for f in sorted(os.listdir(PRETRAIN_RESULTS)):
            with open(os.path.join(PRETRAIN_RESULTS, f)) as fh:
                p = json.load(fh)
            if (p["commit"], p["cluster"]) == (commit, cluster):
                pretrainings.append(p)
    body = section(results, pretrainings, cluster)
    if write:
        report.update_section("suite_pretrained", "Suite: a policy pretrained on the tune split", body, "bench/suite_transfer.py")  # fmt: skip
    return body


def main(argv):
    del argv
    split = suite.load_split()
    graphs = _GRAPHS.value or split["test"]
    seen = sorted(set(graphs) - set(split["test"]))
    if seen:
        raise app.UsageError(f"--graphs: {', '.join(seen)} not in the test split (the policy trains on the tune split)")
    if not _REPORT_ONLY.value:
        commits = suite_runs.code_commits([METHOD])
        policy = pretrain(split["tune"], _CLUSTER.value, _STEPS.value, commits[METHOD])
        todo = jobs(graphs, _CLUSTER.value, [int(s) for s in _SEEDS.value], _BUDGET.value, policy)
        suite.execute(todo, _RESULTS.value, commits, _WORKERS.value)
    print(write_report(_RESULTS.value, _CLUSTER.value, _WRITE.value))


if __name__ == "__main__":
    define_flags()
    app.run(main)
