"""Every compared step time names the model level it came from (group or op)."""

import numpy as np

from placer.compare import compare_lib, tables
from placer.core import cluster as cl
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement
from placer.measure import registry
from placer.measure.simulator import Simulator


def _setup():
    names = ["a", "b", "c", "d"]
    g = OpGraph.create(
        "g",
        names,
        ["T"] * 4,
        [("a", "b", 100), ("b", "c", 100), ("c", "d", 100)],
        device_types=("GPU",),
        compute_cost=np.ones((4, 1)),
    )
    devices = [cl.Device(f"/device:GPU:{i}", "GPU", 10**9) for i in range(2)]
    return g, cl.make("t", devices, bandwidth=100.0)


def test_rows_name_their_level_and_the_tables_say_it():
    g, c = _setup()
    groups = np.array([0, 0, 1, 1])
    grouped = Placement.from_groups(g, groups, np.array([0, 1]), c.device_names)
    rows = compare_lib.compare(g, c, Simulator(g, c), ["single_gpu"], [grouped], labels=["rl"], reference="single_gpu")
    assert {r.method: r.level for r in rows} == {"single_gpu": "op", "rl": "group"}
    assert tables.level_note(rows) == ["model level: group: rl; op: single_gpu"]
    assert "model level: group: rl; op: single_gpu" in tables.terminal_text(rows, c.device_names, "single_gpu")
    # Group level holds the group's output until the group ends: a, b 0-2 on GPU0, 100 B at
    # 100 B/s 2-3, c, d 3-5 on GPU1; op level sends b's output when b ends: the same 5 s here.
    assert rows[1].step_time == 5.0


def test_non_simulated_backends_run_ops_one_by_one():
    g, c = _setup()

    class Session:
        def measure(self, placements):
            raise AssertionError("not called")

    p = Placement.from_groups(g, np.array([0, 0, 1, 1]), np.array([0, 0]), c.device_names)
    assert registry.level_of(Session(), p) == "op"
    assert registry.level_of(Simulator(g, c), p) == "group"
    # A placement that splits a group is simulated op by op.
    split = Placement.from_ops(g, np.array([0, 1, 1, 1]), c.device_names, groups=np.array([0, 0, 1, 1]))
    assert registry.level_of(Simulator(g, c), split) == "op"
