"""The exact placer's limits: a model too large is refused with its size, no solution leaves the bound alone."""

import pytest

from placer.core import cluster as cl
from placer.core.errors import InputError
from placer.measure import exact
from tests.hand_graphs import chains


def two_gpus():
    return cl.make("g", [cl.Device(f"/device:GPU:{i}", "GPU", 2**34) for i in range(2)], bandwidth=1e9)


def test_a_model_too_large_is_refused_before_it_is_built_with_its_size():
    # 3 ops on 2 devices: 3 x 2 x (2 + 2) unit terms + 2 edges x 3 + 2 transfer terms x 4 = 38 elements.
    with pytest.raises(InputError, match=r"about 38 elements .* above the limit of 10"):
        exact.solve(chains(1, 3, 10**6), two_gpus(), max_model_size=10)


def test_no_solution_in_the_time_limit_leaves_the_proven_bound():
    # A 60-op chain of 1 s ops, no hint, and no time to search: no placement, and the bound is still the
    # cuts' (the critical path, 60 s), printed alone.
    r = exact.solve(chains(1, 60, 10**6), two_gpus(), time_limit=0.0)
    assert r.devices is None and r.status == "unknown"
    assert r.proven_bound == pytest.approx(60.0) and r.step_time == float("inf")
    assert r.describe().startswith("no solution in ") and "proven bound 60 s (op level)" in r.describe()


def test_a_hint_of_another_length_is_an_input_error():
    with pytest.raises(InputError, match="one device of 'g' per op"):
        exact.solve(chains(1, 3, 10**6), two_gpus(), hint=[0, 1])


def test_without_ortools_the_error_names_the_extra(monkeypatch):
    monkeypatch.setattr(exact, "cp_model", None)
    with pytest.raises(InputError, match=r"pip install -e '\.\[exact\]'"):
        exact.solve(chains(1, 3, 10**6), two_gpus())
