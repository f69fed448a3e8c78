"""Cluster presets and the checks of the cluster spec."""

import json

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph


@pytest.mark.parametrize("name,gpus", [("k80x2", 2), ("k80x4", 4), ("h100x8", 8)])
def test_presets(name, gpus):
    c = cl.load(name)
    assert c.name == name
    assert c.device_names == ("/device:CPU:0",) + tuple(f"/device:GPU:{i}" for i in range(gpus))
    assert [d.type for d in c.devices] == ["CPU"] + ["GPU"] * gpus
    assert np.all(np.isinf(np.diag(c.bandwidth))) and np.all(np.diag(c.latency) == 0)
    assert np.allclose(c.bandwidth, c.bandwidth.T)


def test_k80_preset_is_the_papers_machine():
    c = cl.load("k80x4")
    assert all(d.memory_bytes == 12 * 2**30 and d.speed == 1.0 for d in c.devices[1:])
    assert c.devices[0].speed == 1.0


def test_h100_links_per_pair():
    c = cl.load("h100x8")
    assert c.bandwidth[1, 2] == 3.5e11 and c.bandwidth[0, 3] == 5.0e10 and c.bandwidth[3, 0] == 5.0e10
    assert c.devices[1].speed == 15.0


def spec(**over):
    d = {
        "name": "x",
        "devices": [
            {"name": "/device:CPU:0", "type": "cpu", "memory_bytes": 100},
            {"name": "/device:GPU:0", "type": "GPU", "memory_bytes": 100, "speed": 2},
        ],
        "links": {"default": {"bandwidth": 10.0, "latency": 0.1}, "pairs": []},
    }
    d.update(over)
    return d


def test_pair_override_and_symmetric_flag(tmp_path):
    data = spec(
        links={
            "default": {"bandwidth": 10.0, "latency": 0.1},
            "pairs": [{"src": "/device:CPU:0", "dst": "/device:GPU:0", "bandwidth": 5.0, "symmetric": False}],
        }
    )
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    c = cl.load(str(path))
    assert c.devices[0].type == "CPU" and c.devices[1].speed == 2.0
    assert c.bandwidth[0, 1] == 5.0 and c.bandwidth[1, 0] == 10.0 and c.latency[0, 1] == 0.1


@pytest.mark.parametrize(
    "data,field",
    [
        (spec(devices=[]), "devices"),
        (spec(links={"default": {"bandwidth": -1.0}}), "links.default.bandwidth"),
        (
            spec(links={"pairs": [{"src": "/device:CPU:0", "dst": "/device:GPU:0", "bandwidth": -5}]}),
            "links.pairs[0].bandwidth",
        ),
        (spec(links={"pairs": [{"src": "/device:CPU:0", "dst": "/device:GPU:9"}]}), "links.pairs[0].dst"),
        (
            spec(
                devices=[
                    {"name": "a", "type": "GPU", "memory_bytes": 1},
                    {"name": "a", "type": "GPU", "memory_bytes": 1},
                ]
            ),
            "duplicate device name 'a'",
        ),
        (spec(devices=[{"name": "a", "type": "GPU", "memory_bytes": 0}]), "devices[0].memory_bytes"),
    ],
)
def test_bad_specs_name_the_field(data, field):
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        cl.from_json(data, source="spec.json")


def test_unknown_preset_lists_presets():
    with pytest.raises(InputError, match="k80x4"):
        cl.load("nope")


def test_op_seconds_divide_by_speed_add_dispatch_and_sum_units():
    # Three ops costing 1, 2 and 4 s on a reference GPU; op c has no CPU kernel; op b is outside the step.
    g = OpGraph.create(
        "g",
        ["a", "b", "c"],
        ["T"] * 3,
        [],
        device_types=("GPU", "CPU"),
        compute_cost=np.array([[1.0, 8.0], [2.0, 8.0], [4.0, np.nan]]),
    ).with_step_ops(np.array([True, False, True]))
    c = cl.make(
        "c",
        [
            cl.Device("/device:GPU:0", "GPU", 1, speed=2.0, dispatch=0.25),
            cl.Device("/device:CPU:0", "CPU", 1, dispatch=0.5),
            cl.Device("/device:TPU:0", "TPU", 1),  # no cost of that type
        ],
    )
    nan = np.nan
    np.testing.assert_array_equal(c.op_seconds(g), [[0.75, 8.5, nan], [1.0, 8.0, nan], [2.25, nan, nan]])
    np.testing.assert_array_equal(c.op_seconds(g, dispatch=False), [[0.5, 8.0, nan], [1.0, 8.0, nan], [2.0, nan, nan]])
    # Units {a, c} and {b}: costs summed, then over speed, one dispatch per op the step runs.
    np.testing.assert_array_equal(c.op_seconds(g, np.array([0, 1, 0])), [[3.0, nan, nan], [1.0, 8.0, nan]])
