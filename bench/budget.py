"""Learned search at equal budgets: best step time after N measured placements, every method side by side.

For each graph (a config spec), method and seed, one search of the largest
budget runs through placer-train's loop (placer.rl.train_lib.run, k80x4,
simulator, op-level measurement); the best step time after each smaller
budget is read from that run's best-so-far curve, and the best reached
within `--wall_seconds` of wall time from the same curve. Writes the
BENCHMARKS.md section "Learned search at equal budgets" and curves (CSV and
PNG) to bench/out/budget/.

Example (a reduced run):
  nice -n 5 python -m bench.budget --graphs=configs/nmt.py --seeds=0 --budgets=1000,4000 \
      --methods=annealing,cross_entropy,cross_entropy_off
"""

from __future__ import annotations

import os
import tempfile
import time

from absl import app, flags

from bench import budget_report, report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out", "budget")
PAPER = ["configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py"]
HELD_OUT = ["configs/nmt.py:layers=8", "configs/rnnlm.py:layers=4", "configs/inception_v3.py:batch=64"]
METHODS = [
    "annealing",
    "random_search",
    "reinforce",
    "rl_fixed",
    "rl_warm",
    "annealing_warm",
    "cross_entropy",
    "cross_entropy_off",
    "cross_entropy_pretrained",
    "ce_or_annealing",
    "ce_or_annealing_off",
    "ce_or_annealing_pretrained",
]
# Methods started from a pretrained graph policy (--policy): bench name -> placer-train method.
PRETRAINED = {"cross_entropy_pretrained": "cross_entropy", "ce_or_annealing_pretrained": "ce_or_annealing"}

_GRAPHS = flags.DEFINE_list("graphs", PAPER + HELD_OUT, "Config specs of the graphs to place.")
_SEEDS = flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds, one search per method and graph each.")
_BUDGETS = flags.DEFINE_list("budgets", ["1000", "4000", "16000"], "Measured placements read off each curve.")
_METHODS = flags.DEFINE_list("methods", METHODS, f"Methods: {', '.join(METHODS)}.")
_WALL = flags.DEFINE_float("wall_seconds", 60.0, "The equal-wall-time column: best reached within this many seconds.")
_MAX_MINUTES = flags.DEFINE_float(
    "max_minutes", 0.0, "Cap on each search's wall time (0 = none); a capped run says so."
)
_OUT = flags.DEFINE_string("out", OUT, "Folder for results.json, curves and plots.")
_WRITE = flags.DEFINE_bool("write", True, "Write the BENCHMARKS.md section.")
_NOTE = flags.DEFINE_string("note", "", "A sentence for the section: what was left out, and why.")
_COMBINE = flags.DEFINE_list("combine", [], "Run nothing: merge the results.json of these --out folders.")
_POLICY = flags.DEFINE_string(
    "policy", "", f"A placer-pretrain folder for {', '.join(PRETRAINED)}; empty: pretrain one into --out/policy first."
)
_PRETRAIN_STEPS = flags.DEFINE_integer("pretrain_steps", 2000, "Steps of that pretraining (configs/pretrain.py:small).")


def config_for(spec: str, method: str):
    """The placer-train config of `method` on the graph `spec` (k80x4, simulator, op-level measurement)."""
    from configs import common  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415

    config = configs_util.load_config(spec)
    config.cluster, config.measure = "k80x4", "sim"
    tc = config.placer.train
    tc.measure_op_level = True
    if method == "reinforce":  # the paper's method: seq2seq REINFORCE from scratch
        common.paper_method(config.placer)
        tc.method = "seq2seq"
    elif method == "rl_fixed":  # today's seq2seq settings, from scratch
        tc.method, tc.warm_start = "seq2seq", ""
    elif method == "rl_warm":  # seq2seq warm-started from the fastest baseline
        tc.method = "seq2seq"
    elif method in PRETRAINED:
        tc.method = PRETRAINED[method]
    elif method.endswith("_off"):  # the method's learning-off ablation
        tc.method, tc.learning = method.removesuffix("_off"), False
    else:
        tc.method = method
    return config


