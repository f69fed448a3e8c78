"""The suite's report, computed from its result files alone (no TensorFlow, no graph, no git).

Pure functions of a list of result dicts (bench/suite_runs.py writes them):
the value of a run at a budget, the per-graph table, the per-method test-split
summary against the reference, the equal-wall-time view, and the PNG.
"""

from __future__ import annotations

import collections
import math
import os

import numpy as np
from scipy import stats
from tabulate import tabulate

TIE = 0.002  # a ratio within 0.2% of 1 is a tie
WALL_TIMES = (60.0, 300.0)  # seconds of the equal-wall-time view


def sig4(seconds: float | None) -> str:
    """A step time with 4 significant figures, in ms under a second, else in s; "-" for none.

    >>> sig4(0.2120), sig4(0.0193456), sig4(1.19), sig4(None)
    ('212.0 ms', '19.35 ms', '1.190 s', '-')
    """
    if seconds is None or not np.isfinite(seconds):
        return "-"
    value, unit = (seconds * 1e3, "ms") if seconds < 0.9995 else (seconds, "s")
    return np.format_float_positional(value, precision=4, unique=False, fractional=False, trim="k") + f" {unit}"


def latest(results: list[dict]) -> list[dict]:
    """One result per (graph, cluster, method, budget, seed): the one finished last (an older commit's
    result of the same run is left out)."""
    keep: dict[tuple, dict] = {}
    for r in results:
        key = (r["graph"], r["cluster"], r["method"], str(r["budget"]), r["seed"])
        if key not in keep or r.get("finished", "") >= keep[key].get("finished", ""):
            keep[key] = r
    return list(keep.values())


def best_at(curve, placements: int) -> float | None:
    """The best step time once `placements` placements were measured, from a best-so-far curve."""
    reached = [t for n, t, _ in curve if n <= placements]
    return min(reached) if reached else None


def value(results: list[dict], graph: str, cluster: str, method: str, budget: int, seed: int) -> float | None:
    """A method's best step time after `budget` placements: a baseline's own step time; else read from the
    run of the smallest placement budget at least `budget` (its best-so-far curve). None when no run has it."""
    runs = [r for r in results if (r["graph"], r["cluster"], r["method"], r["seed"]) == (graph, cluster, method, seed)]
    if any(r["kind"] == "baseline" for r in runs):
        return next(r["best"] for r in runs if r["kind"] == "baseline")
    runs = sorted((r for r in runs if str(r["budget"]).isdigit() and int(r["budget"]) >= budget), key=lambda r: int(r["budget"]))  # fmt: skip
    if not runs or runs[0].get("best") is None:
        return None
    return runs[0]["best"] if int(runs[0]["budget"]) == budget else best_at(runs[0]["curve"], budget)


def _timed(run: dict) -> bool:
    return str(run["budget"]).endswith("s")


def at_wall(results: list[dict], graph: str, cluster: str, method: str, seed: int, seconds: float):
    """(best step time within `seconds` of search wall time, placements measured by then, the run ended
    earlier). Read from a wall-time run ("Ns" budget of at least `seconds`) where there is one, else from the
    longest placement-budget run. (None, 0, False) without a run."""
    runs = [r for r in results if (r["graph"], r["cluster"], r["method"], r["seed"]) == (graph, cluster, method, seed)]
    runs = [r for r in runs if r["kind"] != "baseline" and r.get("best") is not None]
    timed = [r for r in runs if _timed(r) and float(str(r["budget"])[:-1]) >= seconds]
    counted = sorted((r for r in runs if str(r["budget"]).isdigit()), key=lambda r: int(r["budget"]))
    run = timed[0] if timed else (counted[-1] if counted else None)
    if run is None:
        return None, 0, False
    reached = [t for _, t, s in run["curve"] if s <= seconds]
    rate = run["placements"] / max(run["search_seconds"], 1e-9)
    ended = run["search_seconds"] < seconds
    return (min(reached) if reached else None), int(min(run["placements"], rate * seconds)), ended


def _methods(results: list[dict]) -> tuple[list[str], list[str]]:
    learned = list(dict.fromkeys(r["method"] for r in results if r["kind"] != "baseline"))
    baselines = list(dict.fromkeys(r["method"] for r in results if r["kind"] == "baseline"))
    return learned, baselines


