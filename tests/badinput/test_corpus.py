"""The bad-input corpus (bench/testing/badinput): every hostile file is one line naming the file and field;
some cases end to end, their binaries run in this process (tests/binaries.py)."""

import json
import os

import numpy as np
import pytest

from bench.testing.badinput import cases, runner
from graphs import pipeline
from placer.core import cluster as cluster_lib
from placer.core import io
from placer.core.errors import InputError
from placer.core.placement import Placement
from tests import binaries

FILE_CASES = [c for c in cases.CASES if c.kind in ("graph", "cluster", "placement")]


def read_as_the_binaries_do(folder: str, kind: str) -> None:
    graph = io.load(os.path.join(folder, "g.json"))
    if kind == "cluster":
        pipeline.require_costs(graph, cluster_lib.load(os.path.join(folder, "c.json")), os.path.join(folder, "g.json"))
    if kind == "placement":
        path = os.path.join(folder, "p.json")
        Placement.load(path).for_graph(graph, path)


@pytest.mark.parametrize("case", FILE_CASES, ids=lambda c: c.name)
def test_reader_refuses_in_one_line_naming_file_and_field(tmp_path, case):
    runner.write_inputs(case, str(tmp_path))
    with pytest.raises(InputError) as e:
        read_as_the_binaries_do(str(tmp_path), case.kind)
    message = str(e.value)
    assert "\n" not in message, message
    for word in case.words:
        assert word in message, (word, message)


def test_good_files_of_the_corpus_are_accepted(tmp_path):
    good = cases.Case("good", "none", "the good files", None, ())
    runner.write_inputs(good, str(tmp_path))
    for kind in ("graph", "cluster", "placement"):
        read_as_the_binaries_do(str(tmp_path), kind)


# One case per binary and per kind of check, run as a user runs them.
END_TO_END = [
    "graph-output-bytes-huge",
    "cluster-links-list",
    "placement-groups-huge",
    "train-measure",
    "train-config-missing",
    "extract-top-types",
    "compare-out-exists",
    "train-workdir-file",
]


@pytest.mark.parametrize("name", END_TO_END)
def test_end_to_end_one_line_exit_2_nothing_left(tmp_path, name):
    case = next(c for c in cases.CASES if c.name == name)
    out = runner.run_case(case, str(tmp_path), run=binaries.run)
    assert out.ok, out


def test_unicode_names_round_trip(tmp_path):
    g = cases.graph_with("ops.0.name", "注意/κλειδί 🙂")
    g["edges"][0]["src"] = "注意/κλειδί 🙂"
    path = str(tmp_path / "u.json.gz")
    graph = io.from_json(g)
    io.save(graph, path)
    again = io.load(path)
    assert again == graph and again.names[0] == "注意/κλειδί 🙂"
    p = Placement.from_ops(graph, [1, 1, 0], cases.DEVICES, method="hand")
    p.save(str(tmp_path / "p.json"))
    back = Placement.load(str(tmp_path / "p.json")).for_graph(again)
    assert back.op_names == tuple(again.names) and list(back.devices) == [1, 1, 0]


def test_placement_keys_in_any_order_give_the_same_devices():
    graph = io.from_json(cases.GRAPH)
    ops = {"c": cases.DEVICES[0], "a": cases.DEVICES[1], "b": cases.DEVICES[0]}
    p = Placement.from_json(cases.placement(ops, groups=[2, 0, 1])).for_graph(graph)
    assert list(graph.names) == ["a", "b", "c"]
    np.testing.assert_array_equal(p.devices, [1, 0, 0])
    np.testing.assert_array_equal(p.groups, [0, 1, 2])


def test_unicode_op_names_measured_end_to_end(tmp_path):
    name = "注意/κλειδί 🙂"
    g = cases.graph_with("ops.0.name", name)
    g["edges"][0]["src"] = name
    (tmp_path / "g.json").write_bytes(cases.as_json(g))
    (tmp_path / "c.json").write_bytes(cases.as_json(cases.CLUSTER))
    p = cases.placement({name: cases.DEVICES[1], "b": cases.DEVICES[1], "c": cases.DEVICES[1]})
    p["graph"]["fingerprint"] = io.from_json(g).fingerprint()
    (tmp_path / "p.json").write_bytes(cases.as_json(p))
    out = binaries.run(
        "placer.measure_main",
        f"--graph={tmp_path / 'g.json'}",
        f"--cluster={tmp_path / 'c.json'}",
        f"--placement={tmp_path / 'p.json'}",
        f"--trace={tmp_path / 't.json'}",
        cwd=str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    assert "step time: 6.0" in out.stdout  # 1 + 2 + 3 s on one GPU, no transfers
    trace = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert name in json.dumps(trace, ensure_ascii=False)
