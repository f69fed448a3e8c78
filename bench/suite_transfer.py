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
pretraining code's commit and steps, and is made again where it is missing.

  python -m bench.suite_transfer                     # test split, k80x4, seeds 0, 1, 2
  python -m bench.suite_transfer --graphs=mobilenetv3small,regnetx002 --seeds=0
"""

from __future__ import annotations

import json
import os
import time

from absl import app, flags

from bench import suite, suite_graphs, suite_runs

METHOD = "pretrained"  # its name in the result files and the report
RUNS = "seq2seq"  # the registered method that fine-tunes the policy


def define_flags() -> None:
    """Defines the script's flags (when run as a script)."""
    global _GRAPHS, _CLUSTER, _SEEDS, _BUDGET, _STEPS, _WORKERS, _RESULTS
    _GRAPHS = flags.DEFINE_list("graphs", [], "Test-split graphs to fine-tune on (default: the whole test split).")
    _CLUSTER = flags.DEFINE_string("cluster", "k80x4", "The cluster of the pretraining and of every run.")
    _SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds of the fine-tuning runs.")
    _BUDGET = flags.DEFINE_integer("budget", 1000, "Measured placements of each fine-tuning run.")
    _STEPS = flags.DEFINE_integer(
        "steps", 1000, "Pretraining steps (placer-pretrain's default; each measures configs/pretrain.py's samples)."
    )
    _WORKERS = flags.DEFINE_integer("workers", 2, "Runs at a time in worker processes (0: in this process).")
    _RESULTS = flags.DEFINE_string("results", suite_runs.RESULTS, "Folder of the result files.")


def pretrain_config(specs: list[str], cluster: str):
    """configs/pretrain.py's settings on the graph files `specs` and one cluster, nothing held out."""
    from configs import pretrain  # noqa: PLC0415

    config = pretrain.get_config()
    config.pretrain.graphs, config.pretrain.held_out, config.pretrain.clusters = ",".join(specs), "", cluster
    return config


def pretrain(tune: list[str], cluster: str, steps: int, commit: str, log=print) -> str:
    """The folder of a policy pretrained for `steps` steps on the graphs `tune`, made unless there already.

    The tune graphs are written as graph files beside it (their costs for `cluster`'s device types).
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
    return folder


def jobs(graphs, cluster: str, seeds, budget: int, policy: str) -> list[dict]:
    """The fine-tuning runs: each graph and seed, from the policy folder `policy`."""
    return [
        {"graph": g, "cluster": cluster, "method": METHOD, "runs": RUNS, "budget": budget, "seed": s,
         "kind": "learned", "init_from": policy}
        for g in graphs for s in seeds
    ]  # fmt: skip


def main(argv):
    del argv
    split = suite.load_split()
    graphs = _GRAPHS.value or split["test"]
    seen = sorted(set(graphs) - set(split["test"]))
    if seen:
        raise app.UsageError(f"--graphs: {', '.join(seen)} not in the test split (the policy trains on the tune split)")
    commits = suite_runs.code_commits([METHOD])
    policy = pretrain(split["tune"], _CLUSTER.value, _STEPS.value, commits[METHOD])
    todo = jobs(graphs, _CLUSTER.value, [int(s) for s in _SEEDS.value], _BUDGET.value, policy)
    suite.execute(todo, _RESULTS.value, commits, _WORKERS.value)


if __name__ == "__main__":
    define_flags()
    app.run(main)