def _pairs(results: list[dict], graphs: set[str] | None = None) -> list[tuple[str, str, int]]:
    """The (graph, cluster, seed) triples with results, restricted to `graphs`."""
    keys = {(r["graph"], r["cluster"], r["seed"]) for r in results if graphs is None or r["graph"] in graphs}
    return sorted(keys)


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def graph_table(results: list[dict], budget: int) -> str:
    """Per graph and cluster: ops, groups, the bound and its binding term, each method's median best step
    time at `budget` (over seeds) and its ratio to the bound."""
    learned, baselines = _methods(results)
    rows = []
    for graph, cluster in dict.fromkeys((g, c) for g, c, _ in _pairs(results)):
        mine = [r for r in results if (r["graph"], r["cluster"]) == (graph, cluster)]
        seeds = sorted({r["seed"] for r in mine})
        bound = mine[0]["bound"]
        # The methods' usual grouping (a warm start colours its own, so theirs may differ).
        counts = collections.Counter(r["groups"] for r in mine if r.get("groups"))
        groups = counts.most_common(1)[0][0] if counts else None
        row = [graph, cluster, mine[0]["ops"], groups if groups is not None else "-", f"{sig4(bound)} ({mine[0]['bound_term']})"]  # fmt: skip
        for m in learned + baselines:
            t = _median(value(mine, graph, cluster, m, budget, s) for s in seeds)
            row.append("-" if t is None else f"{sig4(t)} ({t / bound:.3f}x)")
        rows.append(row)
    head = ["graph", "cluster", "ops", "groups", "bound (term)", *learned, *baselines]
    return tabulate(rows, head, tablefmt="github", disable_numparse=True)


def compare(mine: list[float | None], ref: list[float | None]) -> dict:
    """Paired comparison of a method's step times with the reference's (one pair per graph-seed).

    Returns:
      {"pairs", "median_ratio", "wins", "ties", "losses" (a ratio under 1 - TIE wins, over 1 + TIE loses),
       "p": the two-sided Wilcoxon signed-rank p-value of the paired differences (None: under 2 pairs or all equal)}.
    """
    both = [(m, r) for m, r in zip(mine, ref, strict=True) if m is not None and r is not None]
    ratios = np.array([m / r for m, r in both])
    out = {"pairs": len(both), "median_ratio": float(np.median(ratios)) if both else None}
    out["wins"] = int((ratios < 1 - TIE).sum())
    out["losses"] = int((ratios > 1 + TIE).sum())
    out["ties"] = len(both) - out["wins"] - out["losses"]
    diffs = np.array([m - r for m, r in both])
    out["p"] = float(stats.wilcoxon(diffs).pvalue) if len(both) >= 2 and np.any(diffs != 0) else None
    return out


def method_summary(results: list[dict], graphs: set[str], budget: int, reference: str) -> list[dict]:
    """Per method, over the (graph, cluster, seed) pairs of `graphs`: `compare` with `reference` at `budget`,
    and the median wall time per placement (a baseline: its placing time)."""
    learned, baselines = _methods(results)
    pairs = _pairs(results, graphs)
    ref = [value(results, g, c, reference, budget, s) for g, c, s in pairs]
    out = []
    for m in learned + baselines:
        mine = [value(results, g, c, m, budget, s) for g, c, s in pairs]
        if all(v is None for v in mine):
            continue
        runs = [r for r in results if r["method"] == m and r["graph"] in graphs and r.get("placements")]
        per = _median(r["search_seconds"] / r["placements"] for r in runs)
        out.append({"method": m, **compare(mine, ref), "seconds_per_placement": per})
    return out


def worst_graph(results: list[dict], graphs: set[str], budget: int, method: str, reference: str):
    """(graph, its median over clusters and seeds of the method's ratio to `reference` at `budget`) for the
    graph of `graphs` where that median is largest; None without a pair."""
    medians = {}
    for g in sorted({g for g, _, _ in _pairs(results, graphs)}):
        pairs = _pairs(results, {g})
        mine = [value(results, g, c, method, budget, s) for _, c, s in pairs]
        ratio = compare(mine, [value(results, g, c, reference, budget, s) for _, c, s in pairs])["median_ratio"]
        if ratio is not None:
            medians[g] = ratio
    return max(medians.items(), key=lambda kv: kv[1]) if medians else None


