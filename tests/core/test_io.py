"""Graph JSON round trips and bad-input errors naming the file."""

import gzip
import json

import numpy as np
import pytest

from placer.core import io
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph


def sample_graph():
    cost = np.array([[1e-3, np.nan], [2e-3, 5e-4], [0.0, 1e-4]])
    return OpGraph.create(
        "s",
        ["a", "b", "c"],
        ["Const", "MatMul", "NoOp"],
        [("a", "b", 64), ("b", "c", 0)],
        output_shapes=[[(4, 4)], [(4, -1), ()], []],
        output_bytes=[64, 64, 0],
        persistent_bytes=[64, 0, 0],
        colocation=["a", "", ""],
        device_types=["CPU", "GPU"],
        compute_cost=cost,
        edge_control=[False, True],
    )


@pytest.mark.parametrize("name", ["g.graph.json", "g.graph.json.gz"])
def test_round_trip_is_equal(tmp_path, name):
    g = sample_graph()
    path = str(tmp_path / name)
    io.save(g, path)
    back = io.load(path)
    assert back == g
    assert np.isnan(back.compute_cost[0, 1]) and back.edge_control.tolist() == [False, True]


def test_absent_cost_means_cannot_run(tmp_path):
    data = io.to_json(sample_graph())
    assert data["ops"][0]["cost"] == {"CPU": 1e-3}


def write(tmp_path, data, name="bad.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_bad_inputs_name_the_file(tmp_path):
    good = io.to_json(sample_graph())
    cases = {
        "missing": str(tmp_path / "nope.json"),
        "bad json": write(tmp_path, "{not json"),
        "missing field": write(tmp_path, {k: v for k, v in good.items() if k != "ops"}),
        "unknown op": write(tmp_path, {**good, "edges": [{"src": "a", "dst": "zz", "bytes": 1, "control": False}]}),
        "cycle": write(tmp_path, {**good, "edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "a"}]}),
        "format": write(tmp_path, {**good, "format": "other"}),
        "op without type": write(tmp_path, {**good, "ops": [{"name": "a"}]}),
    }
    for what, path in cases.items():
        with pytest.raises(InputError, match=str(tmp_path)) as e:
            io.load(path)
        assert "\n" not in str(e.value), what
    bad_gz = tmp_path / "bad.json.gz"
    bad_gz.write_bytes(b"not gzip")
    with pytest.raises(InputError, match="bad.json.gz"):
        io.load(str(bad_gz))
    ok_gz = tmp_path / "cyc.json.gz"
    ok_gz.write_bytes(
        gzip.compress(json.dumps({**good, "edges": [{"src": "c", "dst": "a"}, {"src": "a", "dst": "c"}]}).encode())
    )
    with pytest.raises(InputError, match="cycle"):
        io.load(str(ok_gz))
