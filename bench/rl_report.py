"""The RL bench's tables and verdicts (bench/rl.py): medians over seeds, RL against annealing, merged runs.

Pure functions of the runs bench/rl.py records: per graph, one dict per seed with the graph's name,
seed, ops, groups, baseline step times and each method's best step time, placements and curve.
"""

from __future__ import annotations

import statistics

RL_METHODS = ("rl_paper", "rl_fixed", "rl_memory", "rl_warm")
SEARCHES = ("random_search", "local_search")


def present(run: dict) -> list[str]:
    """The methods a run measured, in table order."""
    return [m for m in RL_METHODS + SEARCHES if m in run]


def median(runs: list[dict], method: str) -> float:
    """The median over seeds of a method's best step time (s)."""
    return statistics.median(r[method]["best"] for r in runs)


def within(curve, final: float, tol: float = 0.05) -> float | None:
    """Wall seconds until a curve of (placements, seconds, best) first came within `tol` of `final`."""
    return next((w for _, w, b in curve if b <= final * (1 + tol)), None)


def cell(runs: list[dict], method: str) -> str:
    """The median best step time (s) of a method, with the seeds' range when there are several."""
    text = f"{median(runs, method):.4f}"
    if len(runs) == 1:
        return text
    values = [r[method]["best"] for r in runs]
    return f"{text} ({min(values):.4f}-{max(values):.4f})"


def table(results: list[list[dict]]) -> list[str]:
    """Markdown rows: per graph, each method's median best (seeds' range), placements, and RL against annealing."""
    methods = present(results[0][0])
    head = "| graph | ops | groups | expert (s) | best baseline (s) | " + " | ".join(methods)
    tail = " | placements per search (median) | rl_fixed vs local_search, per seed |"
    lines = [head + tail, "|" + "---|" * (7 + len(methods))]
    for runs in results:
        r = runs[0]
        b = r["baselines"]
        best = min(b, key=b.get)
        cells = " | ".join(cell(runs, m) for m in methods)
        versus = ", ".join(f"{x['rl_fixed']['best'] / x['local_search']['best'] - 1:+.1%}" for x in runs)
        placements = statistics.median(x["rl_fixed"]["samples"] for x in runs)
        lines.append(
            f"| {r['graph']} | {r['ops']} | {r['groups']} | {b.get('expert', float('nan')):.4f} | "
            f"{best} {b[best]:.4f} | {cells} | {placements:.0f} | {versus} |"
        )
    return lines


def targets(results: list[list[dict]]) -> list[tuple[str, bool]]:
    """Each target of the benchmark and whether the medians meet it."""
    by = {runs[0]["graph"]: runs for runs in results}
    best_base = {g: min(runs[0]["baselines"].values()) for g, runs in by.items()}
    expert = {g: runs[0]["baselines"].get("expert", float("inf")) for g, runs in by.items()}
    fixed = {g: median(runs, "rl_fixed") for g, runs in by.items()}
    has_warm = "rl_warm" in results[0][0]
    warm = {g: median(runs, "rl_warm") for g, runs in by.items()} if has_warm else {}
    anneal = {g: median(runs, "local_search") for g, runs in by.items()}
    n = len(by)
    out = [
        ("from scratch at or under the expert on every graph", all(fixed[g] <= expert[g] for g in by)),
        (
            f"from scratch at or under the best baseline on at least {min(2, n)} of {n}",
            sum(fixed[g] <= best_base[g] for g in by) >= min(2, n),
        ),
        (
            f"from scratch better than same-budget annealing on at least {min(2, n)} of {n}",
            sum(fixed[g] < anneal[g] for g in by) >= min(2, n),
        ),
    ]
    if has_warm:
        out.append(
            ("warm start at or under the best baseline on every graph", all(warm[g] <= best_base[g] for g in by))
        )
    if "nmt" in by:
        seconds = statistics.median(
            w if (w := within(r["rl_fixed"]["curve"], r["rl_fixed"]["best"])) is not None else float("inf")
            for r in by["nmt"]
        )
        out += [
            ("NMT from scratch at least 15% under the expert", fixed["nmt"] <= 0.85 * expert["nmt"]),
            (f"NMT from scratch within 5% of its final best in under 10 minutes ({seconds:.0f} s)", seconds < 600),
        ]
        if has_warm:
            out.append(("NMT warm start at least 20% under the expert", warm["nmt"] <= 0.80 * expert["nmt"]))
    return out


SETTINGS = ("cluster", "minutes", "methods", "colocate_gradients")  # what merged runs must share


def merge(records: dict[str, dict]) -> tuple[list[list[dict]], dict]:
    """Merges saved runs of this script into one result set.

    Args:
      records: {folder: its results.json}: commit, cluster, minutes, methods, colocate_gradients and
        results (per graph, one run per seed).

    Returns:
      (per graph in order of first appearance, its runs sorted by seed; the shared settings plus the
      sorted commits).

    Raises:
      ValueError: the records disagree on a setting, or two hold the same graph and seed.
    """
    first_folder, first = next(iter(records.items()))
    by_graph: dict[str, dict[int, dict]] = {}
    for folder, rec in records.items():
        for key in SETTINGS:
            if rec[key] != first[key]:
                raise ValueError(f"{folder}/results.json: {key} is {rec[key]!r}, {first_folder} has {first[key]!r}")
        for runs in rec["results"]:
            for r in runs:
                seeds = by_graph.setdefault(r["graph"], {})
                if r["seed"] in seeds:
                    raise ValueError(f"{folder}/results.json: {r['graph']} seed {r['seed']} is in another folder too")
                seeds[r["seed"]] = r
    results = [[seeds[k] for k in sorted(seeds)] for seeds in by_graph.values()]
    meta = {key: first[key] for key in SETTINGS}
    meta["commits"] = sorted({rec["commit"] for rec in records.values()})
    return results, meta


def seeds_text(results: list[list[dict]]) -> str:
    """The seeds run: "0, 1, 2" when every graph ran the same ones, else the seeds per graph."""
    per = {runs[0]["graph"]: ", ".join(str(r["seed"]) for r in runs) for runs in results}
    if len(set(per.values())) == 1:
        return next(iter(per.values()))
    return "; ".join(f"{g} {s}" for g, s in per.items())
