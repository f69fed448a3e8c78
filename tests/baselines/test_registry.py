import numpy as np
import pytest

from baselines import registry
from placer.core.errors import InputError
from placer.measure.simulator import Simulator
from tests.baselines.helpers import check_legal, make_cluster, make_graph

NAMES = {"single_cpu", "single_gpu", "tf_default", "scotch", "mincut", "metis", "expert", "m_topo", "m_etf", "m_sct"}
NAMES |= {"random_search", "local_search"}


def test_registry_lists_every_baseline():
    assert set(registry.names()) == NAMES
    assert set(registry.METHODS) == NAMES


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(InputError) as e:
        registry.get("random")
    assert "'random'" in str(e.value)
    for name in NAMES:
        assert name in str(e.value)


@pytest.mark.parametrize("name", sorted(NAMES - {"expert"}))
def test_every_baseline_is_legal_and_tagged(name):
    nan = float("nan")
    ops = list("abcdef")
    edges = [("a", "b", 100), ("a", "c", 100), ("b", "d", 50), ("c", "e", 50), ("d", "f", 10), ("e", "f", 10)]
    g = make_graph(ops, edges, gpu=[1, 1, nan, 1, 1, 1], colocation=["", "k", "", "", "k", ""], output_bytes=[10] * 6)
    cost = g.compute_cost.copy()
    cl = make_cluster(2)
    extra = {"measurer": Simulator(g, cl), "budget": 8} if name in registry.MEASURED else {}
    p = registry.get(name)(g, cl, seed=0, **extra)
    check_legal(p, g, cl)
    assert p.metadata["method"] == name
    assert p.fingerprint == g.fingerprint()
    np.testing.assert_array_equal(g.compute_cost, cost)
