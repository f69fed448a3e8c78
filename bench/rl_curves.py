"""Draws the diagnosis curves of the RL searches that bench/rl.py ran, and prints them as tables.

For every graph: the paper's REINFORCE and the fixed rule side by side, per
step, the policy's entropy (nats per group), the mean and best sampled step
time (s), and the share of the samples' groups on each device. Reads the
workdirs under bench/rl.py's --out folder (their history.json); writes
bench/out/rl_diagnosis_<graph>.png.

Usage: python -m bench.rl_curves [--out=out/bench_rl]
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np
from absl import app, flags
from tabulate import tabulate

_OUT = flags.DEFINE_string("out", "out/bench_rl", "bench/rl.py's --out folder.")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ("rl_paper", "rl_fixed")


def load(out: str) -> dict[str, dict[str, list[dict]]]:
    """graph -> method -> history (the latest workdir of each)."""
    runs: dict[str, dict[str, list[dict]]] = {}
    for path in sorted(glob.glob(os.path.join(out, "*-rl_*-*", "history.json")), key=os.path.getmtime):
        graph, method = os.path.basename(os.path.dirname(path)).split("-")[:2]
        with open(path) as f:
            runs.setdefault(graph, {})[method] = json.load(f)
    return runs


def table(hist: list[dict], rows: int = 6) -> str:
    """A few steps of one search, spread log-evenly from the first to the last."""
    picks = sorted({int(x) for x in np.geomspace(1, len(hist), rows)})
    out = []
    for s in picks:
        h = hist[s - 1]
        share = np.asarray(h["device_share"], np.float64)
        share = share / max(1.0, share.sum())
        out.append(
            [h["step"], h["samples"], f"{h['wall_seconds']:.0f}", f"{h['mean_step_time']:.4f}"]
            + [f"{h['best_step_time']:.4f}", f"{h['entropy']:.3f}", " / ".join(f"{x:.2f}" for x in share)]
        )
    head = ["step", "placements", "wall s", "mean (s)", "best (s)", "entropy (nats)", "share per device"]
    return tabulate(out, head, tablefmt="github")


def plot(graph: str, by_method: dict[str, list[dict]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(METHODS), 3, figsize=(13, 3.2 * len(METHODS)), squeeze=False)
    for row, method in enumerate(METHODS):
        hist = by_method.get(method, [])
        if not hist:
            continue
        steps = [h["step"] for h in hist]
        axes[row, 0].plot(steps, [h["entropy"] for h in hist])
        axes[row, 0].set_ylabel(f"{method}\nentropy (nats)")
        axes[row, 1].plot(steps, [h["mean_step_time"] for h in hist], label="mean")
        axes[row, 1].plot(steps, [h["best_step_time"] for h in hist], label="best")
        axes[row, 1].set_ylabel("step time (s)")
        axes[row, 1].legend(fontsize=7)
        share = np.array([h["device_share"] for h in hist], np.float64)
        share /= np.maximum(1.0, share.sum(axis=1, keepdims=True))
        axes[row, 2].stackplot(steps, share.T, labels=[f"device {d}" for d in range(share.shape[1])])
        axes[row, 2].set_ylabel("share of groups")
        axes[row, 2].legend(fontsize=6, loc="upper right")
    for ax in axes[-1]:
        ax.set_xlabel("step")
    fig.suptitle(f"{graph}: the paper's REINFORCE against the fixed rule, from scratch")
    fig.tight_layout()
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    path = os.path.join(ROOT, "bench", "out", f"rl_diagnosis_{graph}.png")
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def main(argv):
    del argv
    for graph, by_method in sorted(load(_OUT.value).items()):
        print(f"### {graph}: {os.path.relpath(plot(graph, by_method), ROOT)}\n")
        for method in METHODS:
            if method in by_method:
                print(f"{method}:\n\n{table(by_method[method])}\n")


if __name__ == "__main__":
    app.run(main)
