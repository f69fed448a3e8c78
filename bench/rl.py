"""RL placer on the paper-size graphs, simulated 4-GPU K80 machine: writes BENCHMARKS.md "rl".

For RNNLM, NMT and Inception-V3 at paper size: every baseline measured by the
simulator, then the RL placer under a wall-time budget; reported are the best
step time, its ratio to the lower bound, the wall time to come within 5% of
the final best, policy samples and trainer steps per second, and the RL
placement against the best baseline and the expert.

Usage: python -m bench.rl [--minutes=4] [--seeds=0,1,2] [--models=configs/rnnlm.py,...]
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from absl import app, flags

_MINUTES = flags.DEFINE_float("minutes", 4.0, "Wall-time budget of each RL search.")
_STEPS = flags.DEFINE_integer("steps", 100000, "Step cap of each RL search.")
_MODELS = flags.DEFINE_list(
    "models", ["configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py"], "Model configs."
)
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset.")
_SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "One search per seed and graph; the median one is shown.")
_OUT = flags.DEFINE_string("out", "out/bench_rl", "Folder for the runs' workdirs and a JSON of the results.")


def run_model(spec: str, cluster_name: str, minutes: float, steps: int, seed: int, out: str) -> dict:
    from baselines import registry
    from graphs import pipeline
    from placer.core import cluster as cluster_lib
    from placer.core import configs_util
    from placer.measure.simulator import Simulator
    from placer.rl import train_lib

    config = configs_util.load_config(spec)
    config.cluster = cluster_name
    config.measure = "sim"
    cluster = cluster_lib.load(cluster_name)
    graph = pipeline.load_graph(cluster, config=config).graph
    sim = Simulator(graph, cluster)
    baselines = {}
    for name in registry.names():
        t0 = time.time()
        try:
            placement = registry.get(name)(graph, cluster, seed=seed)
        except Exception as e:  # noqa: BLE001 (a baseline that cannot place this graph is reported)
            baselines[name] = {"error": str(e).splitlines()[0]}
            continue
        m = sim.measure([placement])[0]
        baselines[name] = {
            "step_time": m.step_time if m.ok else None,
            "failure": m.failure,
            "place_seconds": time.time() - t0,
        }
    workdir = tempfile.mkdtemp(prefix=f"{graph.name}-", dir=out)
    summary = train_lib.run(config, workdir=workdir, steps=steps, seed=seed, progress=False, max_seconds=60 * minutes)
    return {
        "model": spec,
        "graph": graph.name,
        "ops": graph.num_ops,
        "baselines": baselines,
        "rl": summary,
        "config": {
            "hidden_size": config.placer.policy.hidden_size,
            "samples_per_step": config.placer.train.samples_per_step,
            "learning_rate": config.placer.train.learning_rate,
            "warm_start": config.placer.train.warm_start,
        },
    }


def _row(r: dict, runs: list[dict]) -> str:
    """Markdown row of run `r`, with the RL step times of all `runs` of its graph."""
    ok = {k: v["step_time"] for k, v in r["baselines"].items() if v.get("step_time")}
    best_name = min(ok, key=ok.get)
    rl = r["rl"]
    t = rl["best_step_time"]
    expert = ok.get("expert")
    samples = rl["steps"] * r["config"]["samples_per_step"]
    within = rl["seconds_to_within_5pct"]
    return (
        f"| {r['graph']} | {r['ops']} | {rl['groups']} | {t:.4f} | {rl['ratio_to_lower_bound']:.2f} | "
        f"{best_name} {ok[best_name]:.4f} | {ok[best_name] / t:.3f}x | "
        f"{(expert / t - 1) * 100:+.1f}% | {within:.0f} s | {rl['train_seconds']:.0f} s | "
        f"{samples / rl['train_seconds']:.1f} | {rl['steps_per_second']:.2f} | "
        + " / ".join(f"{x['rl']['best_step_time']:.4f}" for x in runs)
        + " |"
    )


def main(argv):
    del argv
    from bench.report import update_section

    os.makedirs(_OUT.value, exist_ok=True)
    seeds = [int(s) for s in _SEEDS.value]
    results = []  # per graph, its runs sorted by RL step time
    for spec in _MODELS.value:
        runs = []
        for seed in seeds:
            print(f"== {spec}, seed {seed}", flush=True)
            runs.append(run_model(spec, _CLUSTER.value, _MINUTES.value, _STEPS.value, seed, _OUT.value))
            print(_row(runs[-1], [runs[-1]]), flush=True)
        results.append(sorted(runs, key=lambda r: r["rl"]["best_step_time"] or float("inf")))
    with open(os.path.join(_OUT.value, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    c = results[0][0]["config"]
    body = [
        f"Simulated `{_CLUSTER.value}` cluster, paper-size graphs, costs from Grappler's analytical model. "
        f"RL: hidden size {c['hidden_size']}, {c['samples_per_step']} samples per step, Adam learning rate "
        f"{c['learning_rate']}, warm start from `{c['warm_start'] or 'nothing'}`, a budget of "
        f"{_MINUTES.value:g} minutes per search on this machine, one search per seed ({', '.join(map(str, seeds))}). "
        "Each row is the median search of its graph (by RL step time); the last column lists every seed's. "
        "Speedup is the best baseline's step time over RL's (above 1: RL is faster); 'vs expert' is how much "
        "faster RL is.",
        "",
        "| graph | ops | groups | RL step time (s) | ratio to lower bound | best baseline (s) | RL speedup over it "
        "| RL vs expert | time to within 5% of final | search wall time | samples/s | steps/s | RL, all seeds (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    body += [_row(runs[len(runs) // 2], runs) for runs in results]
    update_section("rl", "RL placer on the paper-size graphs", "\n".join(body), "bench/rl.py")


if __name__ == "__main__":
    app.run(main)
