"""Generated training graphs: deterministic, of the documented shapes, with costs for CPU and GPU."""

import numpy as np
import pytest

from placer.core import generated
from placer.core.errors import InputError


def test_same_seed_same_graph_other_seed_other_graph():
    a = generated.generate("layered", 30, 1)
    assert a.fingerprint() == generated.generate("layered", 30, 1).fingerprint()
    assert a.fingerprint() != generated.generate("layered", 30, 2).fingerprint()
    assert a.name == "layered-30-s1" and a.num_ops == 30


@pytest.mark.parametrize("family", sorted(generated.FAMILIES))
def test_costs_like_real_graphs(family):
    g = generated.generate(family, 40, 0)
    assert g.device_types == ("CPU", "GPU")
    cpu, gpu = g.cost_for("CPU"), g.cost_for("GPU")
    assert np.all(gpu > 0) and np.all(cpu > 0)
    heavy = np.isin(g.types, generated.HEAVY_TYPES)
    # Heavy ops are slower on the CPU by 2x to 20x; light ones within 0.7x to 1.5x.
    assert np.all(cpu[heavy] >= 2 * gpu[heavy] - 1e-12) and np.all(cpu[~heavy] <= 1.5 * gpu[~heavy] + 1e-12)
    assert np.all(g.edge_bytes == g.output_bytes[g.edge_src])


def test_fanin_joins_every_branch_into_one_op():
    g = generated.generate("fanin", 40, 3)
    indeg = np.bincount(g.edge_dst, minlength=g.num_ops)
    join = int(np.argmax(indeg))
    assert indeg[join] >= 3  # at least 3 branches meet there
    # After the join, a chain: every later op has exactly one producer, the op before it.
    assert all(indeg[i] == 1 for i in range(join + 1, g.num_ops))


def test_chain_ops_have_at_most_two_producers():
    g = generated.generate("chain", 40, 0)
    assert np.bincount(g.edge_dst, minlength=g.num_ops).max() <= 2


def test_bad_specs_are_one_line_errors():
    with pytest.raises(InputError, match="unknown generated graph family 'tree'"):
        generated.generate("tree", 30, 0)
    with pytest.raises(InputError, match="at least 8"):
        generated.generate("chain", 3, 0)
    with pytest.raises(InputError, match="expected gen:FAMILY:OPS:SEED"):
        generated.parse_spec("gen:chain:x")
    assert generated.parse_spec("gen:chain:20:4").name == "chain-20-s4"
