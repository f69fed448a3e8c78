"""A search that starts from a baseline starts from the baseline's own placement, even where the groups mix
its devices, and is never worse than it.

The graph, worked out by hand: x (1 ms) feeds a and b (1 s each on a GPU, 10 s on the CPU), edges of 0
bytes. Two GPUs: a on one and b on the other finish at 1.001 s (m_etf's placement); the same GPU runs both
in 2.001 s. Grouped into one group (target 1, no floor) every group placement puts a and b on one device,
at least 2.001 s, so a search that read the baseline through its groups (their majority device) would
start 2x slower than the baseline and could never return to it.
"""

import json

import numpy as np
import pytest

from baselines import registry
from configs import common
from placer.core import cluster as cluster_lib
from placer.core import io as graph_io
from placer.core.op_graph import OpGraph
from placer.measure.simulator import Simulator
from placer.rl import methods, train_lib
from placer.rl import problem as problem_lib

BASELINE = 1.001  # s, m_etf: a and b on different GPUs


def fork() -> OpGraph:
    return OpGraph.create(
        "fork", ["x", "a", "b"], ["T", "T", "T"], [("x", "a", 0), ("x", "b", 0)], device_types=("CPU", "GPU"),
        compute_cost=np.array([[0.01, 0.001], [10.0, 1.0], [10.0, 1.0]]),
    )  # fmt: skip


def cluster_file(path) -> str:
    devices = [{"name": "/device:CPU:0", "type": "CPU", "memory_bytes": 10**10}]
    devices += [{"name": f"/device:GPU:{i}", "type": "GPU", "memory_bytes": 10**10} for i in range(2)]
    links = {"default": {"bandwidth": 1e9, "latency": 0.0}, "pairs": []}
    path.write_text(json.dumps({"name": "gpus", "devices": devices, "links": links}))
    return str(path)


def test_the_fork_worked_by_hand(tmp_path):
    graph, cluster = fork(), cluster_lib.load(cluster_file(tmp_path / "c.json"))
    m_etf = registry.place("m_etf", graph, cluster)
    sim = Simulator(graph, cluster)
    assert sim.measure([m_etf])[0].step_time == pytest.approx(BASELINE)
    assert m_etf.devices[1] != m_etf.devices[2]  # a and b apart
    placer = common.placer_config()
    placer.grouping.target_groups, placer.grouping.min_groups = 1, 0
    problem, groups = problem_lib.make_problem(graph, cluster, placer)
    assert groups.num_groups == 1
    # Read through its one group, the baseline is its majority device for all three ops: 2.001 s.
    target = problem.target(m_etf.devices)
    assert sim.measure([problem.placement(target)])[0].step_time == pytest.approx(2.001)
    # Relative to the baseline, that same group placement is the baseline; another device moves everything.
    based = problem.with_base(m_etf.devices)
    np.testing.assert_array_equal(based.placement(target).devices, m_etf.devices)
    other = (target + 1) % 3
    np.testing.assert_array_equal(based.placement(other).devices, np.full(3, other[0]))
    assert problem.with_base(np.zeros(3, np.int64)) is problem  # groups that hold a placement: nothing changes


@pytest.mark.parametrize(
    "method",
    [pytest.param(m, marks=pytest.mark.slow) if m == "seq2seq" else m for m in methods.names()
     if methods.uses_warm_start(m)],
)  # fmt: skip
def test_a_warm_started_search_is_never_worse_than_its_baseline(tmp_path, monkeypatch, method):
    graph_io.save(fork(), str(tmp_path / "g.json"))
    # The grouping gives up the warm start's colours (as it does past COLOUR_SLACK x the target on large
    # graphs): the groups then mix m_etf's devices.
    monkeypatch.setattr(problem_lib, "COLOUR_SLACK", 1e-9)
    c = common.get_config()
    c.cluster = cluster_file(tmp_path / "c.json")
    c.placer.train.method, c.placer.train.warm_start = method, "m_etf"
    c.placer.grouping.target_groups, c.placer.grouping.min_groups = 1, 0
    c.placer.policy.hidden_size, c.placer.train.warm_start_steps = 8, 5
    lines = []
    s = train_lib.run(
        c, workdir=str(tmp_path / "w"), steps=0, graph_path=str(tmp_path / "g.json"), progress=False,
        log=lines.append, max_placements=40,
    )  # fmt: skip
    assert s["groups"] == 1
    # The warm start names its baseline and that baseline's step time.
    if method != "seq2seq":  # seq2seq says it as it imitates
        assert "warm start: on, from m_etf (1.001 s), the fastest of m_etf" in lines, lines
    assert any(x.startswith("start: the groups mix m_etf's devices (") for x in lines), lines
    assert s["best_step_time"] <= BASELINE + 1e-12
    best = json.loads((tmp_path / "w" / "best_placement.json").read_text())
    devices = [best["devices"].index(d) for d in (best["ops"]["a"], best["ops"]["b"])]
    assert devices[0] != devices[1]
