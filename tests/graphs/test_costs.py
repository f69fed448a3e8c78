"""Per-op costs from Grappler's cost model and from profiling on this machine."""

import numpy as np
import pytest
import tensorflow as tf

from graphs import costs, extract
from placer.core import cluster as cluster_lib

M, K, N = 256, 512, 1024  # h = x[M, K] @ w[K, N]


def _model():
    g = tf.Graph()
    with g.as_default():
        x = tf.random.uniform([M, K], name="x")
        w = tf.compat.v1.get_variable("w", [K, N])
        h = tf.matmul(x, w, name="h")
        tf.strings.as_string(h, name="s")  # not in the step: no kernel on GPU, cost 0 on CPU
        loss = tf.reduce_sum(tf.tanh(h), name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        tf.compat.v1.add_to_collection("train_op", train)
    return extract.metagraph_of(g), extract.extract(g, name="tiny")


@pytest.fixture(scope="module")
def model():
    return _model()


def _cluster():
    return cluster_lib.make(
        "t",
        [cluster_lib.Device("/device:CPU:0", "CPU", 1 << 30), cluster_lib.Device("/device:GPU:0", "GPU", 1 << 30)],
    )


def test_grappler_matmul_cost_by_hand(model):
    mg, graph = model
    g = costs.grappler_costs(mg, graph, _cluster())
    assert g.device_types == ("CPU", "GPU")
    h = graph.index()["h"]
    flops = 2 * M * K * N
    moved = 4 * (M * K + K * N + M * N)  # both inputs read, output written
    # Reference devices: GPU 4368 GFLOPS, 240 GB/s; CPU 1324.8 GFLOPS, 68 GB/s.
    gpu = flops / 4368e9 + moved / 240e9  # 61.5 us + 15.3 us
    cpu = flops / 1324.8e9 + moved / 68e9  # 202.6 us + 54.0 us
    assert g.cost_for("GPU")[h] == pytest.approx(gpu, rel=1e-3)
    assert g.cost_for("CPU")[h] == pytest.approx(cpu, rel=1e-3)
    assert g.cost_for("CPU")[h] > g.cost_for("GPU")[h]


def test_grappler_nan_for_missing_kernels_and_zero_outside_step(model):
    mg, graph = model
    g = costs.grappler_costs(mg, graph, _cluster())
    i = graph.index()
    assert np.isnan(g.cost_for("GPU")[i["s"]])
    assert g.cost_for("CPU")[i["s"]] == 0.0  # not fetched by the train step
    assert g.cost_for("CPU")[i["w/Assign"]] == 0.0  # initialiser: not per step
    assert np.isnan(g.compute_cost).sum() == 1
    assert (np.nan_to_num(g.compute_cost) >= 0).all()


def test_speed_and_explicit_peak_do_not_change_reference_costs(model):
    mg, graph = model
    fast = cluster_lib.make("f", [cluster_lib.Device("/device:GPU:0", "GPU", 1 << 30, speed=2.0)])
    peak = cluster_lib.make(
        "p",
        [cluster_lib.Device("/device:GPU:0", "GPU", 1 << 30, speed=2.0, peak_gflops=8736.0, memory_bandwidth=480e9)],
    )
    h = graph.index()["h"]
    a = costs.grappler_costs(mg, graph, fast).cost_for("GPU")[h]
    b = costs.grappler_costs(mg, graph, peak).cost_for("GPU")[h]
    assert a == pytest.approx(b, rel=1e-3)
    assert a == pytest.approx(2 * M * K * N / 4368e9 + 4 * (M * K + K * N + M * N) / 240e9, rel=1e-3)


def test_sub_microsecond_ops_get_a_cost():
    g = tf.Graph()
    with g.as_default():
        x = tf.random.uniform([4, 24], name="x")
        w = tf.random.uniform([24, 64], name="w")
        tf.matmul(x, w, name="small")
    graph = extract.extract(g, name="small")
    c = costs.grappler_costs(extract.metagraph_of(g), graph, _cluster()).cost_for("GPU")
    # 2 * 4 * 24 * 64 flops / 4368 GFLOPS + (96 + 1536 + 256) * 4 bytes / 240 GB/s = 2.8 ns + 31.5 ns
    expected = 2 * 4 * 24 * 64 / 4368e9 + (96 + 1536 + 256) * 4 / 240e9
    assert c[graph.index()["small"]] == pytest.approx(expected, abs=2e-9)


def test_tiny_nmt_has_costs(tiny_model, extracted_graph):
    m = tiny_model("configs/nmt.py:tiny")
    graph = extracted_graph("configs/nmt.py:tiny")
    g = costs.grappler_costs(m.metagraph, graph, _cluster())
    matmuls = graph.types == "MatMul"
    assert matmuls.any()
    assert (g.cost_for("GPU")[matmuls] > 0).all() and (g.cost_for("CPU")[matmuls] > 0).all()
    assert np.nansum(g.cost_for("CPU")) > np.nansum(g.cost_for("GPU"))


def test_profiled_costs_positive_for_work(model):
    mg, graph = model
    g = costs.profiled_costs(mg, graph, steps=2, warmup=1, device_types=("CPU",))
    i = graph.index()
    c = g.cost_for("CPU")
    for op in ("h", "gradients/h_grad/MatMul_1", "Tanh"):
        assert c[i[op]] > 0, op
    assert c[i["s"]] == 0.0 and c[i["w/Assign"]] == 0.0  # never run by a step
    assert not np.isnan(c).any()
