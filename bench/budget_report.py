"""Tables, curves and verdicts of bench/budget.py (no TensorFlow)."""

from __future__ import annotations

import csv
import json
import os
import statistics

from placer.core import atomic

# Learned methods, and their learning-off ablations where one exists.
LEARNED = ("cross_entropy", "ce_or_annealing", "reinforce", "rl_fixed")
ABLATION = {m: f"{m}_off" for m in ("cross_entropy", "ce_or_annealing")}
PAPER = ("configs/rnnlm.py", "configs/nmt.py", "configs/inception_v3.py")
HELD_OUT = ("configs/nmt.py:layers=8", "configs/rnnlm.py:layers=4", "configs/inception_v3.py:batch=64")
PRETRAINED = ("cross_entropy_pretrained", "ce_or_annealing_pretrained")  # started from a pretrained graph policy


def best_at(curve, placements: int) -> float:
    """Best step time (s) within `placements` measured placements (inf before the first)."""
    reached = [t for n, t, _ in curve if n <= placements]
    return min(reached) if reached else float("inf")


def best_within(curve, seconds: float) -> float:
    """Best step time (s) reached within `seconds` of wall time."""
    reached = [t for _, t, w in curve if w <= seconds]
    return min(reached) if reached else float("inf")


def save(out: str, runs: list[dict], settings: dict) -> None:
    atomic.write_text(os.path.join(out, "results.json"), json.dumps({"settings": settings, "runs": runs}))


def combine(folders: list[str]) -> tuple[list[dict], dict]:
    """The runs of several results.json (one per folder; a later folder's run of the same graph, method and seed
    replaces an earlier one's), and the first one's settings with merged lists."""
    by_key, settings = {}, None
    for folder in folders:
        with open(os.path.join(folder, "results.json")) as f:
            data = json.load(f)
        by_key.update({(r["graph"], r["method"], r["seed"]): r for r in data["runs"]})
        if settings is None:
            settings = dict(data["settings"])
        for key in ("graphs", "methods", "seeds"):
            settings[key] = list(dict.fromkeys(settings[key] + data["settings"][key]))
        settings["budgets"] = sorted(set(settings["budgets"]) | set(data["settings"]["budgets"]))
        commits = settings["commit"].split(", ")
        settings["commit"] = ", ".join(dict.fromkeys([*commits, *data["settings"]["commit"].split(", ")]))
        if data["settings"].get("max_minutes"):
            settings["max_minutes"] = max(settings.get("max_minutes", 0), data["settings"]["max_minutes"])
    return list(by_key.values()), settings


def _runs(runs, graph, method, placements: int = 0):
    """The runs of `method` on `graph` that measured at least `placements` (all when 0), by seed."""
    chosen = (r for r in runs if r["graph"] == graph and r["method"] == method and r["placements"] >= placements)
    return sorted(chosen, key=lambda r: r["seed"])


def _cell(values: list[float]) -> str:
    values = [v for v in values if v != float("inf")]  # inf: nothing ran within the limit
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:.4f}" if len(values) == 1 else f"{med:.4f} ({min(values):.4f}-{max(values):.4f})"


def _signed(a: float, b: float) -> str:
    return f"{100 * (a / b - 1):+.1f}%"


def section(runs: list[dict], settings: dict) -> str:
    """The Markdown body of the section: settings, one table per graph, then the targets."""
    budgets, wall = settings["budgets"], settings["wall_seconds"]
    lines = [
        f"Commits {settings['commit']}; k80x4, simulator, op-level measurement; seeds {settings['seeds']}; "
        f"each run goes once through placer-train's loop to the largest budget of its batch (`measured`) and each "
        f"budget is read off its best-so-far curve (a warm start's placements count). Cells: median step time in seconds over "
        f"the seeds (range), left out where a run measured fewer (`measured`, the fewest of its seeds'); "
        f"vs annealing: signed % per seed (+ = slower). `overhead` = wall ms per placement "
        f"outside measurement; `method ms` = the part of it inside the method's own propose and observe (a policy's "
        f"sampling and updates; `-` for runs made before it was recorded). `at {wall:g} s` = best within {wall:g} s of wall time."
        + (
            f" Runs capped at {settings['max_minutes']:g} minutes where `measured` falls short."
            if settings.get("max_minutes")
            else ""
        ),
        "",
    ]
    if settings.get("note"):
        lines += [settings["note"], ""]
    for graph in settings["graphs"]:
        head = [f"{n} pl." for n in budgets] + [f"vs annealing at {n}" for n in budgets]
        seeds = sorted({r["seed"] for r in runs if r["graph"] == graph})
        lines += [
            f"**{graph}** (seeds {', '.join(map(str, seeds))})",
            "",
            "| method | measured | " + " | ".join(head) + f" | at {wall:g} s | overhead ms | method ms |",
        ]
        lines.append("|" + "---|" * (len(head) + 5))
        ref = {r["seed"]: r for r in _runs(runs, graph, "annealing")}
        for method in settings["methods"]:
            rs = _runs(runs, graph, method)
            if not rs:
                continue
            cells = [str(min(r["placements"] for r in rs))]  # fewest placements a seed's run measured
            cells += [_cell([best_at(r["curve"], n) for r in _runs(runs, graph, method, n)]) for n in budgets]
            for n in budgets:
                pairs = [
                    (best_at(r["curve"], n), best_at(ref[r["seed"]]["curve"], n))
                    for r in _runs(runs, graph, method, n)
                    if r["seed"] in ref and ref[r["seed"]]["placements"] >= n
                ]
                cells.append(" / ".join(_signed(a, b) for a, b in pairs) or "-")
            cells.append(_cell([best_within(r["curve"], wall) for r in rs]))
            cells.append(f"{1000 * statistics.median(r['overhead_per_placement'] for r in rs):.1f}")
            own = [r["learner_per_placement"] for r in rs if r.get("learner_per_placement") is not None]
            cells.append(f"{1000 * statistics.median(own):.1f}" if own else "-")
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += _warm(runs, settings)
    lines += ["Targets:", ""] + [f"- {text}: {'met' if ok else 'NOT met'}" for text, ok in targets(runs, settings)]
    return "\n".join(lines) + "\n"


