"""RL from scratch against same-budget search, simulated 4-GPU K80 machine: writes BENCHMARKS.md "rl".

For each graph (paper-size RNNLM, NMT and Inception-V3 by default) and seed:

- every non-search baseline, measured by the simulator;
- RL from scratch with the paper's update rule (configs.common.paper_method);
- RL from scratch with the fixes (the default config, warm start off);
- RL warm-started from the best baseline (the default config);
- with --methods naming it, rl_memory: from scratch with the self-imitation
  memory (train.elite_memory=16, elite_weight=1.0);
- random search and simulated annealing (baselines/search.py) on the same
  groups, each given as many measured placements as the fixed RL run used.

Each RL search runs under the same wall-time budget. Curves of the best step
time against measured placements and against wall seconds are drawn to
bench/out/<section>_<graph>.png; every target of the benchmark prints met / NOT met.

Usage: python -m bench.rl [--minutes=30] [--seeds=0,1,2] [--models=configs/rnnlm.py,...]
  [--methods=rl_fixed,rl_memory --section=rl_nmt_30min]  (a subset, to a section of its own)
  python -m bench.rl --combine=OUT1,OUT2,... --section=NAME  (merge runs made side by side, each
  with its own --out, into one table; they must share cluster, minutes, methods and grouping)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

from absl import app, flags

from bench.rl_report import RL_METHODS, SEARCHES, SETTINGS, merge, present, seeds_text, table, targets

DEFAULT_METHODS = ("rl_paper", "rl_fixed", "rl_warm")  # rl_memory only when --methods names it

_MINUTES = flags.DEFINE_float("minutes", 30.0, "Wall-time budget of each RL search.")
_STEPS = flags.DEFINE_integer("steps", 100000, "Step cap of each RL search.")
_MODELS = flags.DEFINE_list(
    "models", ["configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py"], "Model configs."
)
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset.")
_SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "One search per seed, method and graph; medians are shown.")
_OUT = flags.DEFINE_string("out", "out/bench_rl", "Folder for the runs' workdirs and a JSON of the results.")
_METHODS = flags.DEFINE_list(
    "methods",
    list(DEFAULT_METHODS),
    "RL methods to run (rl_fixed is needed: it sets the searches' budget).",
)
_COLOCATE_GRADIENTS = flags.DEFINE_bool(
    "colocate_gradients",
    None,
    "Grouping step 2: gradient ops join their forward op (config.placer.grouping.colocate_gradients), "
    "for the RL runs and the searches' groups alike; default: the config's.",
)
_SECTION = flags.DEFINE_string(
    "section", "rl", 'BENCHMARKS.md section to write ("rl" is the three-graph table the README quotes).'
)
_COMBINE = flags.DEFINE_list(
    "combine",
    [],
    "Run nothing: merge the results.json of these --out folders (earlier runs of this script, e.g. one "
    "per graph and seed run side by side) into one section. Their cluster, minutes, methods and grouping must agree.",
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOTS = os.path.join(ROOT, "bench", "out")
METHOD_TEXT = {
    "rl_paper": "the paper's REINFORCE from scratch",
    "rl_fixed": "from scratch with PPO-style clipped epochs, normalised advantages, a decaying entropy bonus, "
    "logits noise and elite updates (configs/common.py)",
    "rl_memory": "rl_fixed plus the self-imitation memory of docs/rl.md",
    "rl_warm": "the same as rl_fixed, warm-started from the best baseline",
}


def _rl(config, method: str, minutes: float, steps: int, seed: int, out: str, graph_name: str) -> dict:
    """One RL search; returns its summary and curve (samples, wall seconds, best step time)."""
    from configs import common
    from placer.rl import train_lib

    config = config.copy_and_resolve_references()
    config.placer.train.method = "seq2seq"  # every variant here is the paper's policy, whatever the default
    if method == "rl_paper":
        common.paper_method(config.placer)
    elif method in ("rl_fixed", "rl_memory"):
        config.placer.train.warm_start = ""
    if method == "rl_memory":  # docs/rl.md, "The self-imitation memory"
        config.placer.train.elite_memory, config.placer.train.elite_weight = 16, 1.0
    workdir = tempfile.mkdtemp(prefix=f"{graph_name}-{method}-", dir=out)
    s = train_lib.run(config, workdir=workdir, steps=steps, seed=seed, progress=False, max_seconds=60 * minutes)
    with open(os.path.join(workdir, "history.json")) as f:
        hist = json.load(f)
    curve = [(h["samples"], h["wall_seconds"], h["best_step_time"]) for h in hist]
    return {"best": s["best_step_time"], "samples": curve[-1][0] if curve else 0, "curve": curve, "summary": s}


def _search(name: str, graph, cluster, groups, budget: int, seed: int) -> dict:
    """One same-budget search on the RL run's groups."""
    from baselines import registry
    from placer.measure.simulator import Simulator

    curve, t0 = [], time.time()
    p = registry.place(
        name,
        graph,
        cluster,
        seed=seed,
        measurer=Simulator(graph, cluster),
        budget=budget,
        groups=groups,
        on_measured=lambda n, best: curve.append((n, time.time() - t0, best)),
    )
    return {"best": p.metadata["step_time"], "samples": budget, "curve": curve}


