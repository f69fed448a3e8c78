"""Figures for `placer-compare`: step times per method, and a per-device timeline (no TensorFlow).

Matplotlib with the Agg backend (no display needed); files are written
atomically.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from placer.compare import tables  # noqa: E402
from placer.core import atomic, fmt  # noqa: E402
from placer.core.cluster import Cluster  # noqa: E402
from placer.core.errors import InputError  # noqa: E402
from placer.core.op_graph import OpGraph  # noqa: E402


def _save(fig, path: str) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    atomic.write_bytes(path, buf.getvalue())


def plot_step_times(rows: Sequence, path: str, title: str = "") -> None:
    """Bar chart of the step time of each compared placement.

    Failed placements get a hatched grey bar as tall as the slowest one that
    ran, labelled with the failure ("OOM", "unsupported", "n/a"). When the
    step times differ by more than `LOG_SCALE_RATIO`, the axis is
    logarithmic, so that the small bars stay visible.

    Args:
      rows: placer.compare.compare_lib.Row items, drawn in order.
      path: PNG file to write.
      title: figure title.
    """
    ok_times = [r.step_time for r in rows if r.ok]
    top = max(ok_times) if ok_times else 1.0
    log = log_scale(ok_times)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.7 * len(rows) + 1.5), 3.6))
    x = np.arange(len(rows))
    best = tables.best(rows)
    for i, r in enumerate(rows):
        if r.ok:
            color = "tab:green" if r is best else "tab:blue"
            ax.bar(i, r.step_time, color=color)
            ax.text(i, r.step_time, fmt.seconds(r.step_time), ha="center", va="bottom", fontsize=7)
        else:
            ax.bar(i, top, color="0.85", hatch="//", edgecolor="0.5")
            middle = np.sqrt(min(ok_times) * top) if log else top / 2
            ax.text(i, middle, tables.status(r), ha="center", va="center", rotation=90, fontsize=8)
    ax.set_xticks(x, [r.method for r in rows], rotation=45, ha="right")
    ax.set_title(title or "step time per placement (lower is better)")
    if log:
        ax.set_yscale("log")
        ax.set_ylabel("step time (s, log scale)")
        ax.set_ylim(min(ok_times) / 2, top * 2)
    else:
        ax.set_ylabel("step time (s)")
        ax.set_ylim(0, top * 1.15)
    _save(fig, path)


LOG_SCALE_RATIO = 10.0  # bars of step times further apart than this go on a log axis


def log_scale(step_times: Sequence[float]) -> bool:
    """Whether a bar chart of these step times (s) needs a log axis: the largest over LOG_SCALE_RATIO x the smallest.

    >>> log_scale([1.0, 9.0]), log_scale([0.001, 1.0]), log_scale([])
    (False, True, False)
    """
    positive = [t for t in step_times if t > 0]
    return bool(positive) and max(positive) > LOG_SCALE_RATIO * min(positive)


MAX_DRAWN_BARS = 5000  # ops plus transfers drawn one bar each; above this, busy time per bin.
TIME_BINS = 400  # bins of the busy-time view of a large schedule.


def busy_fraction(start: np.ndarray, duration: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The fraction of each time bin covered by the intervals [start, start + duration).

    Busy time up to t is sum_i clamp(t - start_i, 0, duration_i); it is
    computed for every bin edge at once from sorted starts and finishes
    (O((n + bins) log n)), so a schedule of 10^5 ops takes milliseconds.

    Args:
      start: [n] interval starts, seconds.
      duration: [n] interval lengths, seconds (>= 0).
      edges: [b + 1] increasing bin edges, seconds.

    Returns:
      [b] busy seconds of each bin over its width (above 1 where intervals overlap).
    """
    s = np.asarray(start, dtype=float)
    f = np.sort(s + np.asarray(duration, dtype=float))
    s = np.sort(s)
    e = np.asarray(edges, dtype=float)
    cs, cf = np.concatenate([[0.0], np.cumsum(s)]), np.concatenate([[0.0], np.cumsum(f)])
    ks, kf = np.searchsorted(s, e), np.searchsorted(f, e)
    busy_until = (e * ks - cs[ks]) - (e * kf - cf[kf])  # sum over intervals of clamp(e - start, 0, duration)
    return np.diff(busy_until) / np.diff(e)