def _warm(runs, settings) -> list[str]:
    """Lines comparing seq2seq warm-started (`rl_warm`) with annealing from the same start."""
    lines = []
    for graph in settings["graphs"]:
        ref = {r["seed"]: r for r in _runs(runs, graph, "annealing_warm")}
        rs = [r for r in _runs(runs, graph, "rl_warm") if r["seed"] in ref]
        cells = [
            f"{n}: " + " / ".join(_signed(best_at(r["curve"], n), best_at(ref[r["seed"]]["curve"], n)) for r in rs)
            for n in settings["budgets"]
            if all(r["placements"] >= n and ref[r["seed"]]["placements"] >= n for r in rs)
        ]
        if rs and cells:
            lines.append(f"- {graph}, seeds {', '.join(str(r['seed']) for r in rs)}: " + "; ".join(cells))
    if not lines:
        return []
    head = ("Warm starts: `rl_warm` (seq2seq started by imitating the fastest baseline, whose "
            "measurements count) against `annealing_warm` (annealing started from that baseline's placement), "
            "signed % per seed at each budget (+ = slower):")  # fmt: skip
    return [head, ""] + lines + [""]


def _at_or_under(runs, graph, method, n) -> tuple[list[bool], bool]:
    """(per seed: method at or under annealing after n placements; the medians too)."""
    ms, refs = _runs(runs, graph, method, n), {r["seed"]: r for r in _runs(runs, graph, "annealing", n)}
    pairs = [(best_at(r["curve"], n), best_at(refs[r["seed"]]["curve"], n)) for r in ms if r["seed"] in refs]
    if not pairs:
        return [], False
    return [a <= b for a, b in pairs], statistics.median(a for a, _ in pairs) <= statistics.median(b for _, b in pairs)


def _score(runs, graphs, method, n) -> tuple[int, int, int]:
    """(graphs whose median is at or under annealing's, graph-seeds at or under, graph-seeds) after n placements."""
    per = [_at_or_under(runs, g, method, n) for g in graphs]
    return sum(med for _, med in per), sum(sum(s) for s, _ in per), sum(len(s) for s, _ in per)


def winner(runs, settings, n: int | None = None) -> str | None:
    """The learned method at or under annealing on the most paper graphs' medians, then graph-seeds, after `n`
    placements (default: the largest budget); ties go to the earlier in LEARNED."""
    n = n or settings["budgets"][-1]
    scores = {m: _score(runs, PAPER, m, n)[:2] for m in LEARNED if m in settings["methods"]}
    return max(scores, key=scores.get) if scores else None


def targets(runs, settings) -> list[tuple[str, bool]]:
    """(description with the figures, met) of each target of the benchmark."""
    out = []
    graphs = [g for g in PAPER if g in settings["graphs"]]
    for n in (4000, 16000):
        best = winner(runs, settings, n) if n in settings["budgets"] else None
        if best is None or n not in settings["budgets"] or len(graphs) < 3:
            out.append(
                (f"best learned method at or under annealing at {n} on all 3 paper graphs (not measured)", False)
            )
            continue
        medians, seeds, total = _score(runs, graphs, best, n)
        ok = medians == 3 and seeds >= 7
        out.append((f"{best} (the best learned method at {n}) at or under annealing at {n}: medians on {medians}/3 "
                    f"graphs, {seeds}/{total} graph-seeds (need 3/3 and 7/9)", ok))  # fmt: skip
    out.append(_pretrained(runs, settings))
    best = winner(runs, settings)
    off = ABLATION.get(best or "")
    n = settings["budgets"][-1]
    if off and off in settings["methods"]:
        worse = []
        for g in graphs:
            on, ab = _runs(runs, g, best, n), _runs(runs, g, off, n)
            if on and ab:
                worse.append(
                    statistics.median(best_at(r["curve"], n) for r in ab)
                    > statistics.median(best_at(r["curve"], n) for r in on)
                )
        ok = sum(worse) >= 2 and n >= 16000
        out.append(
            (
                f"{best} with learning off worse at {n} on {sum(worse)}/{len(worse)} paper graphs (need 2 of 3 at 16000)",
                ok,
            )
        )
    else:
        out.append(("the winner with learning off worse on 2 of 3 paper graphs (no ablation measured)", False))
    out += _speed(runs)
    return out


