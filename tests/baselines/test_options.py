"""Every registered baseline refuses an option it does not take, in one line, before placing."""

import pytest

from baselines import registry
from placer.core.errors import InputError
from tests.baselines.helpers import GB, make_cluster, make_graph


@pytest.mark.parametrize("name", registry.names())
def test_unknown_option_is_refused_through_the_registry(name):
    g = make_graph(["a", "b"], [("a", "b", GB)])
    with pytest.raises(InputError, match=rf"^{name} placement: unknown option 'colour'") as e:
        registry.place(name, g, make_cluster(2), seed=0, colour="red")
    assert "\n" not in str(e.value)


def test_known_options_still_work():
    g = make_graph(["a", "b"], [("a", "b", GB)])
    assert registry.place("m_topo", g, make_cluster(2), use_cpu=True).metadata["method"] == "m_topo"
    assert registry.place("scotch", g, make_cluster(2), seed=0, strategy=None).metadata["method"] == "scotch"