def summary_table(rows: list[dict], reference: str) -> str:
    """The per-method summary as Markdown."""

    def fmt_p(p):
        return "-" if p is None else f"{p:.3g}"

    body = [
        [r["method"], r["pairs"], "-" if r["median_ratio"] is None else f"{r['median_ratio']:.4f}",
         f"{r['wins']}/{r['ties']}/{r['losses']}", fmt_p(r["p"]),
         "-" if r["seconds_per_placement"] is None else f"{r['seconds_per_placement'] * 1e3:.4g} ms"]
        for r in rows
    ]  # fmt: skip
    head = ["method", "pairs", f"median ratio to {reference}", "wins/ties/losses", "Wilcoxon p", "wall per placement"]
    return tabulate(body, head, tablefmt="github", disable_numparse=True)


def wall_table(results: list[dict], seconds: float) -> str:
    """Per graph, cluster and seed with wall-time runs, each learned method's best step time within `seconds`
    of wall time, with the placements measured by then ("*": the run ended earlier, at its budget, so its
    figure is its final best). A method without a wall-time run there is read from its longest run."""
    learned, _ = _methods(results)
    triples = sorted({(r["graph"], r["cluster"], r["seed"]) for r in results if _timed(r)})
    if not triples:
        return "No wall-time runs."
    rows = []
    for graph, cluster, seed in triples:
        row = [graph, cluster, str(seed)]
        for m in learned:
            t, n, ended = at_wall(results, graph, cluster, m, seed, seconds)
            row.append("-" if t is None else f"{sig4(t)} ({n:,}{'*' if ended else ''})")
        rows.append(row)
    return tabulate(rows, ["graph", "cluster", "seed", *learned], tablefmt="github", disable_numparse=True)


def plot(results: list[dict], budget: int, path: str) -> None:
    """A PNG of every method's median ratio to the bound at `budget`, one column of points per graph-cluster."""
    import matplotlib  # noqa: PLC0415 (only the report draws)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    learned, baselines = _methods(results)
    cells = list(dict.fromkeys((g, c) for g, c, _ in _pairs(results)))
    fig, ax = plt.subplots(figsize=(max(9, 0.45 * len(cells) + 6), 5.5))
    markers = "os^vD<>phX*P"
    for i, m in enumerate(learned + baselines):
        ys = []
        for g, c in cells:
            mine = [r for r in results if (r["graph"], r["cluster"]) == (g, c)]
            t = _median(value(mine, g, c, m, budget, s) for s in sorted({r["seed"] for r in mine}))
            ys.append(np.nan if t is None else t / mine[0]["bound"])
        ax.plot(range(len(cells)), ys, markers[i % len(markers)], label=m, alpha=0.8, linestyle="none",
                fillstyle="none" if m in baselines else "full")  # fmt: skip
    ax.set_xticks(range(len(cells)), [f"{g}\n{c}" for g, c in cells], rotation=90, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel(f"step time / lower bound ({budget:,} placements)")
    ax.set_title("Every method's median step time over the lower bound (open: baselines)", fontsize=9)
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def above_best_baseline(results: list[dict]) -> dict[str, tuple[int, int, float]]:
    """Per method: (runs whose final best is above the fastest baseline of their graph, cluster and seed,
    runs compared, the largest such ratio). Placement-budget runs only."""
    fastest: dict[tuple, float] = {}
    for r in results:
        if r["kind"] == "baseline" and r.get("best") is not None:
            k = (r["graph"], r["cluster"], r["seed"])
            fastest[k] = min(fastest.get(k, math.inf), r["best"])
    out: dict[str, tuple[int, int, float]] = {}
    for r in results:
        k = (r["graph"], r["cluster"], r["seed"])
        if r["kind"] == "baseline" or not str(r["budget"]).isdigit() or r.get("best") is None or k not in fastest:
            continue
        above, total, worst = out.get(r["method"], (0, 0, 1.0))
        ratio = r["best"] / fastest[k]
        out[r["method"]] = (above + (ratio > 1 + 1e-9), total + 1, max(worst, ratio))
    return out


def wall_total(results: list[dict]) -> float:
    """The summed wall time of every run (s): what the suite costs on one core."""
    return float(sum(r.get("wall_seconds", 0.0) for r in results))


def commits(results: list[dict]) -> dict[str, int]:
    """How many results each code commit has."""
    return dict(collections.Counter(r["commit"] for r in results).most_common())
