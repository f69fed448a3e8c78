"""placer-measure end to end on a hand-written graph file, and its bad-input errors."""

import json

import pytest

from tests import binaries

# a (1 s on GPU) -> b (2 s) -> c (3 s); 1e10 bytes from a to b.
GRAPH = {
    "format": "placer.opgraph",
    "version": 1,
    "name": "chain",
    "device_types": ["CPU", "GPU"],
    "ops": [
        {
            "name": n,
            "type": "T",
            "output_shapes": [],
            "output_bytes": 0,
            "persistent_bytes": 0,
            "colocation": "",
            "cost": {"CPU": 10.0, "GPU": c},
        }
        for n, c in (("a", 1.0), ("b", 2.0), ("c", 3.0))
    ],
    "edges": [
        {"src": "a", "dst": "b", "bytes": 10**10, "control": False},
        {"src": "b", "dst": "c", "bytes": 0, "control": False},
    ],
}


def placement(ops, devices=("/device:CPU:0", "/device:GPU:0", "/device:GPU:1")):
    from placer.core import io

    g = io.from_json(GRAPH)
    return {
        "format": "placer.placement",
        "version": 1,
        "graph": {"name": "chain", "fingerprint": g.fingerprint()},
        "devices": list(devices),
        "ops": ops,
        "groups": None,
        "metadata": {},
    }


def run(tmp_path, *args):
    (tmp_path / "g.json").write_text(json.dumps(GRAPH))
    return binaries.run("placer.measure_main", f"--graph={tmp_path / 'g.json'}", *args, cwd=tmp_path, timeout=120)


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(placement({"a": "/device:GPU:0", "b": "/device:GPU:1", "c": "/device:GPU:1"})))
    return p


def test_prints_step_time_and_writes_trace(tmp_path, good):
    out = run(tmp_path, "--cluster=k80x2", f"--placement={good}", f"--trace={tmp_path / 't.json'}")
    assert out.returncode == 0, out.stderr
    # k80x2 links: 1e10 bytes/s, 2e-5 s: a 0-1, transfer 1 s + 2e-5, b and c 5 s more; 3 GPU ops
    # of 5e-6 s dispatch each: 7 + 2e-5 + 1.5e-5.
    assert "step time: 7.00 s" in out.stdout  # 7.000035 s to 3 significant figures
    assert "bytes moved: 10000000000" in out.stdout
    # Lower bound: critical path 1 + 2 + 3 = 6 s.
    assert "step time / lower bound = 1.17" in out.stdout
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert {e["args"]["name"] for e in events if e["ph"] == "M"} == {
        "/device:CPU:0",
        "/device:GPU:0",
        "/device:GPU:1",
        "/device:GPU:0 -> /device:GPU:1",
    }


def expect_error(out, *words):
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), out.stderr
    for w in words:
        assert w in lines[0]


@pytest.mark.parametrize(
    "spec,words",
    [
        ({"name": "x", "devices": []}, ["devices"]),
        (
            {
                "devices": [{"name": "/device:GPU:0", "type": "GPU", "memory_bytes": 1}],
                "links": {"default": {"bandwidth": -1}},
            },
            ["links.default.bandwidth"],
        ),
        (
            {"devices": [{"name": "/device:GPU:0", "type": "GPU", "memory_bytes": 1}] * 2},
            ["duplicate", "/device:GPU:0"],
        ),
    ],
)
def test_bad_cluster(tmp_path, good, spec, words):
    (tmp_path / "c.json").write_text(json.dumps(spec))
    expect_error(run(tmp_path, f"--cluster={tmp_path / 'c.json'}", f"--placement={good}"), "c.json", *words)


def test_placement_of_wrong_length(tmp_path):
    p = tmp_path / "short.json"
    p.write_text(json.dumps(placement({"a": "/device:GPU:0", "b": "/device:GPU:1"})))
    expect_error(run(tmp_path, "--cluster=k80x2", f"--placement={p}"), "short.json", "ops:", "missing", "'c'")


def test_placement_matched_by_name_not_position(tmp_path):
    # The good placement's ops in reverse file order: the same step time as in file order.
    p = tmp_path / "rev.json"
    p.write_text(json.dumps(placement({"c": "/device:GPU:1", "b": "/device:GPU:1", "a": "/device:GPU:0"})))
    out = run(tmp_path, "--cluster=k80x2", f"--placement={p}")
    assert out.returncode == 0, out.stderr
    assert "step time: 7.00 s" in out.stdout  # as above: 7 s, 2e-5 latency, 3 dispatches of 5e-6


def test_placement_naming_an_op_the_graph_lacks(tmp_path):
    p = tmp_path / "extra.json"
    ops = {"a": "/device:GPU:0", "b": "/device:GPU:1", "c": "/device:GPU:1", "extra/op": "/device:GPU:0"}
    p.write_text(json.dumps(placement(ops)))
    expect_error(run(tmp_path, "--cluster=k80x2", f"--placement={p}"), "extra.json", "'extra/op'")


def test_placement_naming_unknown_device(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(
        json.dumps(
            placement(
                {"a": "/device:GPU:0", "b": "/device:GPU:7", "c": "/device:GPU:0"},
                devices=("/device:GPU:0", "/device:GPU:7"),
            )
        )
    )
    expect_error(run(tmp_path, "--cluster=k80x2", f"--placement={p}"), "/device:GPU:7")


def test_unknown_measure_kind(tmp_path, good):
    expect_error(run(tmp_path, f"--placement={good}", "--measure=abacus"), "sim", "grappler", "session")
