"""Only what a training step runs is costed: Grappler-costed and profiled graphs mark the same ops (the train
op's fan-in) in the step, and on one device the simulated step time is the sum over those ops alone.

The graph: h = x @ w, loss = sum(tanh(h)), one gradient-descent update of w, and beside the step a
string of h nobody fetches, the variable's initialiser and its is-initialised check. Worked out by hand
from the ops' inputs: the step runs x's generator, w's handle and the read h takes, h, tanh, the
gradient ops and the update; it never runs `s`, `w/Assign`, `w/Initializer/*`, `init`,
`w/IsInitialized/*`, nor the loss's own sum (its gradient starts from a fill of ones and needs no value of
it).
"""

import numpy as np
import pytest
import tensorflow as tf

from graphs import costs, extract
from placer.core import cluster as cluster_lib
from placer.measure.simulator import simulate

OUTSIDE = ("s", "w/Assign", "w/Initializer/random_uniform", "init", "w/IsInitialized/VarIsInitializedOp", "loss")
INSIDE = ("x/RandomUniform", "w", "h/ReadVariableOp", "h", "Tanh", "gradients/h_grad/MatMul_1", "train")


@pytest.fixture(scope="module")
def model():
    g = tf.Graph()
    with g.as_default():
        x = tf.random.uniform([8, 16], name="x")
        w = tf.compat.v1.get_variable("w", [16, 32], use_resource=True)
        h = tf.matmul(x, w, name="h")
        tf.strings.as_string(h, name="s")
        loss = tf.reduce_sum(tf.tanh(h), name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        tf.compat.v1.add_to_collection("train_op", train)
        tf.compat.v1.global_variables_initializer()
    return extract.metagraph_of(g), extract.extract(g, name="tiny")


DISPATCH = 5e-6  # seconds per op run (a cluster not named "local": no calibration replaces it)


def one_cpu():
    return cluster_lib.make("cpu", [cluster_lib.Device("/device:CPU:0", "CPU", 1 << 30, dispatch=DISPATCH)])


def test_grappler_and_profiled_costs_mark_the_same_step(model):
    mg, graph = model
    grappler = costs.grappler_costs(mg, graph, one_cpu())
    profiled = costs.profiled_costs(mg, graph, steps=1, warmup=1, device_types=("CPU",))
    i = graph.index()
    for g in (grappler, profiled):
        assert g.in_step is not None
        assert not any(g.in_step[i[n]] for n in OUTSIDE)
        assert all(g.in_step[i[n]] for n in INSIDE)
        assert (g.cost_for("CPU")[~g.in_step] == 0).all()
    np.testing.assert_array_equal(grappler.in_step, profiled.in_step)
    # What the session runs: the same fan-in the placed model's verification reads.
    assert {n for n, s in zip(graph.names, grappler.in_step, strict=True) if s} == set(extract.step_fan_in(mg))

    # One device runs everything in turn: the step is the sum of the step's ops' kernels and dispatches.
    for g in (grappler, profiled):
        r = simulate(g, one_cpu(), np.zeros(graph.num_ops, np.int64))
        n_step = int(g.in_step.sum())
        assert 0 < n_step <= graph.num_ops - len(OUTSIDE)
        expected = float(g.cost_for("CPU")[g.in_step].sum()) + n_step * DISPATCH
        assert r.step_time == pytest.approx(expected, rel=1e-12)
        # Every op charged, as before: the ops outside the step would add their dispatches.
        assert simulate(g.with_step_ops(None), one_cpu(), np.zeros(graph.num_ops, np.int64)).step_time == (
            pytest.approx(expected + (graph.num_ops - n_step) * DISPATCH, rel=1e-12)
        )
