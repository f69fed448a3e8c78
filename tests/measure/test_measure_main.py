"""placer-measure end to end on hand-written graph files: its figures, their units (3 significant figures), and bad-input errors."""

import json
import re

import pytest

from tests import binaries


def chain_graph(name: str, costs: dict, edge_bytes: list) -> dict:
    """A graph file's document: ops named and costed by `costs` ({op: (CPU s, GPU s)}) in a chain whose
    edges carry `edge_bytes`."""
    names = list(costs)
    return {
        "format": "placer.opgraph",
        "version": 1,
        "name": name,
        "device_types": ["CPU", "GPU"],
        "ops": [
            {
                "name": n,
                "type": "T",
                "output_shapes": [],
                "output_bytes": 0,
                "persistent_bytes": 0,
                "colocation": "",
                "cost": {"CPU": cpu, "GPU": gpu},
            }
            for n, (cpu, gpu) in costs.items()
        ],
        "edges": [
            {"src": s, "dst": d, "bytes": b, "control": False}
            for s, d, b in zip(names[:-1], names[1:], edge_bytes, strict=True)
        ],
    }


# a (1 s on GPU) -> b (2 s) -> c (3 s); 1e10 bytes from a to b.
GRAPH = chain_graph("chain", {"a": (10.0, 1.0), "b": (10.0, 2.0), "c": (10.0, 3.0)}, [10**10, 0])


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
    assert "step time: 7.000 s" in out.stdout  # 7.000035 s to 4 significant figures
    assert "bytes moved: 10000000000" in out.stdout
    # Lower bound: critical path 1 + 2 + 3 = 6 s; the load LP spreads the 6 GPU-seconds (and the CPU's
    # share at its speed) over three devices, less.
    assert "lower bound: 6.000 s (critical path binds; load" in out.stdout
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
    assert "step time: 7.000 s" in out.stdout  # as above: 7 s, 2e-5 latency, 3 dispatches of 5e-6


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


# a (3 us on a GPU) -> b (2 ms on a GPU), no bytes between them; 10x as long on the CPU.
SHORT = chain_graph("short", {"a": (3e-5, 3e-6), "b": (2e-2, 2e-3)}, [0])
TIME = re.compile(r"\d+(?:\.\d+)? (?:us|ms|s)\b")


def test_step_time_busy_time_and_lower_bound_print_with_units(tmp_path):
    (tmp_path / "g.json").write_text(json.dumps(SHORT))
    out = binaries.run(
        "placer.measure_main", f"--graph={tmp_path / 'g.json'}", "--cluster=k80x2", "--baseline=single_gpu"
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # Both ops on GPU:0: 3 us + 2 ms of compute, and k80x2's dispatch of 5 us per GPU op, twice:
    # 2.003 ms + 0.010 ms = 2.013 ms, 4 significant figures for step times (a .6f print said 0.002013 s).
    assert "step time: 2.013 ms" in lines
    # Lower bound: the critical path of each op on its fastest device, its dispatch included (a: GPU 3 + 5 us
    # against CPU 30 us + 0.781 us; b: GPU 2 ms + 5 us): 2.013 ms, and 2.013 / 2.013 = 1.00. The load LP
    # splits b's 2 ms over the two GPUs and part of it on the CPU: under 1 ms, so the path binds.
    bound_line = next(line for line in lines if line.startswith("lower bound:"))
    assert re.fullmatch(
        r"lower bound: 2\.013 ms \(critical path binds; load 9\d\d\.\d us\), step time / lower bound = 1\.00",
        bound_line,
    ), bound_line
    busy = {line.split()[0]: line for line in lines if " busy " in line}
    assert "busy 0 s " in busy["/device:CPU:0"] and "busy 0 s " in busy["/device:GPU:1"]
    assert "busy 2.01 ms " in busy["/device:GPU:0"]  # its two ops and their dispatch: the whole step
    for line in lines:  # no time printed without its unit or with more than 3 significant figures
        assert not re.search(r"\d\.\d{4,}", line), line
    assert len([t for line in lines for t in TIME.findall(line)]) >= 5
