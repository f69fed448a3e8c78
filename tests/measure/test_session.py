"""SessionMeasurer on 2 logical CPU devices, run in a fresh process.

Logical devices must be set before TF initialises its devices, so the checks
run in a subprocess that configures them first and prints JSON results.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    from graphs import local_cluster
    local_cluster.configure_logical_cpus(2)
    import tensorflow as tf
    from graphs import extract
    from placer.core import cluster as cluster_lib
    from graphs.tf_session import ran_on
    from placer.measure.session import SessionMeasurer
    from placer.core.placement import Placement

    g = tf.Graph()
    with g.as_default():
        x = tf.random.uniform([64, 128], name="x")
        w = tf.compat.v1.get_variable("w", [128, 256])
        h = tf.matmul(x, w, name="h")
        loss = tf.reduce_sum(tf.tanh(h, name="act"), name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        tf.compat.v1.add_to_collection("train_op", train)
    graph = extract.extract(g, name="tiny")
    mg = extract.metagraph_of(g)
    cluster = local_cluster.discover()
    second = {"h", "act", "loss", "gradients/act_grad/TanhGrad"}
    devs = np.array([1 if n in second else 0 for n in graph.names])
    m = SessionMeasurer(mg, graph, cluster, warmup=1, steps=3, rewrite=False)
    (r,) = m.measure([Placement.from_ops(graph, devs, cluster.device_names)])
    where = ran_on(m.last_run_metadata)
    out = {
        "devices": list(cluster.device_names),
        "ok": r.ok, "step_time": r.step_time, "bytes_moved": r.bytes_moved,
        "busy": r.busy_time.tolist(), "peak": r.peak_memory.tolist(),
        "ran_on": {n: where.get(n) for n in graph.names if n in where},
        "given": {n: cluster.device_names[d] for n, d in zip(graph.names, devs)},
    }
    # A device this process does not have: an error, not an exception.
    fake = cluster_lib.make("f", list(cluster.devices) + [cluster_lib.Device("/device:GPU:3", "GPU", 1 << 30)])
    bad = SessionMeasurer(mg, graph, fake, warmup=0, steps=1)
    (e,) = bad.measure([Placement.from_ops(graph, np.where([t == "AsString" for t in graph.types], 0, 2), fake.device_names)])
    out["missing_device"] = [e.failure, e.message]
    # A colocation group split across devices: refused before running.
    member = next(n for n, k in zip(graph.names, graph.colocation) if k == "w" and n != "w")
    split = np.array([1 if n == member else 0 for n in graph.names])
    (cerr,) = m.measure([Placement.from_ops(graph, split, cluster.device_names)])
    out["colocation"] = [cerr.failure, cerr.message]
    # A step longer than a 1 ms time-out.
    with g.as_default():
        big = tf.random.uniform([1500, 1500], name="big")
        slow = tf.reduce_sum(tf.matmul(tf.matmul(big, big), big), name="slow")
        tf.compat.v1.add_to_collection("train_op", slow.op)
    g2 = extract.extract(g, name="slow")
    t = SessionMeasurer(extract.metagraph_of(g), g2, cluster, warmup=0, steps=1, timeout_s=0.001)
    (s,) = t.measure([Placement.from_ops(g2, np.zeros(g2.num_ops, int), cluster.device_names)])
    out["timeout"] = [s.failure, s.message]
    # The tiny NMT: decoder (and what is colocated with it) on CPU:1.
    import models
    from configs import nmt

    model = models.build(nmt.get_config("tiny").model)
    ng = extract.extract(model.metagraph, name=model.name)
    dec = np.array(["decoder" in n for n in ng.names])
    for key in set(ng.colocation[dec]) - {""}:
        dec |= ng.colocation == key
    nd = np.where(dec, 1, 0)
    nm = SessionMeasurer(model, ng, cluster, warmup=1, steps=2, rewrite=False)
    (nr,) = nm.measure([Placement.from_ops(ng, nd, cluster.device_names)])
    where = ran_on(nm.last_run_metadata)
    ran = {n: where[n] for n in ng.names if n in where}
    out["nmt"] = {
        "ok": nr.ok, "message": nr.message, "ran": len(ran), "ops": int(ng.num_ops),
        "wrong": [n for n, dv in ran.items() if dv != cluster.device_names[nd[ng.index()[n]]]],
        "on_1": sum(dv == "/device:CPU:1" for dv in ran.values()),
    }
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def result():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, p.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.slow
def test_two_logical_cpus_discovered(result):
    assert result["devices"] == ["/device:CPU:0", "/device:CPU:1"]


@pytest.mark.slow
def test_placed_graph_runs_where_it_was_placed(result):
    assert result["ok"] and result["step_time"] > 0
    ran, given = result["ran_on"], result["given"]
    for op in ("h", "act", "gradients/act_grad/TanhGrad", "x/RandomUniform", "gradients/h_grad/MatMul_1"):
        assert ran[op] == given[op], op
    assert ran["h"] == "/device:CPU:1" and ran["x/RandomUniform"] == "/device:CPU:0"
    assert all(ran[n] == given[n] for n in ran)
    assert result["busy"][0] > 0 and result["busy"][1] > 0
    assert result["bytes_moved"] >= 64 * 128 * 4  # x crosses to CPU:1


@pytest.mark.slow
def test_peak_memory_is_the_allocators_not_one_ops(result):
    # CPU:0 holds x (64 x 128 floats) until w's gradient (128 x 256), computed on CPU:0
    # from x and h's gradient, is written: more than any one op allocates.
    x_bytes, w_bytes = 4 * 64 * 128, 4 * 128 * 256
    assert result["peak"][0] >= x_bytes + w_bytes, result["peak"]


@pytest.mark.slow
def test_missing_device_is_an_error_measurement(result):
    kind, message = result["missing_device"]
    assert kind == "error"
    assert "GPU:3" in message


@pytest.mark.slow
def test_timeout_is_a_timeout_measurement(result):
    kind, _ = result["timeout"]
    assert kind == "timeout"


@pytest.mark.slow
def test_split_colocation_group_is_an_error(result):
    kind, message = result["colocation"]
    assert kind == "error" and "colocation" in message


@pytest.mark.slow
def test_tiny_nmt_runs_where_placed(result):
    r = result["nmt"]
    assert r["ok"], r["message"]
    assert r["wrong"] == []
    assert r["ran"] > r["ops"] // 2 and r["on_1"] > 0