def _pretrained(runs, settings) -> tuple[str, bool]:
    """The best pretrained-policy method against annealing at 1,000 placements on the held-out graphs (medians)."""
    held = [g for g in HELD_OUT if g in settings["graphs"]]
    measured = [m for m in PRETRAINED if m in settings["methods"]]
    if not measured or len(held) < 3 or 1000 not in settings["budgets"]:
        return "a pretrained-policy method at or under annealing at 1000 on the 3 held-out graphs (not measured)", False
    scores = {m: _score(runs, held, m, 1000) for m in measured}
    best = max(measured, key=lambda m: scores[m][:2])
    medians, seeds, total = scores[best]
    text = (f"{best} (the better of {', '.join(measured)}) at or under annealing at 1000 on the held-out graphs: "
            f"medians on {medians}/3 graphs, {seeds}/{total} graph-seeds (need 3/3 medians)")  # fmt: skip
    return text, medians == 3


def _speed(runs) -> list[tuple[str, bool]]:
    """The two speed targets on NMT: today's seq2seq settings (`rl_fixed`), and annealing's rate.

    The policy's time is judged per placement after the first round: the first round pays once for tracing
    the sampling and compiling the update, whatever the budget. Both figures are printed.
    """
    nmt = [r for r in runs if r["graph"] == "configs/nmt.py"]
    fixed = [r for r in nmt if r["method"] == "rl_fixed"]
    pol = [r["learner_per_placement"] for r in fixed if r.get("learner_per_placement") is not None]
    steady = [r["learner_after_first_round"] for r in fixed if r.get("learner_after_first_round") is not None]
    first = [r["learner_first_round_seconds"] for r in fixed if r.get("learner_first_round_seconds") is not None]
    outside = [r["overhead_per_placement"] for r in fixed]
    ann = [r["placements"] / r["train_seconds"] for r in nmt if r["method"] == "annealing"]
    ms = lambda xs: f"{1000 * statistics.median(xs):.1f} ms"  # noqa: E731
    if steady:
        got = (f"{ms(steady)} after the first round (the first round, tracing and compiling included, "
               f"{statistics.median(first):.1f} s; every round counted, `method ms`, {ms(pol)}; with the loop and "
               f"checkpoints, `overhead ms`, {ms(outside)})")  # fmt: skip
    else:
        got = f"{ms(pol)} with the first round's tracing counted (per round not recorded)" if pol else "not measured"
    judged = steady or pol
    return [
        ("seq2seq (rl_fixed) policy time per placement on grouped NMT <= 20 ms (sampling and updates): " + got,
         bool(judged) and statistics.median(judged) <= 0.02),
        ("annealing >= 300 op-level placements/s on NMT: "
         + (f"{statistics.median(ann):.0f}/s" if ann else "not measured"), bool(ann) and statistics.median(ann) >= 300),
    ]  # fmt: skip


def curves(out: str, runs: list[dict]) -> None:
    """Best-so-far curves: one CSV of every run, and one PNG per graph (median over seeds is not drawn: each run is)."""
    with open(os.path.join(out, "curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("graph", "method", "seed", "placements", "best_step_time", "wall_seconds"))
        for r in runs:
            for n, t, s in r["curve"]:
                w.writerow((r["graph"], r["method"], r["seed"], n, t, s))
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    for graph in dict.fromkeys(r["graph"] for r in runs):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        colours = {}
        for r in (r for r in runs if r["graph"] == graph and r["curve"]):
            n, t = [c[0] for c in r["curve"]] + [r["placements"]], [c[1] for c in r["curve"]] + [r["curve"][-1][1]]
            c = colours.setdefault(r["method"], f"C{len(colours)}")
            ax.step(
                n, t, where="post", color=c, label=r["method"] if r["seed"] == min(x["seed"] for x in runs) else None
            )
        ax.set_xscale("log")
        ax.set_xlabel("measured placements")
        ax.set_ylabel("best step time (s)")
        ax.set_title(graph)
        ax.legend(fontsize=7)
        name = graph.replace("configs/", "").replace(".py", "").replace(":", "_").replace("=", "")
        fig.savefig(os.path.join(out, f"{name}.png"), dpi=100, bbox_inches="tight")
        plt.close(fig)
