"""Random mutations of the good graph and cluster (bench/testing/badinput/mutate.py): none crashes a reader,
and every one a reader accepts is harmless: the simulator measures each placement of the chain on it to a
finite step time or a named failure."""

import itertools
import math

import numpy as np
import pytest

from bench.testing.badinput import inputs, mutate
from graphs.pipeline import require_costs
from placer.core.errors import InputError
from placer.measure.simulator import Simulator

SEEDS = (7, 50, 2026)  # 2026 is the fresh seed: 7 graph and 9 cluster mutations of its 90 are accepted


def _harmless(m: mutate.Mutation) -> None:
    graph, cluster = mutate.read(m, require_costs)
    batch = np.array(list(itertools.product(range(cluster.num_devices), repeat=graph.num_ops)), dtype=np.int64)
    results = Simulator(graph, cluster).measure_devices(batch)
    assert len(results) == len(batch)
    for devices, r in zip(batch, results, strict=True):
        if r.ok:
            assert math.isfinite(r.step_time) and r.step_time >= 0, (m.what, devices, r)
        else:
            assert r.failure, (m.what, devices, r)  # a named failure, e.g. "unsupported"
    assert any(r.ok for r in results), m.what  # some placement of an accepted file runs


@pytest.mark.parametrize("seed", SEEDS)
def test_every_mutation_is_refused_or_harmless(seed):
    outcomes = []
    for m in mutate.corpus(seed):
        outcomes.append(mutate.classify(m, require_costs))
        assert outcomes[-1] in ("refused", "accepted"), (m.what, outcomes[-1])  # no crash
        if outcomes[-1] == "accepted":
            _harmless(m)
    assert outcomes.count("refused") > 60  # most of the 90 break a checked field


def test_the_same_seed_gives_the_same_mutations():
    assert [m.what for m in mutate.corpus(2026, 10)] == [m.what for m in mutate.corpus(2026, 10)]
    assert [m.what for m in mutate.corpus(2026, 10)] != [m.what for m in mutate.corpus(2027, 10)]


@pytest.mark.parametrize("cost", [{}, None])
def test_an_op_no_device_can_run_is_refused(cost):
    g = inputs.graph_with("ops.1.cost", cost if cost is not None else {})
    if cost is None:
        del g["ops"][1]["cost"]
    m = mutate.Mutation("graph", "op b runs nowhere", g)
    with pytest.raises(InputError) as e:
        mutate.read(m)
    assert str(e.value) == (
        "g.json: ops[1].cost: op 'b' has a cost for none of CPU, GPU, so no device could run it; give its cost on at "
        "least one"
    )  # accepted before: every placement then failed as "unsupported"
