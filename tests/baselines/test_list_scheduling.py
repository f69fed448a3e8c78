import numpy as np
import pytest

from baselines import list_scheduling, sct
from placer.core import cluster as cluster_lib
from placer.core.cluster import Device
from tests.baselines.helpers import GB, check_legal, make_cluster, make_graph

NAN = float("nan")
MB = 10**6


def test_m_etf_runs_two_equal_chains_on_both_gpus():
    # a1 -> a2 and b1 -> b2, 1 s per op on a GPU, 1 s per transfer (1 GB at 1 GB/s).
    # ETF: a1 on GPU 0 at [0, 1], b1 on GPU 1 at [0, 1]; a2 and b2 follow their
    # parents at [1, 2] with no transfer: makespan 2 s (4 s on one GPU).
    g = make_graph(["a1", "a2", "b1", "b2"], [("a1", "a2", GB), ("b1", "b2", GB)])
    cl = make_cluster(2, memory=10 * GB, bandwidth=1e9)
    s = list_scheduling.etf_schedule(g, cl, [1, 2])
    assert s.makespan == pytest.approx(2.0)
    d = s.devices
    assert d[0] == d[1] and d[2] == d[3] and d[0] != d[2]
    np.testing.assert_allclose(s.start, [0, 1, 0, 1])
    p = list_scheduling.place_m_etf(g, cl)
    check_legal(p, g, cl)
    assert p.metadata["estimated_step_time"] == pytest.approx(2.0)


def test_m_etf_pays_the_transfer_when_memory_forces_a_split():
    # a -> b, each keeps 600 MB; a GPU has 1 GB, so b cannot join a. b starts
    # after a (1 s) and the transfer (1 s): [2, 3].
    g = make_graph("ab", [("a", "b", GB)], output_bytes=[600 * MB] * 2)
    cl = make_cluster(2, memory=GB, bandwidth=1e9)
    s = list_scheduling.etf_schedule(g, cl, [1, 2])
    assert s.devices[0] != s.devices[1]
    np.testing.assert_allclose(s.start, [0, 2])
    assert s.makespan == pytest.approx(3.0)


def test_m_etf_sends_cpu_only_ops_to_the_cpu_and_keeps_colocation():
    g = make_graph(
        "abcd", [("a", "b", 8), ("b", "c", 8), ("a", "d", 8)], gpu=[1, NAN, 1, 1], colocation=["k", "", "", "k"]
    )
    cl = make_cluster(2)
    p = list_scheduling.place_m_etf(g, cl)
    check_legal(p, g, cl)
    assert p.devices[1] == 0 and set(np.flatnonzero(p.devices == 0)) == {1}


def test_m_topo_fills_gpus_in_order_within_memory():
    # Shares: 2 s of compute per GPU. a (600 MB) fills GPU 0's memory enough
    # that b (600 MB) must move on to GPU 1; c and d follow on GPU 1.
    g = make_graph(
        "abcd", [("a", "b"), ("b", "c"), ("c", "d")], persistent_bytes=[600 * MB, 600 * MB, 100 * MB, 100 * MB]
    )
    cl = make_cluster(2, memory=GB)
    p = list_scheduling.place_m_topo(g, cl)
    assert list(p.devices) == [1, 2, 2, 2]
    # Without the memory limit the compute shares split the chain in halves.
    g2 = make_graph("abcd", [("a", "b"), ("b", "c"), ("c", "d")])
    assert list(list_scheduling.place_m_topo(g2, cl).devices) == [1, 1, 2, 2]


def test_m_topo_never_overfills_when_there_is_room():
    ops = [f"o{i}" for i in range(12)]
    g = make_graph(ops, [(ops[i], ops[i + 1], 1) for i in range(11)], persistent_bytes=[150 * MB] * 12)
    cl = make_cluster(3, memory=GB)
    dev = np.asarray(list_scheduling.place_m_topo(g, cl).devices)
    for d in (1, 2, 3):
        assert np.sum(dev == d) * 150 * MB <= GB


def test_sct_lp_picks_the_heavy_child_as_favourite():
    # a -> b carries 10 s of transfer, a -> c 0.1 s: b is a's favourite child.
    g = make_graph("abc", [("a", "b", 10 * GB), ("a", "c", GB // 10)])
    cl = make_cluster(2, bandwidth=1e9)
    fav, how = sct.favourites(g, cl, [1, 2])
    assert how == "lp"
    assert list(fav) == [1, -1, -1]
    fav, how = sct.favourites(g, cl, [1, 2], lp_max_vars=0)
    assert how == "greedy" and list(fav) == [1, -1, -1]


def test_m_sct_is_legal_and_keeps_favourites_together():
    g = make_graph(
        "abcde",
        [("a", "b", 10 * GB), ("a", "c", 1), ("c", "d", 1), ("b", "e", 1), ("d", "e", 1)],
        gpu=[1, 1, 1, 1, NAN],
    )
    cl = make_cluster(2, bandwidth=1e9)
    p = sct.place(g, cl)
    check_legal(p, g, cl)
    assert p.devices[0] == p.devices[1]
    assert p.devices[4] == 0
    assert p.metadata["favourite"] == "lp"


def test_list_schedulers_without_a_gpu_schedule_on_every_device():
    """Two independent 10 s ops on two CPUs and no GPU: each CPU takes one (targets: every device)."""
    g = make_graph("ab", [])
    cpus = cluster_lib.make("cpus", [Device(f"/device:CPU:{i}", "CPU", GB) for i in range(2)], bandwidth=1e9)
    for f in (list_scheduling.place_m_topo, list_scheduling.place_m_etf, sct.place):
        assert sorted(f(g, cpus).devices.tolist()) == [0, 1], f
        assert list(f(make_graph("ab", [("a", "b", 1)]), make_cluster(0), use_cpu=True).devices) == [0, 0]


def test_m_etf_placement_measures_as_scheduled():
    from placer.measure import simulator

    g = make_graph(["a1", "a2", "b1", "b2"], [("a1", "a2", GB), ("b1", "b2", GB)])
    cl = make_cluster(2, memory=10 * GB, bandwidth=1e9)
    p = list_scheduling.place_m_etf(g, cl)
    (m,) = simulator.Simulator(g, cl).measure([p])
    assert m.ok and m.step_time == pytest.approx(2.0)
