import numpy as np

from baselines import mincut, scotch
from placer.core import cluster as cluster_lib
from placer.core.cluster import Device
from tests.baselines.helpers import check_legal, make_cluster, make_graph

NAN = float("nan")
HEAVY, LIGHT = 10**8, 10


def chain4(ab: int, bc: int, cd: int):
    return make_graph("abcd", [("a", "b", ab), ("b", "c", bc), ("c", "d", cd)])


def test_heavy_edges_decide_which_ops_stay_together():
    cl = make_cluster(2)
    # Heavy a-b and c-d, light b-c: cut b-c.
    d = mincut.place(chain4(HEAVY, LIGHT, HEAVY), cl, seed=0).devices
    assert d[0] == d[1] and d[2] == d[3] and d[0] != d[2]
    # Light a-b and c-d, heavy b-c: b and c together, a and d together.
    d = mincut.place(chain4(LIGHT, HEAVY, LIGHT), cl, seed=0).devices
    assert d[1] == d[2] and d[0] == d[3] and d[0] != d[1]


def test_two_heavy_ops_with_a_light_edge_are_split():
    g = make_graph("ab", [("a", "b", LIGHT)], gpu=[100.0, 100.0])
    d = mincut.place(g, make_cluster(2), seed=0).devices
    assert set(d) == {1, 2}


def test_mincut_never_uses_the_cpu_except_for_cpu_only_ops():
    rng = np.random.default_rng(0)
    ops = [f"o{i}" for i in range(30)]
    edges = [(ops[i], ops[j], int(rng.integers(1, 1000))) for i in range(30) for j in range(i + 1, min(30, i + 3))]
    gpu = np.ones(30)
    gpu[[4, 17]] = NAN
    g = make_graph(ops, edges, gpu=gpu, colocation=["k" if i in (3, 4) else "" for i in range(30)])
    cl = make_cluster(3)
    p = mincut.place(g, cl, seed=0)
    check_legal(p, g, cl)
    assert set(np.flatnonzero(p.devices == 0)) == {3, 4, 17}


def test_scotch_uses_the_fast_devices_and_is_deterministic():
    ops = [f"o{i}" for i in range(40)]
    edges = [(ops[i], ops[i + 1], 100) for i in range(39)]
    g = make_graph(ops, edges, cpu=np.full(40, 1000.0), gpu=np.ones(40))
    cl = make_cluster(2)
    p = scotch.place(g, cl, seed=3)
    check_legal(p, g, cl)
    # The CPU is 1000x slower on these ops: Scotch gives it (almost) nothing.
    assert np.sum(p.devices == 0) <= 1 and set(p.devices) >= {1, 2}
    np.testing.assert_array_equal(p.devices, scotch.place(g, cl, seed=3).devices)
    assert p.metadata["method"] == "scotch"


def test_scotch_weighs_processors_by_speed_on_uneven_links():
    # GPU 2 is twice as fast; GPU 0 <-> GPU 1 is a slow link (decomposition-defined target).
    data = {
        "name": "uneven",
        "devices": [
            {"name": f"/device:GPU:{i}", "type": "GPU", "memory_bytes": 10**9, "speed": 2.0 if i == 2 else 1.0}
            for i in range(3)
        ],
        "links": {
            "default": {"bandwidth": 1e10},
            "pairs": [{"src": "/device:GPU:0", "dst": "/device:GPU:1", "bandwidth": 1e8}],
        },
    }
    from placer.core.cluster import from_json

    cl = from_json(data)
    ops = [f"o{i}" for i in range(80)]
    g = make_graph(ops, [(ops[i], ops[i + 1], 10) for i in range(79)])
    counts = np.bincount(scotch.place(g, cl, seed=0).devices, minlength=3)
    assert counts[2] > counts[0] and counts[2] > counts[1]
    assert counts.sum() == 80


def test_mincut_without_a_gpu_maps_onto_every_device():
    """Four CPUs and no GPU: MinCut's targets are every device, so it maps as Scotch does."""
    cpus = cluster_lib.make("cpus", [Device(f"/device:CPU:{i}", "CPU", 10**10) for i in range(4)], bandwidth=1e9)
    ops = [f"o{i}" for i in range(40)]
    g = make_graph(ops, [(ops[i], ops[i + 1], 10) for i in range(39)])
    np.testing.assert_array_equal(mincut.place(g, cpus, seed=0).devices, scotch.place(g, cpus, seed=0).devices)
