"""The timeline figure: busy time per bin worked by hand, and large schedules drawn binned."""

import numpy as np
import pytest

from placer.compare import plots
from placer.core import cluster as cluster_lib
from placer.core.cluster import Device
from placer.core.op_graph import OpGraph
from placer.measure.simulator import Simulator


@pytest.mark.parametrize(
    "start,duration,edges,expected",
    [
        ([0.0, 2.0], [1.0, 2.0], [0, 1, 2, 3, 4], [1.0, 0.0, 1.0, 1.0]),
        ([0.0, 2.0], [1.0, 2.0], [0, 2, 4], [0.5, 1.0]),
        ([0.5], [1.0], [0, 1, 2], [0.5, 0.5]),
        ([3.0], [0.0], [0, 2, 4], [0.0, 0.0]),  # an op of no duration covers nothing
        ([0.0, 0.0], [2.0, 2.0], [0, 2], [2.0]),  # overlapping intervals add up
    ],
)
def test_busy_fraction_worked_by_hand(start, duration, edges, expected):
    got = plots.busy_fraction(np.array(start), np.array(duration), np.array(edges, dtype=float))
    np.testing.assert_allclose(got, expected)


def test_large_schedule_drawn_binned(tmp_path, monkeypatch):
    # A 50-op chain alternating between two GPUs: 50 ops and 49 transfers, over a cap of 20 bars.
    n = 50
    names = [f"op{i}" for i in range(n)]
    graph = OpGraph.create(
        "chain",
        names,
        ["T"] * n,
        [(names[i], names[i + 1], 1000) for i in range(n - 1)],
        device_types=("GPU",),
        compute_cost=np.full((n, 1), 1e-3),
    )
    cluster = cluster_lib.make("two", [Device(f"/device:GPU:{i}", "GPU", 10**9) for i in range(2)], bandwidth=1e9)
    result = Simulator(graph, cluster).simulate(np.arange(n) % 2, trace=True)
    drawn = []
    monkeypatch.setattr(plots, "MAX_DRAWN_BARS", 20)
    monkeypatch.setattr(plots, "_draw_bars", lambda *a: drawn.append("bars"))
    plots.plot_timeline(result, graph, cluster, str(tmp_path / "t.png"))
    assert drawn == []
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    monkeypatch.setattr(plots, "MAX_DRAWN_BARS", 1000)
    plots.plot_timeline(result, graph, cluster, str(tmp_path / "u.png"))
    assert drawn == ["bars"]
