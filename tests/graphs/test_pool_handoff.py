"""The hand-off calibration: a relay whose every link goes to the inter-op pool, timed under 1 and P threads."""

import math

from graphs import costs_calibrate


def test_relay_feeds_each_link_input_to_a_cheap_side_op():
    g, _ = costs_calibrate.relay_graph(3)
    links = [op for op in g.get_operations() if op.type == "AddV2"]
    sides = [op for op in g.get_operations() if op.type == "Identity"]
    assert len(links) == 3 and len(sides) == 3
    # Link i reads link i-1 (x0 for the first), and so does side i: both are ready when link i-1 ends.
    for i, (link, side) in enumerate(zip(links, sides, strict=True)):
        src = "x0" if i == 0 else f"link{i - 1}"
        assert {t.op.name for t in link.inputs} == {src}
        assert side.inputs[0].op.name == src


def test_pool_config_gives_the_session_its_own_pool():
    c = costs_calibrate.pool_config(2)
    assert c.use_per_session_threads and c.inter_op_parallelism_threads == 2
    assert costs_calibrate.pool_config(0).inter_op_parallelism_threads == 1


def test_pool_handoff_is_seconds_per_link():
    h, rounds = costs_calibrate.pool_handoff(2, links=40, steps=5, rounds=2)
    assert len(rounds) == 2 and all(math.isfinite(r) for r in rounds)
    # Hundreds of ns at most per hand-off on any CPU TF runs on; a unit slip (us or ns) falls outside.
    assert 0.0 <= h < 1e-4 and all(abs(r) < 1e-4 for r in rounds)