def plot_timeline(
    result, graph: OpGraph, cluster: Cluster, path: str, title: str = "", max_ops_labelled: int = 40
) -> None:
    """Gantt chart of one simulated step: one row per device, one per link that carried data.

    A schedule of more than MAX_DRAWN_BARS ops and transfers is drawn as the
    busy fraction of each row in TIME_BINS time bins, so a graph of 10^5 ops
    is drawn in about a second.

    Args:
      result: placer.measure.simulator.SimResult made with trace=True.
      graph: the simulated graph.
      cluster: the simulated cluster.
      path: PNG file to write.
      title: figure title.
      max_ops_labelled: ops are named on their bars when the graph has at
        most this many.

    Raises:
      InputError: the result has no schedule (simulated without trace=True).
    """
    if result.op_start is None:
        raise InputError("simulation result has no schedule; simulate with trace=True")
    names = [n.removeprefix("/device:") for n in cluster.device_names]
    links = sorted({(a, b) for a, b, *_ in result.transfers})
    labels = names + [f"{names[a]}->{names[b]}" for a, b in links]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(labels) + 1.4))
    start = np.asarray(result.op_start, dtype=float)
    dur = np.asarray(result.op_finish, dtype=float) - start
    dev = np.asarray(result.op_device)
    row = {ab: len(names) + k for k, ab in enumerate(links)}
    end = float(np.max(result.op_finish)) if graph.num_ops else 1.0
    end = end if end > 0 else 1.0
    if graph.num_ops + len(result.transfers) > MAX_DRAWN_BARS:
        _draw_binned(ax, start, dur, dev, result.transfers, row, len(names), end)
    else:
        _draw_bars(ax, start, dur, dev, result.transfers, row, len(names))
        if graph.num_ops <= max_ops_labelled:
            for i in range(graph.num_ops):
                ax.text(
                    start[i] + dur[i] / 2,
                    dev[i],
                    str(graph.names[i]).rsplit("/", 1)[-1],
                    ha="center",
                    va="center",
                    fontsize=6,
                    clip_on=True,
                )
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_xlim(0, end * 1.02)
    step = f"step {fmt.seconds(result.step_time)}" if result.ok else f"failed: {result.failure}"
    ax.set_title(f"{title} ({step})" if title else step)
    _save(fig, path)


def _draw_bars(ax, start, dur, dev, transfers, row, num_devices) -> None:
    """One bar per op and per transfer."""
    colors = plt.get_cmap("tab10")
    for d in range(num_devices):
        on = np.flatnonzero(dev == d)
        if len(on):
            ax.broken_barh(
                list(zip(start[on], dur[on], strict=True)),
                (d - 0.4, 0.8),
                facecolors=colors(d % 10),
                edgecolor="black",
                linewidth=0.2,
            )
    for a, b, t0, t1, _, _ in transfers:
        ax.broken_barh([(t0, t1 - t0)], (row[(a, b)] - 0.3, 0.6), facecolors="0.6", edgecolor="0.3", linewidth=0.2)


def _draw_binned(ax, start, dur, dev, transfers, row, num_devices, end) -> None:
    """Each row's busy fraction per time bin, as a band whose height is the fraction."""
    colors = plt.get_cmap("tab10")
    edges = np.linspace(0.0, end, TIME_BINS + 1)
    mid = (edges[:-1] + edges[1:]) / 2
    rows = [(d, start[dev == d], dur[dev == d], colors(d % 10), 0.8) for d in range(num_devices)]
    if len(transfers):
        t = np.array([(row[(a, b)], t0, t1 - t0) for a, b, t0, t1, _, _ in transfers], dtype=float)
        rows += [(r, t[t[:, 0] == r, 1], t[t[:, 0] == r, 2], "0.6", 0.6) for r in sorted(set(row.values()))]
    for r, s, d, color, height in rows:
        if len(s):
            half = height / 2 * np.minimum(busy_fraction(s, d, edges), 1.0)
            ax.fill_between(mid, r - half, r + half, step="mid", color=color, linewidth=0)
    ax.text(0.99, 0.01, f"busy fraction in {TIME_BINS} time bins", transform=ax.transAxes, ha="right", fontsize=7)
