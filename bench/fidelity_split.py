"""Simulator against Grappler on placements that split the graph (part of bench/fidelity.py).

For each model, on one cluster preset, with the Grappler op costs the
pipeline attaches (so both backends start from the same per-op costs):

* random placements: each group of the placer's grouping on a device drawn
  uniformly among those its ops have kernels for (ties kept);
* the placements a from-scratch policy-gradient search samples while its
  reward is `GrapplerMeasurer` (placer.rl.reinforce.Trainer, the search
  `placer-train --measure=grappler` runs).

Each placement is measured by both backends. Reported: the ratio Grappler /
simulator (median, p10, p90), the share within 20%, the placements the
per-op cost guard flagged, and the ops whose Grappler cost under the
placement differs by over 10% from their unplaced cost on the same device.
The search's reported step times are checked against the lower bound of
placer/measure/bounds.py.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time

import numpy as np

AGREE = 0.20  # Grappler within 20% of the simulator
AGREE_SHARE = 0.90  # on at least 90% of the split placements
OP_TOLERANCE = 0.10  # every op's cost within 10% of unplaced
FULL_SCALE = 100  # random and searched placements per model the targets are set for


class Recorder:
    """A Measurer that measures with Grappler and records the simulator beside it.

    Args:
      grappler: a GrapplerMeasurer.
      sim: a Simulator of the same graph and cluster.
      sim_no_latency: a Simulator of the cluster with link latencies set to 0
        (Grappler models none).
      source: label of the placements ("random", "search").
    """

    def __init__(self, grappler, sim, sim_no_latency, source: str):
        self.grappler, self.sim, self.sim0, self.source = grappler, sim, sim_no_latency, source
        self.rows: list[dict] = []

    def measure(self, placements):
        out = []
        for p in placements:
            g = self.grappler.measure([p])[0]
            s = self.sim.measure([p])[0]
            s0 = self.sim0.measure([p])[0]
            devices = np.asarray(p.devices, dtype=np.int64)
            changed: list[str] = []
            if g.ok and self.grappler.last_op_seconds is not None:
                ref = self.grappler.unplaced_for(devices)
                placed = self.grappler.last_op_seconds
                valid = np.isfinite(placed) & np.isfinite(ref) & (ref > 0)
                diff = np.zeros_like(ref)
                diff[valid] = np.abs(placed[valid] / ref[valid] - 1.0)
                changed = [str(self.grappler.graph.names[i]) for i in np.flatnonzero(diff > OP_TOLERANCE)]
            self.rows.append(
                {
                    "source": self.source,
                    "devices_used": int(len(np.unique(devices))),
                    "grappler_s": g.step_time if g.ok else None,
                    "sim_s": s.step_time if s.ok else None,
                    "sim0_s": s0.step_time if s0.ok else None,
                    "failure": g.failure or s.failure,
                    "flagged": g.flagged,
                    "changed_ops": changed,
                }
            )
            out.append(g)
        return out


def random_placements(problem, graph, cluster, groups, count: int, seed: int) -> list:
    """`count` placements with each tie class on a uniformly drawn allowed device (baselines.search)."""
    from baselines import space  # noqa: PLC0415

    draws = space.random_group_devices(graph, cluster, groups, count, np.random.default_rng(seed))
    return [problem.placement(devices) for devices in draws]


def model_rows(spec: str, cluster_name: str, n_random: int, search_steps: int, search_samples: int, seed: int):
    """Measures the random and searched placements of one model; returns (rows, facts).

    Args:
      spec: model config spec, e.g. "configs/nmt.py".
      cluster_name: cluster preset.
      n_random: random placements.
      search_steps, search_samples: policy-gradient steps and samples per step.
      seed: seeds the random placements and the search.
    """
    from graphs import pipeline  # noqa: PLC0415
    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core import configs_util  # noqa: PLC0415
    from placer.measure import bounds  # noqa: PLC0415
    from placer.measure.grappler import GrapplerMeasurer  # noqa: PLC0415
    from placer.measure.simulator import Simulator  # noqa: PLC0415
    from placer.rl import learn_seq2seq, search_loop  # noqa: PLC0415
    from placer.rl import problem as problem_lib  # noqa: PLC0415

    t0 = time.time()
    cluster = cluster_lib.load(cluster_name)
    config = configs_util.load_config(spec)
    loaded = pipeline.load_graph(cluster, config=config, need_model=True)
    graph = loaded.graph
    grappler = GrapplerMeasurer(loaded.model.metagraph, graph, cluster)
    sim = Simulator(graph, cluster)
    sim0 = Simulator(graph, dataclasses.replace(cluster, latency=np.zeros_like(cluster.latency)))
    problem, groups = problem_lib.make_problem(graph, cluster, config.placer)
    t1 = time.time()
    rand = Recorder(grappler, sim, sim0, "random")
    rand.measure(random_placements(problem, graph, cluster, groups, n_random, seed))
    t2 = time.time()
    searched = Recorder(grappler, sim, sim0, "search")
    config.placer.train.samples_per_step = search_samples
    with tempfile.TemporaryDirectory() as tmp:
        loop = learn_seq2seq.loop_for(problem, cluster, searched, config.placer, tmp, seed=seed)
        loop.run(search_loop.Limits(rounds=search_steps))
        best = float(loop.learner.trainer.best_time.numpy())
    t3 = time.time()
    facts = {
        "model": spec,
        "ops": graph.num_ops,
        "groups": groups.num_groups,
        "lower_bound_s": bounds.lower_bound(graph, cluster),
        "search_best_s": best,
        "search_steps": search_steps,
        "search_samples": search_samples,
        "prepare_s": t1 - t0,
        "random_s": t2 - t1,
        "search_s": t3 - t2,
    }
    return rand.rows + searched.rows, facts


def summary(rows: list[dict], sim_key: str = "sim_s") -> dict:
    """Ratio statistics of the split placements both backends ran (`sim_key`: "sim_s" or "sim0_s")."""
    split = [r for r in rows if r["devices_used"] > 1]
    both = [r for r in split if r["grappler_s"] and r[sim_key]]
    ratio = np.array([r["grappler_s"] / r[sim_key] for r in both])
    changed = sorted({n for r in split for n in r["changed_ops"]})
    return {
        "placements": len(rows),
        "split": len(split),
        "both_ran": len(both),
        "median": float(np.median(ratio)) if len(ratio) else None,
        "p10": float(np.percentile(ratio, 10)) if len(ratio) else None,
        "p90": float(np.percentile(ratio, 90)) if len(ratio) else None,
        "within": float(np.mean(np.abs(ratio - 1.0) <= AGREE)) if len(ratio) else None,
        "flagged": sum(r["flagged"] for r in split),
        "changed_ops": changed,
        "min_grappler_s": min((r["grappler_s"] for r in both), default=None),
    }


def met(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "NOT met")


def _g(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _row(label: str, s: dict, lb: float) -> str:
    ops = ", ".join(f"`{n}`" for n in s["changed_ops"][:5]) or "none"
    within = "-" if s["within"] is None else format(s["within"], ".0%")
    return (
        f"| {label} | {s['placements']} | {s['both_ran']} of {s['split']} | {_g(s['median'])} | {_g(s['p10'])} "
        f"| {_g(s['p90'])} | {within} | {s['flagged']} | {len(s['changed_ops'])} ({ops}) "
        f"| {_g(s['min_grappler_s'])} | {lb:.3g} |"
    )


def _share(rows: list[dict], sim_key: str) -> tuple[float | None, int]:
    both = [r for r in rows if r["devices_used"] > 1 and r["grappler_s"] and r[sim_key]]
    ratio = np.array([r["grappler_s"] / r[sim_key] for r in both])
    return (float(np.mean(np.abs(ratio - 1.0) <= AGREE)) if len(ratio) else None), len(ratio)


def section(results: list[tuple[list[dict], dict]], cluster_name: str, seed: int) -> list[str]:
    """Markdown lines: one table row per model, source and simulator variant, then the targets."""
    out = [
        "| model, placements, simulator | placements | split, both ran | Grappler / sim: median | p10 | p90 "
        "| within 20% | flagged | ops with cost changed > 10% | lowest Grappler step (s) | lower bound (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    below, changed_any, everything = [], False, []
    for rows, facts in results:
        everything += rows
        for source in ("random", "search"):
            sub = [r for r in rows if r["source"] == source]
            for key, label in (("sim_s", "preset links"), ("sim0_s", "latency 0")):
                s = summary(sub, key)
                changed_any |= bool(s["changed_ops"]) or s["flagged"] > 0
                out.append(_row(f"`{facts['model']}` {source}, {label}", s, facts["lower_bound_s"]))
        lb = facts["lower_bound_s"]
        below += [r["grappler_s"] for r in rows if r["source"] == "search" and r["grappler_s"] and r["grappler_s"] < lb]
    searched_total = sum(r["source"] == "search" for r in everything)
    settings = "; ".join(
        f"`{f['model']}` {f['ops']:,} ops in {f['groups']:,} groups, {sum(r['source'] == 'random' for r in rows)} "
        f"random placements, a search of {f['search_steps']} steps x {f['search_samples']} samples "
        f"(best reported {f['search_best_s']:.3g} s), {f['prepare_s'] + f['random_s'] + f['search_s']:.0f} s"
        for rows, f in results
    )
    out += ["", f"Settings: cluster `{cluster_name}`, seed {seed}; {settings}.", ""]
    smallest = min(min(sum(r["source"] == src for r in rows) for src in ("random", "search")) for rows, _ in results)
    if smallest < FULL_SCALE:
        out += [
            f"Scale: at least {smallest} placements of each kind per model, against {FULL_SCALE} random and "
            f"{FULL_SCALE} searched at full scale (reduced to fit the run on this machine): every target below is "
            "**not measured at full scale**; the verdicts are those of this reduced run.",
            "",
        ]
    for key, label in (("sim_s", "the simulator with the preset's links"), ("sim0_s", "the simulator, latency 0")):
        share, n = _share(everything, key)
        verdict = met(None if share is None else share >= AGREE_SHARE)
        shown = "-" if share is None else format(share, ".0%")
        out.append(
            f"- Grappler within {AGREE:.0%} of {label} on at least {AGREE_SHARE:.0%} of the split placements: "
            f"{shown} of {n}: **{verdict}**"
        )
    out += [
        f"- every op's cost within {OP_TOLERANCE:.0%} of its unplaced cost: "
        f"**{met(None if not everything else not changed_any)}**",
        f"- the search under Grappler never reports a step time below the lower bound: {len(below)} of "
        f"{searched_total} measured below it: **{met(None if not searched_total else not below)}**",
    ]
    return out


DESCRIPTION = [
    "Placements that split the graph over several devices, measured by the simulator and by Grappler's "
    "virtual cluster from the same per-op costs (the Grappler costs the pipeline attaches): random placements "
    "(each tie class of groups on a device drawn uniformly among those with kernels) and every placement a "
    "from-scratch policy-gradient search samples while Grappler is its reward. Ratio = Grappler step time / "
    "simulated step time. An op's cost has changed when Grappler costs it under the placement over 10% away "
    "from its cost with the whole graph on the same device; the guard flags drops (placer/measure/cost_guard.py).",
]