def run_model(
    spec: str,
    cluster_name: str,
    minutes: float,
    steps: int,
    seed: int,
    out: str,
    methods=DEFAULT_METHODS,
    colocate_gradients: bool | None = None,
) -> dict:
    from baselines import registry
    from graphs import pipeline
    from placer.core import cluster as cluster_lib
    from placer.core import configs_util
    from placer.measure.simulator import Simulator
    from placer.rl import problem as problem_lib

    config = configs_util.load_config(spec)
    config.cluster, config.measure = cluster_name, "sim"
    if colocate_gradients is not None:
        config.placer.grouping.colocate_gradients = colocate_gradients
    cluster = cluster_lib.load(cluster_name)
    graph = pipeline.load_graph(cluster, config=config).graph
    sim = Simulator(graph, cluster)
    baselines = {}
    for name in (n for n in registry.names() if n not in registry.MEASURED):
        try:
            m = sim.measure([registry.get(name)(graph, cluster, seed=seed)])[0]
        except Exception as e:  # noqa: BLE001 (a baseline that cannot place this graph is reported)
            print(f"  {name}: {str(e).splitlines()[0]}", flush=True)
            continue
        if m.ok:
            baselines[name] = m.step_time
    runs = {}
    for method in methods:
        runs[method] = _rl(config, method, minutes, steps, seed, out, graph.name)
        print(f"  {method}: {runs[method]['best']:.4f} s after {runs[method]['samples']} placements", flush=True)
    _, groups = problem_lib.make_problem(graph, cluster, config.placer)  # the from-scratch runs' groups
    budget = max(1, runs["rl_fixed"]["samples"])
    for name in SEARCHES:
        runs[name] = _search(name, graph, cluster, groups, budget, seed)
        print(f"  {name}: {runs[name]['best']:.4f} s after {budget} placements", flush=True)
    return {
        "graph": graph.name,
        "seed": seed,
        "ops": graph.num_ops,
        "groups": groups.num_groups,
        "baselines": baselines,
        **runs,
    }


