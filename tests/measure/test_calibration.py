"""A graph profiled on this machine carries the dispatch of that moment; the simulator uses it for local clusters.

Ops cost 1 s each on the reference CPU and the overheads are 0.25 s, 0.5 s
or 1 s, so every sum below is exact in binary floating point.
"""

import json

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core import io as graph_io
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.measure.simulator import simulate

CAL = {"cpu_trace_floor": 0.125, "cpu_dispatch": 0.25, "cpu_transfer_cost": 0.5}


def chain3(calibration=None):
    """a -> b -> c, 1 s each on the reference CPU, 100-byte edges."""
    g = OpGraph.create(
        "g", ["a", "b", "c"], ["T"] * 3, [("a", "b", 100), ("b", "c", 100)], device_types=("CPU",),
        compute_cost=np.ones((3, 1)),
    )  # fmt: skip
    return g.with_calibration(calibration) if calibration else g


def cpus(name, dispatch=1.0, transfer_cost=1.0):
    devices = [
        cl.Device(f"/device:CPU:{i}", "CPU", 10**9, dispatch=dispatch, transfer_cost=transfer_cost) for i in (0, 1)
    ]
    return cl.make(name, devices, bandwidth=100.0)


def test_local_cluster_takes_the_graphs_dispatch():
    # Calibrated: 3 x (1 + 0.25) = 3.75 s; the cluster's own 1 s dispatch would give 3 x 2 = 6 s.
    assert simulate(chain3(CAL), cpus("local"), np.zeros(3, np.int64)).step_time == 3.75
    assert simulate(chain3(), cpus("local"), np.zeros(3, np.int64)).step_time == 6.0


def test_local_cluster_takes_the_graphs_transfer_cost():
    # a 0-1.25 on CPU0, b 1.25-2.5 on CPU0; b's 100 bytes to CPU1: transfer cost 0.5 + 100 B / 100 B/s = 1.5 s,
    # so c runs 4.0-5.25 on CPU1.
    assert simulate(chain3(CAL), cpus("local"), np.array([0, 0, 1])).step_time == 5.25


def test_other_clusters_keep_their_documented_dispatch():
    # A preset or cluster file ("k80x4", here "t") keeps its 1 s dispatch whatever the graph carries: 3 x 2 = 6 s.
    assert simulate(chain3(CAL), cpus("t"), np.zeros(3, np.int64)).step_time == 6.0


def test_calibration_round_trips_through_a_graph_file(tmp_path):
    path = str(tmp_path / "g.graph.json")
    graph_io.save(chain3(CAL), path)
    assert graph_io.load(path).calibration == CAL
    graph_io.save(chain3(), path)
    with open(path) as f:
        assert "calibration" not in json.load(f)  # files without it are written as before
    assert graph_io.load(path).calibration == {}


@pytest.mark.parametrize(
    ("calibration", "message"),
    [
        ({"cpu_dispach": 1e-6}, "calibration: unknown key 'cpu_dispach'"),
        ({"cpu_dispatch": -1.0}, "calibration.cpu_dispatch"),
    ],
)
def test_bad_calibration_in_a_graph_file_is_refused_naming_the_field(tmp_path, calibration, message):
    data = graph_io.to_json(chain3())
    data["calibration"] = calibration
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        graph_io.from_json(data, source="g.json")
