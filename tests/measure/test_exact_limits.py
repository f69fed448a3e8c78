"""The exact placer's limits: a model too large is refused with its size, no solution leaves the bound alone."""

import numpy as np
import pytest

from placer.core import cluster as cl
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
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


def test_the_cuts_count_a_join_and_a_fork_that_must_share_a_device_or_pay_a_transfer():
    # a -> j and b -> j (a fork s -> x, s -> y alike), 1 s ops, 1 GB edges (1 s over the link). The critical
    # path is 2 s; but j waits for a and b one after another on its GPU (2 s) or for a transfer (1 + 1 s),
    # so it starts at 2 s at the earliest: 3 s, the optimum (a, j on one GPU, b on the other). With no
    # time to search, that is the proven bound.
    for name, edges in (("join", [("a", "j"), ("b", "j")]), ("fork", [("j", "a"), ("j", "b")])):
        g = OpGraph.create(
            name, ["a", "b", "j"], ["T"] * 3, [(s, d, 10**9) for s, d in edges],
            device_types=("GPU",), compute_cost=np.ones((3, 1)),
        )  # fmt: skip
        r = exact.solve(g, two_gpus(), time_limit=0.0)
        assert r.proven_bound == pytest.approx(3.0), name
        assert exact.solve(g, two_gpus(), time_limit=5.0, workers=1).step_time == pytest.approx(3.0), name
