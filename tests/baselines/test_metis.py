import numpy as np

from baselines import metis
from tests.baselines.helpers import check_legal, make_cluster, make_graph

NAN = float("nan")


def test_metis_cuts_the_light_edge():
    # Two heavy-edged triangles joined by one light edge: two parts, one per GPU.
    edges = [
        ("a", "b", 10**6),
        ("b", "c", 10**6),
        ("a", "c", 10**6),
        ("d", "e", 10**6),
        ("e", "f", 10**6),
        ("d", "f", 10**6),
        ("c", "d", 1),
    ]
    g = make_graph("abcdef", edges)
    cl = make_cluster(2)
    p = metis.place(g, cl, seed=0)
    check_legal(p, g, cl)
    d = p.devices
    assert d[0] == d[1] == d[2] and d[3] == d[4] == d[5] and d[0] != d[3]
    assert set(d) == {1, 2}


def test_metis_legalises_and_is_deterministic():
    ops = [f"o{i}" for i in range(20)]
    g = make_graph(
        ops,
        [(ops[i], ops[i + 1], 5) for i in range(19)],
        gpu=[NAN if i == 7 else 1.0 for i in range(20)],
        colocation=["k" if i in (2, 15) else "" for i in range(20)],
    )
    cl = make_cluster(2)
    p = metis.place(g, cl, seed=1)
    check_legal(p, g, cl)
    assert p.devices[7] == 0 and set(np.flatnonzero(p.devices == 0)) == {7}
    np.testing.assert_array_equal(p.devices, metis.place(g, cl, seed=1).devices)


def test_metis_without_a_gpu_partitions_over_every_device():
    g = make_graph("ab", [("a", "b", 1)])
    assert list(metis.place(g, make_cluster(0)).devices) == [0, 0]
    assert list(metis.place(g, make_cluster(0), use_cpu=True).devices) == [0, 0]
