"""Traced steps and per-op medians: graphs.costs.op_samples / medians_less_floor, SessionMeasurer(trace_steps)."""

import numpy as np
import pytest
import tensorflow as tf

from graphs import costs, extract, local_cluster
from placer.core.placement import Placement
from placer.measure.session import SessionMeasurer


def _step(windows_ns: dict[str, int]) -> tf.compat.v1.RunMetadata:
    """A RunMetadata with one CPU node_stats entry per op, kernel window `windows_ns[op]` nanoseconds."""
    md = tf.compat.v1.RunMetadata()
    dev = md.step_stats.dev_stats.add(device="/job:localhost/replica:0/task:0/device:CPU:0")
    for name, ns in windows_ns.items():
        dev.node_stats.add(node_name=name, op_start_rel_nanos=1000, op_end_rel_nanos=1000 + ns)
    return md


def test_median_of_the_kept_steps_less_the_floor():
    steps = [
        _step({"a": 900, "b": 300, "c": 100}),  # warm-up, dropped
        _step({"a": 500, "b": 400, "c": 150, "other": 5000}),
        _step({"a": 700, "b": 200, "c": 100}),
    ]
    samples = costs.op_samples(iter(steps), "CPU", skip=1)
    assert samples["a"] == pytest.approx([500e-9, 700e-9])
    index = {"a": 0, "b": 1, "c": 2, "d": 3}
    got = costs.medians_less_floor(samples, index, floor=250e-9)
    # a: median(500, 700) = 600 ns - 250 = 350 ns; b: median(400, 200) = 300 - 250 = 50 ns;
    # c: median(150, 100) = 125 < 250, clamped to 0; d never traced: 0; "other" is not in the graph.
    assert got == pytest.approx([350e-9, 50e-9, 0.0, 0.0])


def _two_op_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant([1.0, 2.0], name="x")
        y = tf.raw_ops.Neg(x=x, name="y")
        tf.compat.v1.add_to_collection("train_op", tf.group(y, name="train"))
    return g


@pytest.mark.parametrize("trace_steps", [1, 3])
def test_session_measurer_keeps_each_traced_step(trace_steps):
    g = _two_op_graph()
    graph = extract.extract(g, name="two")
    cluster = local_cluster.discover(1)
    m = SessionMeasurer(
        extract.metagraph_of(g), graph, cluster, warmup=1, steps=2, rewrite=False, trace_steps=trace_steps
    )
    placement = Placement.from_ops(graph, np.zeros(graph.num_ops, dtype=np.int64), cluster.device_names)
    (r,) = m.measure([placement])
    assert r.ok
    assert len(m.last_traces) == trace_steps
    assert m.last_run_metadata is m.last_traces[-1]
    # Every traced step records the Neg op, so the median runs over all of them.
    samples = costs.op_samples(m.last_traces, "CPU")
    assert len(samples["y"]) == trace_steps
