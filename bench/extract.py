"""Extraction and grouping of the paper-size graphs: ops, groups, wall time, peak memory.

Each model runs in a fresh subprocess (so peak memory, ru_maxrss, is its own).
Target: every graph extracts and groups in under 60 s and 4 GiB.

  python -m bench.extract [--variants=rnnlm:layers=2,nmt:layers=4 ...]
"""

from __future__ import annotations

from bench import report

CASES = [
    ("rnnlm", "layers=2"),
    ("rnnlm", "layers=4"),
    ("nmt", "layers=2"),
    ("nmt", "layers=4"),
    ("nmt", "layers=8"),
    ("inception_v3", ""),
]
CHILD = r"""
import importlib, json, resource, sys, time
from graphs import extract
from placer.core import grouping
import models
model, variant = sys.argv[1], sys.argv[2]
config = importlib.import_module("configs." + model).get_config(variant)
t0 = time.perf_counter(); built = models.build(config); t1 = time.perf_counter()
g = extract.extract(built.graph, name=model); t2 = time.perf_counter()
res = {"ops": g.num_ops, "edges": g.num_edges, "build_s": t1 - t0, "extract_s": t2 - t1}
for key, target in (("none", 0), ("target", 256)):
    t = time.perf_counter(); gr = grouping.group(g, target_groups=target); dt = time.perf_counter() - t
    assert gr.acyclic and not gr.tied_apart(g)
    res[key] = {"groups": gr.num_groups, "largest": int(gr.sizes().max()), "leaders": gr.num_leaders, "s": dt}
res["rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print("RESULT " + json.dumps(res))
"""


def measure(model: str, variant: str, timeout_s: float = 600.0) -> dict | str:
    """Runs one model in a subprocess; returns its results or a failure string."""
    return report.run_child(CHILD, [model, variant], timeout_s)


def main() -> None:
    rows = [
        "| model | ops | edges | build s | extract s | groups, no coarsening (largest, tie classes) "
        "| groups, target 256 (largest, tie classes) | grouping s, no coarsening | grouping s, target 256 "
        "| peak RSS GiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model, variant in CASES:
        res = measure(model, variant)
        label = f"{model} {variant}".strip()
        if isinstance(res, str):
            rows.append(f"| {label} | {res} |" + " |" * 8)
        else:
            a, t = res["none"], res["target"]
            rows.append(
                f"| {label} | {res['ops']} | {res['edges']} | {res['build_s']:.1f} | {res['extract_s']:.1f} "
                f"| {a['groups']} ({a['largest']}, {a['leaders']}) | {t['groups']} ({t['largest']}, {t['leaders']}) "
                f"| {a['s']:.2f} | {t['s']:.2f} | {res['rss_gib']:.2f} |"
            )
        print(rows[-1], flush=True)
    body = (
        "Target: each graph extracts and groups in under 60 s and 4 GiB. One run per model, each in a fresh "
        "process; peak RSS includes building the TF graph. Grouping by placer/core/grouping.py `group` with the "
        "default steps, without coarsening (`target_groups=0`) and with the default `target_groups=256`; "
        "every group graph is acyclic and every colocation set lies within one tie class (checked). "
        "Tie classes are the groups whose device a placement chooses.\n\n" + "\n".join(rows)
    )
    report.update_section("extract", "Extraction and grouping of paper-size graphs", body, "bench/extract.py")


if __name__ == "__main__":
    main()
