"""Extraction of hand-built TF graphs: shapes, bytes, edges, colocation, kernels."""

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format

from graphs import extract
from placer.core.errors import InputError


def _hand_graph() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        x = tf.random.uniform([4, 8], name="x")  # [4, 8] float32 = 128 bytes
        w = tf.compat.v1.get_variable(
            "w", [8, 16], use_resource=False, initializer=tf.compat.v1.zeros_initializer()
        )  # 8 * 16 * 4 = 512 bytes
        v = tf.compat.v1.get_variable("v", [2, 3], use_resource=True, initializer=tf.compat.v1.zeros_initializer())
        h = tf.matmul(x, w, name="h")  # [4, 16] float32 = 256 bytes
        with tf.compat.v1.colocate_with(h):
            tf.identity(h, name="near_h")
        with tf.control_dependencies([h]):
            tf.no_op(name="after")
        tf.strings.as_string(h, name="s")  # 64 strings x 8 bytes = 512
        tf.compat.v1.placeholder_with_default(tf.zeros([3, 5]), shape=[None, 5], name="pw")  # (-1, 5): 20 bytes
        tf.zeros([0], name="empty")
        tf.identity(v.read_value(), name="vread")
    return g


@pytest.fixture(scope="module")
def graph():
    return extract.extract(_hand_graph(), name="hand")


def test_shapes_and_bytes(graph):
    i = graph.index()
    assert graph.name == "hand"
    assert graph.types[i["h"]] == "MatMul"
    assert graph.output_shapes[i["x/RandomUniform"]] == ((4, 8),)
    assert graph.output_bytes[i["x/RandomUniform"]] == 128
    assert graph.output_shapes[i["h"]] == ((4, 16),)
    assert graph.output_bytes[i["h"]] == 256
    assert graph.output_bytes[i["w"]] == 512
    assert graph.output_bytes[i["s"]] == 512
    assert graph.output_shapes[i["pw"]] == ((-1, 5),)
    assert graph.output_bytes[i["pw"]] == 20
    assert graph.output_bytes[i["empty"]] == 0
    assert graph.output_bytes[i["v"]] == 0  # a resource handle
    assert graph.output_shapes[i["after"]] == ()


def test_persistent_bytes(graph):
    i = graph.index()
    assert graph.persistent_bytes[i["w"]] == 512
    assert graph.persistent_bytes[i["v"]] == 2 * 3 * 4
    assert graph.persistent_bytes.sum() == 512 + 24


def test_edges(graph):
    i = graph.index()
    edges = {
        (graph.names[s], graph.names[d]): (int(b), bool(c))
        for s, d, b, c in zip(graph.edge_src, graph.edge_dst, graph.edge_bytes, graph.edge_control, strict=True)
    }
    assert edges[("x/RandomUniform", "h")] == (128, False)
    assert edges[("w/read", "h")] == (512, False)
    assert edges[("h", "after")] == (0, True)
    assert edges[("h", "s")] == (256, False)
    assert edges[("x/shape", "x/RandomUniform")] == (8, False)  # int32 [2]
    assert all(graph.edge_src < graph.edge_dst)
    # every TF input is one edge: h has 2 inputs, after 1 control input.
    assert int(np.sum(graph.edge_dst == i["h"])) == 2
    assert int(np.sum(graph.edge_dst == i["after"])) == 1
    assert graph.device_types == ()
    assert graph.compute_cost.shape == (graph.num_ops, 0)


def test_colocation(graph):
    i = graph.index()
    for op in ("w", "w/read", "w/Assign", "w/Initializer/zeros"):
        assert graph.colocation[i[op]] == "w", op
    assert graph.colocation[i["near_h"]] == "h"
    assert graph.colocation[i["h"]] == "h"
    assert graph.colocation[i["x/RandomUniform"]] == ""


def test_metagraph_and_graphdef_give_the_same_graph(graph):
    g = _hand_graph()
    assert extract.extract(g.as_graph_def(), name="hand") == graph
    assert extract.extract(extract.metagraph_of(g), name="hand") == graph


def test_metagraph_of_fetches_sinks_without_train_op():
    mg = extract.metagraph_of(_hand_graph())
    fetch = set(mg.collection_def["train_op"].node_list.value)
    assert {"after", "s", "near_h", "pw", "empty", "vread"} <= fetch
    assert "h" not in fetch  # consumed by s, near_h, after


def test_kernels(graph):
    assert extract.has_kernel("MatMul", "CPU") and extract.has_kernel("MatMul", "GPU")
    assert extract.has_kernel("AsString", "CPU") and not extract.has_kernel("AsString", "GPU")
    assert extract.has_kernel("VarHandleOp", "GPU")  # via a DEFAULT kernel
    mask = extract.kernel_mask(graph, ["CPU", "GPU"])
    i = graph.index()
    assert mask[:, 0].all()
    assert not mask[i["s"], 1]
    assert int((~mask[:, 1]).sum()) == 1


def test_load_metagraph_binary_and_text(tmp_path):
    mg = extract.metagraph_of(_hand_graph())
    b = tmp_path / "m.meta"
    b.write_bytes(mg.SerializeToString())
    t = tmp_path / "m.pbtxt"
    t.write_text(text_format.MessageToString(mg))
    gd = tmp_path / "g.pb"
    gd.write_bytes(mg.graph_def.SerializeToString())
    for p in (b, t, gd):
        loaded = extract.load_metagraph(str(p))
        assert len(loaded.graph_def.node) == len(mg.graph_def.node)
    assert extract.load_metagraph(str(b)) == mg


@pytest.mark.parametrize("content", [None, b"", b"\xff\xfe not a protobuf \x00\x01", b"node { name: "])
def test_load_metagraph_errors(tmp_path, content):
    p = tmp_path / "bad.meta"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(InputError, match="bad.meta"):
        extract.load_metagraph(str(p))


def test_unknown_op_type_is_an_input_error():
    gd = tf.compat.v1.GraphDef()
    gd.node.add(name="a", op="NoSuchOpType")
    with pytest.raises(InputError, match="NoSuchOpType"):
        extract.extract(gd, name="bad")


def test_ops_taking_a_resource_share_the_variable_key():
    # TF's placer runs every op that takes a variable's handle on the
    # variable's device, with or without a `_class` attribute.
    g = tf.Graph()
    with g.as_default():
        v = tf.compat.v1.get_variable("v", shape=[3], use_resource=True)
        read = tf.raw_ops.ReadVariableOp(resource=v.handle, dtype=tf.float32, name="read")
        tf.raw_ops.AssignAddVariableOp(resource=v.handle, value=read * 2.0, name="bump")
        tf.identity(read, name="out")
    og = extract.extract(g, name="res")
    key = dict(zip(og.names, og.colocation, strict=True))
    assert key["read"] == key["bump"] == key["v"] != ""
    assert key["out"] == "" and key["mul"] == ""