def _plot(graph: str, runs: list[dict], section: str = "rl") -> str:
    """Draws best step time against placements and against wall seconds (seed of the first run); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(PLOTS, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    r = runs[0]
    for method in present(r):
        c = r[method]["curve"]
        if not c:
            continue
        for ax, col in zip(axes, (0, 1), strict=True):
            ax.step([p[col] for p in c], [p[2] for p in c], where="post", label=method)
    for name in ("expert", min(r["baselines"], key=r["baselines"].get)):
        for ax in axes:
            ax.axhline(r["baselines"][name], ls=":", c="gray")
            ax.annotate(name, (0, r["baselines"][name]), fontsize=7, color="gray")
    axes[0].set_xlabel("placements measured")
    axes[1].set_xlabel("wall seconds")
    for ax in axes:
        ax.set_ylabel("best step time (s)")
        ax.legend(fontsize=7)
    fig.suptitle(f"{graph}: best simulated step time")
    path = os.path.join(PLOTS, f"{section}_{graph}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _measure(methods: tuple[str, ...]) -> tuple[list[list[dict]], dict]:
    """Runs every graph and seed of the flags; saves and returns (results, settings)."""
    from bench import report

    if "rl_fixed" not in methods or not set(methods) <= set(RL_METHODS):
        raise app.UsageError(f"--methods must include rl_fixed and name only {', '.join(RL_METHODS)}")
    os.makedirs(_OUT.value, exist_ok=True)
    commit = report.commit()  # the code the searches run, whatever is committed while they do
    results = []
    for spec in _MODELS.value:
        runs = []
        for seed in (int(s) for s in _SEEDS.value):
            print(f"== {spec}, seed {seed}", flush=True)
            runs.append(
                run_model(
                    spec,
                    _CLUSTER.value,
                    _MINUTES.value,
                    _STEPS.value,
                    seed,
                    _OUT.value,
                    methods,
                    _COLOCATE_GRADIENTS.value,
                )
            )
        results.append(runs)
    meta = {
        "cluster": _CLUSTER.value,
        "minutes": _MINUTES.value,
        "methods": list(methods),
        "colocate_gradients": _COLOCATE_GRADIENTS.value,
    }
    with open(os.path.join(_OUT.value, "results.json"), "w") as f:
        json.dump({"commit": commit, **meta, "results": results}, f, indent=1, default=str)
    return results, {**meta, "commits": [commit]}


def _refuse(message: str):
    print(f"bench/rl.py: {message}", file=sys.stderr)
    sys.exit(2)


def _load(folders: list[str]) -> tuple[list[list[dict]], dict]:
    """The merged results.json of earlier runs' --out folders; a bad one exits 2 with one line naming it."""
    need = ("commit", "results", *SETTINGS)
    records = {}
    for folder in folders:
        path = os.path.join(folder, "results.json")
        try:
            with open(path) as f:
                records[folder] = json.load(f)
        except (OSError, ValueError) as e:
            _refuse(f"{path}: {e}")
        if not isinstance(records[folder], dict) or any(k not in records[folder] for k in need):
            _refuse(f"{path}: not written by this script's --out (needs {', '.join(need)})")
    try:
        return merge(records)
    except ValueError as e:
        _refuse(str(e))


def main(argv):
    del argv
    from bench import report

    results, meta = _load(_COMBINE.value) if _COMBINE.value else _measure(tuple(_METHODS.value))
    methods, minutes = tuple(meta["methods"]), meta["minutes"]
    seed_text = seeds_text(results)
    full = minutes >= 30 and all(len(runs) >= 3 for runs in results)
    scale = "" if full else " (not measured at full scale: 30 minutes per search, 3 seeds)"
    verdicts = [f"- {name}: **{'met' if ok else 'NOT met'}**{scale}" for name, ok in targets(results)]
    print("\n".join(verdicts))
    plots = [os.path.relpath(_plot(runs[0]["graph"], runs, _SECTION.value), ROOT) for runs in results]
    commits = meta["commits"]
    body = [
        f"Simulated `{meta['cluster']}` cluster, costs from Grappler's analytical model, "
        f"commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}. "
        f"Each RL search had {minutes:g} minutes of wall time on this machine (shared with other work), "
        f"seeds {seed_text}; the table shows the median best step time (s) per method "
        "(with the seeds' range when there are several) and, per seed, how much slower (+) or faster (-) "
        "rl_fixed ended than annealing. "
        + "; ".join(f"{m}: {METHOD_TEXT[m]}" for m in methods)
        + "; random_search and local_search (simulated annealing from single_gpu) measured as many placements "
        "as rl_fixed, on the same groups."
        + (" Grouping step 2 on (`grouping.colocate_gradients=True`) for all." if meta["colocate_gradients"] else ""),
        "",
        *table(results),
        "",
        "Targets:",
        "",
        *verdicts,
        "",
        "Curves (best step time against placements measured and against wall seconds, first seed): "
        + ", ".join(f"[{os.path.basename(p)}]({p})" for p in plots),
    ]
    title = "RL from scratch against same-budget search"
    if _SECTION.value != "rl":
        title += f": {', '.join(r[0]['graph'] for r in results)}, {minutes:g} minutes, seeds {seed_text}"
    report.update_section(_SECTION.value, title, "\n".join(body), "bench/rl.py")


if __name__ == "__main__":
    app.run(main)
