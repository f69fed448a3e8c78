import numpy as np
import pytest

from baselines import common, single
from placer.core.errors import InputError
from tests.baselines.helpers import check_legal, make_cluster, make_graph

NAN = float("nan")


def test_single_cpu_puts_everything_on_the_cpu():
    g = make_graph("abc", [("a", "b", 8), ("b", "c", 8)])
    cl = make_cluster(2)
    p = single.place_single_cpu(g, cl)
    assert list(p.devices) == [0, 0, 0]
    assert p.metadata["method"] == "single_cpu"


def test_single_gpu_sends_cpu_only_ops_to_the_cpu():
    g = make_graph("abc", [("a", "b", 8), ("b", "c", 8)], gpu=[1.0, NAN, 1.0])
    cl = make_cluster(2)
    p = single.place_single_gpu(g, cl)
    assert list(p.devices) == [1, 0, 1]
    check_legal(p, g, cl)


def test_tf_default_moves_a_colocated_set_to_the_cpu():
    # b has no GPU kernel and shares a key with c: both go to the CPU (a has
    # two consumers, so it is no generator and stays on the GPU).
    g = make_graph(
        "abcd", [("a", "b"), ("a", "d"), ("b", "c"), ("c", "d")], gpu=[1, NAN, 1, 1], colocation=["", "k", "k", ""]
    )
    cl = make_cluster(1)
    p = single.place_tf_default(g, cl)
    assert list(p.devices) == [1, 0, 0, 1]
    check_legal(p, g, cl)


def test_tf_default_generator_follows_its_consumer():
    # a is a generator (no input, one consumer); its consumer b is CPU-only.
    g = make_graph("abc", [("a", "b"), ("b", "c")], gpu=[1, NAN, 1])
    cl = make_cluster(1)
    assert list(single.place_single_gpu(g, cl).devices) == [1, 0, 1]
    assert list(single.place_tf_default(g, cl).devices) == [0, 0, 1]


def test_gpu_baselines_reject_a_cluster_without_gpu():
    g = make_graph("ab", [("a", "b")])
    cl = make_cluster(0)
    for f in (single.place_single_gpu, single.place_tf_default):
        with pytest.raises(InputError, match="no GPU"):
            f(g, cl)


def test_colocation_goes_with_the_majority_of_compute():
    g = make_graph("abc", [("a", "b"), ("b", "c")], gpu=[1, 5, 1], colocation=["k", "k", "k"])
    cl = make_cluster(2)
    # b (5 s) on GPU 1 outweighs a and c (1 s each) on GPU 0.
    assert list(common.legalize(g, cl, np.array([1, 2, 1]))) == [2, 2, 2]


def test_input_is_not_mutated():
    g = make_graph("ab", [("a", "b", 4)], gpu=[1, NAN])
    before = g.compute_cost.copy()
    single.place_tf_default(g, make_cluster(1))
    np.testing.assert_array_equal(g.compute_cost, before)