def run_one(spec: str, method: str, seed: int, budget: int, out: str, max_minutes: float, policy: str = "") -> dict:
    """One search of `budget` placements (`policy`: the pretrained folder of the PRETRAINED methods); returns its curve,
    overhead and timing."""
    from placer.rl import train_lib  # noqa: PLC0415 (TensorFlow)

    workdir = tempfile.mkdtemp(prefix=f"{method}-{seed}-", dir=out)
    t0 = time.time()
    s = train_lib.run(
        config_for(spec, method), workdir=workdir, steps=0, seed=seed, progress=False, log=lambda *_: None,
        max_placements=budget, max_seconds=60 * max_minutes, init_from=policy if method in PRETRAINED else None,
    )  # fmt: skip
    return {
        "graph": spec,
        "method": method,
        "seed": seed,
        "placements": s["placements"],
        "curve": s["curve"],
        "best": s["best_step_time"],
        "overhead_per_placement": s["overhead_seconds_per_placement"],
        "learner_per_placement": s["learner_seconds_per_placement"],
        "learner_after_first_round": s["learner_seconds_per_placement_after_first_round"],
        "learner_first_round_seconds": s["learner_seconds_first_round"],
        "measure_seconds": s["measure_seconds"],
        "train_seconds": s["train_seconds"],
        "wall_seconds": time.time() - t0,
    }


def pretrain(workdir: str, steps: int) -> str:
    """Pretrains the graph policy on configs/pretrain.py:small (generated graphs only); returns its folder."""
    from configs import pretrain as pretrain_config  # noqa: PLC0415
    from placer.rl import pretrain_lib  # noqa: PLC0415 (TensorFlow)

    t0 = time.time()
    pretrain_lib.run(pretrain_config.get_config("small"), workdir=workdir, steps=steps, progress=False)
    print(f"pretrained {steps} steps in {time.time() - t0:.0f} s: {workdir}", flush=True)
    return workdir


def main(argv):
    del argv
    if _COMBINE.value:
        runs, settings = budget_report.combine(_COMBINE.value)
    else:
        budgets = sorted(int(b) for b in _BUDGETS.value)
        unknown = sorted(set(_METHODS.value) - set(METHODS))
        if unknown:
            raise app.UsageError(f"--methods: unknown {', '.join(unknown)} (valid: {', '.join(METHODS)})")
        os.makedirs(_OUT.value, exist_ok=True)
        settings = {
            "commit": report.commit(),
            "budgets": budgets,
            "seeds": [int(s) for s in _SEEDS.value],
            "graphs": list(_GRAPHS.value),
            "methods": list(_METHODS.value),
            "wall_seconds": _WALL.value,
            "max_minutes": _MAX_MINUTES.value,
        }
        policy = _POLICY.value
        if set(PRETRAINED) & set(_METHODS.value) and not policy:
            policy = pretrain(os.path.join(_OUT.value, "policy"), _PRETRAIN_STEPS.value)
        settings["policy"] = policy
        runs = []
        for spec in _GRAPHS.value:
            for seed in settings["seeds"]:
                for method in _METHODS.value:
                    r = run_one(spec, method, seed, budgets[-1], _OUT.value, _MAX_MINUTES.value, policy)
                    print(f"{spec} {method} seed {seed}: {r['placements']} placements, best {r['best']:.4f} s, "
                          f"{r['wall_seconds']:.0f} s", flush=True)  # fmt: skip
                    runs.append(r)
                    budget_report.save(_OUT.value, runs, settings)
    if _NOTE.value:
        settings["note"] = _NOTE.value
    budget_report.save(_OUT.value, runs, settings)
    budget_report.curves(_OUT.value, runs)
    body = budget_report.section(runs, settings)
    print(body)
    if _WRITE.value:
        report.update_section("budget", "Learned search at equal budgets", body, "bench/budget.py")


if __name__ == "__main__":
    app.run(main)
