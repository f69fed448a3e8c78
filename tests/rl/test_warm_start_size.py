"""The warm start of "all" leaves out the list-scheduling baselines above a size, and says so."""

import numpy as np
import pytest

from baselines import registry
from configs import common
from placer.core import cluster as cl
from placer.core import io as graph_io
from placer.core.op_graph import OpGraph
from placer.measure import registry as measure_registry
from placer.rl import train_lib
from tests.hand_graphs import two_chains, write_gpu_cluster


class Recorder:
    """A real simulator that notes which baselines it was given."""

    def __init__(self, inner):
        self.inner = inner
        self.methods: list[str] = []

    def measure(self, placements):
        self.methods += [p.metadata["method"] for p in placements]
        return self.inner.measure(placements)


def chain_and_cluster():
    # a -> b -> c, GPU seconds 1, 2, 3 and CPU ten times that; edges of 1 byte.
    g = OpGraph.create(
        "chain",
        ["a", "b", "c"],
        ["MatMul"] * 3,
        [("a", "b", 1), ("b", "c", 1)],
        device_types=("CPU", "GPU"),
        compute_cost=np.array([[10.0, 1.0], [20.0, 2.0], [30.0, 3.0]]),
    )
    devices = [cl.Device("/device:CPU:0", "CPU", 10**9)] + [cl.Device(f"/device:GPU:{i}", "GPU", 10**9) for i in (0, 1)]
    return g, cl.make("c", devices, bandwidth=1e9, latency=0.0)


def train_config(limit: int):
    config = common.get_config()
    config.placer.train.warm_start_list_scheduling_max_ops = limit
    return config.placer.train


@pytest.mark.parametrize(
    ("methods", "num_ops", "limit", "skipped"),
    [
        ("all", 3, 2, 2),  # 3 ops > 2: skipped, the threshold is what the start line names
        ("all", 2, 2, 0),  # at the threshold: kept
        ("all", 3, 0, 0),  # 0 = never skip
        ("m_etf,metis", 3, 2, 0),  # named baselines run as named
    ],
)
def test_skips_only_all_above_the_threshold(methods, num_ops, limit, skipped):
    assert train_lib.skips_list_scheduling(methods, num_ops, train_config(limit)) == skipped


def test_default_threshold_keeps_every_model_graph_and_skips_the_large_one():
    train = common.get_config().placer.train
    assert train_lib.skips_list_scheduling("all", 20_000, train) == 0
    assert train_lib.skips_list_scheduling("all", 200_000, train) == 50_000


def test_start_line_names_the_threshold():
    assert train_lib.start_line("all", False, None, 2) == (
        "warm start: on, imitating the fastest of all (list scheduling skipped above 2 ops)"
    )


@pytest.mark.parametrize("skip", [True, False])
def test_best_baseline_measures_what_it_says(skip):
    graph, cluster = chain_and_cluster()
    measurer = Recorder(measure_registry.make_measurer("sim", graph, cluster))
    lines = []
    best = train_lib.best_baseline(graph, cluster, measurer, "all", 0, lines.append, skip_list_scheduling=skip)
    kept = [n for n in registry.names() if n not in registry.MEASURED and n != "expert"]  # expert: no model graph
    if skip:
        kept = [n for n in kept if n not in ("m_topo", "m_etf", "m_sct")]
    assert measurer.methods == kept
    assert ("m_etf" in measurer.methods) is not skip
    # A chain runs one op at a time: its best is all three ops on one GPU, 1 + 2 + 3 = 6 s.
    assert best[0] == pytest.approx(6.0)
    assert set(best[1].devices) <= {1, 2} and len(set(best[1].devices)) == 1


@pytest.mark.slow  # trains one policy step (10 to 20 s on 2 cores)
def test_train_above_the_threshold_skips_list_scheduling_and_takes_its_step(tmp_path):
    graph_io.save(two_chains(edge_bytes=1 << 20, gpu_seconds=np.ones(6)), str(tmp_path / "g.json"))
    write_gpu_cluster(tmp_path / "c.json", "gpus")
    config = common.get_config()
    config.cluster = str(tmp_path / "c.json")
    config.placer.train.warm_start_list_scheduling_max_ops = 5  # the graph has 6 ops
    lines = []
    summary = train_lib.run(
        config, workdir=str(tmp_path / "w"), steps=1, graph_path=str(tmp_path / "g.json"), progress=False,
        log=lambda s: lines.append(str(s)),
    )  # fmt: skip
    assert "warm start: placing and measuring all (list scheduling skipped above 5 ops)" in lines
    # The start line names the baseline it starts from and its step time: scotch, one chain per GPU, 3 s.
    assert "warm start: on, from scotch (3.000 s), the fastest of all (list scheduling skipped above 5 ops)" in lines
    assert summary["steps"] == 1 and summary["best_step_time"] is not None
    # Two chains of three 1 s ops on two GPUs: one chain per GPU takes 3 s, the best any placement does.
    assert summary["best_step_time"] >= 3.0
