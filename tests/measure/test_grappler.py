"""GrapplerMeasurer on a tiny two-layer model: times, OOM, unsupported ops, colocation."""

import numpy as np
import pytest
import tensorflow as tf

from graphs import extract
from placer.core import cluster as cluster_lib
from placer.core.measurement import ERROR, OOM, UNSUPPORTED
from placer.core.placement import Placement
from placer.measure.grappler import TRANSFER_SCOPE, GrapplerMeasurer


@pytest.fixture(scope="module")
def model():
    g = tf.Graph()
    with g.as_default():
        x = tf.random.uniform([128, 256], name="x")
        w1 = tf.compat.v1.get_variable("w1", [256, 512])
        w2 = tf.compat.v1.get_variable("w2", [512, 256])
        h1 = tf.tanh(tf.matmul(x, w1, name="h1"))
        h2 = tf.matmul(h1, w2, name="h2")
        loss = tf.reduce_sum(tf.tanh(h2), name="loss")
        tf.strings.as_string(loss, name="s")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        tf.compat.v1.add_to_collection("train_op", train)
    return extract.metagraph_of(g), extract.extract(g, name="tiny")


def _cluster(gpu_memory=1 << 30):
    return cluster_lib.make(
        "t",
        [
            cluster_lib.Device("/device:CPU:0", "CPU", 1 << 30),
            cluster_lib.Device("/device:GPU:0", "GPU", gpu_memory),
            cluster_lib.Device("/device:GPU:1", "GPU", gpu_memory),
        ],
    )


def _on(graph, cluster, device_of):
    """Placement: string ops on the CPU, the rest by `device_of(name)`."""
    devs = [0 if t == "AsString" else device_of(n) for n, t in zip(graph.names, graph.types, strict=True)]
    return Placement.from_ops(graph, devs, cluster.device_names)


def test_positive_time_and_gpu_faster_than_cpu(model):
    mg, graph = model
    c = _cluster()
    m = GrapplerMeasurer(mg, graph, c)
    cpu, gpu = m.measure([_on(graph, c, lambda n: 0), _on(graph, c, lambda n: 1)])
    assert cpu.ok and gpu.ok
    assert 0 < gpu.step_time < cpu.step_time
    assert cpu.busy_time[0] > 0 and cpu.busy_time[1] == 0
    assert gpu.peak_memory[1] > 0
    # w1 + w2 are 2 x 512 KiB and live all step on GPU:0.
    assert gpu.peak_memory[1] >= 2 * 256 * 512 * 4
    assert gpu.bytes_moved == 4  # the CPU's string op reads the float32 loss
    assert cpu.bytes_moved == 0


def test_split_over_two_gpus_moves_bytes(model):
    mg, graph = model
    c = _cluster()
    m = GrapplerMeasurer(mg, graph, c)

    def second_layer(n):
        return 2 if ("w2" in n or "h2" in n or "loss" in n or "Tanh_1" in n) else 1

    (r,) = m.measure([_on(graph, c, second_layer)])
    assert r.ok and r.step_time > 0
    assert r.busy_time[1] > 0 and r.busy_time[2] > 0
    assert r.bytes_moved >= 128 * 512 * 4  # at least h1's activations cross once


def test_oom_when_device_memory_is_tiny(model):
    mg, graph = model
    c = _cluster(gpu_memory=1000)
    (r,) = GrapplerMeasurer(mg, graph, c).measure([_on(graph, c, lambda n: 1)])
    assert r.failure == OOM
    assert "/device:GPU:0" in r.message
    assert r.peak_memory[1] > 1000
    assert r.step_time == float("inf")


def test_unsupported_op_on_gpu(model):
    mg, graph = model
    c = _cluster()
    devs = np.ones(graph.num_ops, dtype=int)  # AsString too
    (r,) = GrapplerMeasurer(mg, graph, c).measure([Placement.from_ops(graph, devs, c.device_names)])
    assert r.failure == UNSUPPORTED
    assert "'s'" in r.message and "AsString" in r.message


def test_split_colocation_group_is_an_error(model):
    mg, graph = model
    c = _cluster()
    member = next(n for n, k in zip(graph.names, graph.colocation, strict=True) if k == "w1" and n != "w1")
    p = _on(graph, c, lambda n: 2 if n == member else 1)
    (r,) = GrapplerMeasurer(mg, graph, c).measure([p])
    assert r.failure == ERROR and "colocation" in r.message


def test_tiny_nmt_on_gpu_and_split():
    import models
    from configs import nmt

    m = models.build(nmt.get_config("tiny").model)
    graph = extract.extract(m.metagraph, name=m.name)
    c = _cluster()
    gpu_ok = extract.kernel_mask(graph, ["GPU"])[:, 0]
    one = np.where(gpu_ok, 1, 0)
    # second GPU for the decoder (ops and their gradients), keeping colocation groups whole
    dec = np.array(["decoder" in n for n in graph.names])
    for key in set(graph.colocation[dec]) - {""}:
        dec |= graph.colocation == key
    two = np.where(gpu_ok, np.where(dec, 2, 1), 0)
    r1, r2 = GrapplerMeasurer(m.metagraph, graph, c).measure(
        [Placement.from_ops(graph, one, c.device_names), Placement.from_ops(graph, two, c.device_names)]
    )
    assert r1.ok and r1.step_time > 0, r1.message
    assert r2.ok and r2.step_time > 0, r2.message
    assert r2.bytes_moved > r1.bytes_moved
    assert r2.busy_time[2] > 0


@pytest.mark.parametrize("bandwidth", [1e9, 1e10])
def test_transfer_costs_bytes_over_link_bandwidth(bandwidth):
    g = tf.Graph()
    with g.as_default():
        a = tf.random.uniform([1024, 1024], name="a")  # 4 MiB
        b = tf.reduce_sum(a, name="b")
        tf.compat.v1.add_to_collection("train_op", b.op)
    graph = extract.extract(g, name="xfer")
    c = cluster_lib.make(
        "t",
        [cluster_lib.Device("/device:GPU:0", "GPU", 1 << 30), cluster_lib.Device("/device:GPU:1", "GPU", 1 << 30)],
        bandwidth=bandwidth,
    )
    m = GrapplerMeasurer(extract.metagraph_of(g), graph, c)
    same, split = m.measure(
        [
            Placement.from_ops(graph, np.zeros(graph.num_ops, int), c.device_names),
            Placement.from_ops(graph, [1 if n == "b" else 0 for n in graph.names], c.device_names),
        ]
    )
    assert split.step_time - same.step_time == pytest.approx(4 * 1024 * 1024 / bandwidth, rel=1e-3)
    assert split.bytes_moved == 4 * 1024 * 1024 + 8  # a, and the int32[2] reduction axes
    # the received copy of a is live on GPU:1 while b reads it
    assert split.peak_memory[1] >= 4 * 1024 * 1024


def _reshape_model():
    """x [64,512,8] -> Reshape(x, const [-1, 4096]) -> MatMul with w [4096,4096] -> Sum; train_op = the Sum."""
    g = tf.Graph()
    with g.as_default():
        x = tf.random.uniform([64, 512, 8], name="x")
        r = tf.reshape(x, tf.constant([-1, 4096], name="shape"), name="r")
        w = tf.compat.v1.get_variable("w", [4096, 4096])
        tf.reduce_sum(tf.matmul(r, w, name="y"), name="s")
        tf.compat.v1.add_to_collection("train_op", g.get_operation_by_name("s"))
    graph = extract.extract(g, name="reshape")
    c = cluster_lib.make(
        "t",
        [cluster_lib.Device("/device:GPU:0", "GPU", 1 << 30), cluster_lib.Device("/device:GPU:1", "GPU", 1 << 30)],
    )
    one = Placement.from_ops(graph, np.ones(graph.num_ops, int), c.device_names)
    split = Placement.from_ops(graph, [0 if n == "shape" else 1 for n in graph.names], c.device_names)
    return extract.metagraph_of(g), graph, c, one, split


class _DataThroughTransfers(GrapplerMeasurer):
    """The old routing: consumers read the transfer's copy instead of the original tensor."""

    def placed(self, devices):
        mg = super().placed(devices)
        for node in mg.graph_def.node:
            waits = [i[1:] for i in node.input if i.startswith("^" + TRANSFER_SCOPE)]
            for w in waits:
                src, out = w[len(TRANSFER_SCOPE) + 1 :].rsplit("/", 2)[:2]
                for k, inp in enumerate(node.input):
                    if inp in (f"{src}:{out}", src if out == "0" else None):
                        node.input[k] = w
        return mg


def test_shape_tensor_from_another_device_keeps_the_matmul_cost():
    """A Reshape whose shape constant sits on another device: the MatMul after it keeps its cost.

    Routing the shape tensor through a transfer op hid its value from Grappler's
    shape inference, so the Reshape's first dimension became unknown and the
    64x4096 @ 4096x4096 MatMul (2.1 GFLOP) was costed as if it were far smaller.
    """
    mg, graph, c, one, split = _reshape_model()
    same, apart = GrapplerMeasurer(mg, graph, c).measure([one, split])
    assert same.ok and apart.ok
    # Everything but an 8-byte constant runs where it did: the step cannot get faster.
    assert apart.step_time >= same.step_time
    flops = 2 * 64 * 4096 * 4096
    assert same.step_time >= flops / 4368e9  # the MatMul alone at the K80's peak
    assert not apart.flagged, apart.flag


def test_guard_flags_ops_whose_cost_collapses():
    mg, graph, c, one, split = _reshape_model()
    same, apart = _DataThroughTransfers(mg, graph, c).measure([one, split])
    assert not same.flagged
    assert apart.step_time < same.step_time  # the collapse the guard is there for
    assert apart.flagged and "'y' (MatMul)" in apart.flag and "/device:GPU:1" in apart.flag
    (lenient,) = _DataThroughTransfers(mg, graph, c, cost_tolerance=0.99).measure([split])
    assert not lenient.flagged
