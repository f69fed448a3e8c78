"""Human-expert placement: hand-built graphs worked out by hand, then the tiny models."""

import numpy as np
import pytest

from baselines import expert
from placer.core import cluster as cluster_lib
from placer.core import op_names
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph

GiB = 1 << 30


def _cluster(gpus=2, cpu=True):
    devs = [cluster_lib.Device("/device:CPU:0", "CPU", 8 * GiB)] if cpu else []
    devs += [cluster_lib.Device(f"/device:GPU:{i}", "GPU", 8 * GiB) for i in range(gpus)]
    return cluster_lib.make("test", devs)


def _rnnlm_like(**kw):
    names = [
        "input/ids",
        "embedding/table",
        "embedding/lookup",
        "rnn/layer_0/kernel",
        "rnn/layer_0/t_0/MatMul",
        "rnn/layer_1/kernel",
        "rnn/layer_1/t_0/MatMul",
        "softmax/MatMul",
        "loss/loss",
        "gradients/loss/loss_grad/Tile",
        "gradients/softmax/MatMul_grad/MatMul",
        "gradients/rnn/layer_1/t_0/MatMul_grad/MatMul",
        "gradients/AddN",
        "gradients/rnn/layer_0/t_0/MatMul_grad/MatMul",
        "GradientDescent/learning_rate",
        "GradientDescent/update_rnn/layer_0/kernel/ResourceApplyGradientDescent",
        "GradientDescent/update_rnn/layer_1/kernel/ResourceApplyGradientDescent",
    ]
    edges = [
        ("input/ids", "embedding/lookup"),
        ("embedding/table", "embedding/lookup"),
        ("embedding/lookup", "rnn/layer_0/t_0/MatMul"),
        ("rnn/layer_0/kernel", "rnn/layer_0/t_0/MatMul"),
        ("rnn/layer_0/t_0/MatMul", "rnn/layer_1/t_0/MatMul"),
        ("rnn/layer_1/kernel", "rnn/layer_1/t_0/MatMul"),
        ("rnn/layer_1/t_0/MatMul", "softmax/MatMul"),
        ("softmax/MatMul", "loss/loss"),
        ("loss/loss", "gradients/loss/loss_grad/Tile"),
        ("gradients/loss/loss_grad/Tile", "gradients/softmax/MatMul_grad/MatMul"),
        ("gradients/softmax/MatMul_grad/MatMul", "gradients/rnn/layer_1/t_0/MatMul_grad/MatMul"),
        # a gradient sum: its inputs sit on GPU 1, its consumer on GPU 0
        ("gradients/rnn/layer_1/t_0/MatMul_grad/MatMul", "gradients/AddN"),
        ("gradients/AddN", "gradients/rnn/layer_0/t_0/MatMul_grad/MatMul"),
        (
            "gradients/rnn/layer_0/t_0/MatMul_grad/MatMul",
            "GradientDescent/update_rnn/layer_0/kernel/ResourceApplyGradientDescent",
        ),
        ("GradientDescent/learning_rate", "GradientDescent/update_rnn/layer_0/kernel/ResourceApplyGradientDescent"),
        ("GradientDescent/learning_rate", "GradientDescent/update_rnn/layer_1/kernel/ResourceApplyGradientDescent"),
        ("rnn/layer_0/kernel", "GradientDescent/update_rnn/layer_0/kernel/ResourceApplyGradientDescent"),
        ("rnn/layer_1/kernel", "GradientDescent/update_rnn/layer_1/kernel/ResourceApplyGradientDescent"),
    ]
    return OpGraph.create("rnnlm", names, ["Op"] * len(names), edges, **kw)


def _where(graph, placement):
    return {n: placement.device_names[d] for n, d in zip(graph.names, placement.devices, strict=True)}


def test_hand_built_rnnlm_by_hand():
    g = _rnnlm_like()
    p = expert.place(g, _cluster(gpus=2))
    w = _where(g, p)
    gpu0 = [
        "input/ids",
        "embedding/table",
        "embedding/lookup",
        "rnn/layer_0/kernel",
        "rnn/layer_0/t_0/MatMul",
        "gradients/rnn/layer_0/t_0/MatMul_grad/MatMul",
        "GradientDescent/update_rnn/layer_0/kernel/ResourceApplyGradientDescent",
        "gradients/AddN",
    ]  # with its consumer, the gradient of layer 0
    gpu1 = [
        "rnn/layer_1/kernel",
        "rnn/layer_1/t_0/MatMul",
        "softmax/MatMul",
        "loss/loss",
        "gradients/loss/loss_grad/Tile",
        "gradients/softmax/MatMul_grad/MatMul",
        "gradients/rnn/layer_1/t_0/MatMul_grad/MatMul",
        "GradientDescent/update_rnn/layer_1/kernel/ResourceApplyGradientDescent",
    ]
    assert {n: w[n] for n in gpu0} == {n: "/device:GPU:0" for n in gpu0}
    assert {n: w[n] for n in gpu1} == {n: "/device:GPU:1" for n in gpu1}
    # the learning rate has no producer; it follows its first consumer (update of layer 0)
    assert w["GradientDescent/learning_rate"] == "/device:GPU:0"
    assert p.metadata["method"] == "expert"
    assert p.metadata["rules"]["neighbour"] == 2 and "default" not in p.metadata["rules"]
    _, rule = expert.assign(g, _cluster(gpus=2))
    r = dict(zip(g.names, rule, strict=True))
    assert r["gradients/rnn/layer_1/t_0/MatMul_grad/MatMul"] == "gradient"
    assert r["GradientDescent/update_rnn/layer_0/kernel/ResourceApplyGradientDescent"] == "update"
    assert r["softmax/MatMul"] == "last" and r["embedding/table"] == "first" and r["rnn/layer_1/kernel"] == "layer"


def test_more_gpus_than_layers_uses_the_first_ones():
    g = _rnnlm_like()
    w = _where(g, expert.place(g, _cluster(gpus=4)))
    assert w["rnn/layer_0/t_0/MatMul"] == "/device:GPU:0" and w["softmax/MatMul"] == "/device:GPU:1"


def test_one_gpu_puts_everything_there():
    g = _rnnlm_like()
    p = expert.place(g, _cluster(gpus=1))
    assert set(p.devices.tolist()) == {1}  # index 0 is the CPU


def test_layer_wrapping():
    assert expert.layer_gpus(2, 4) == [0, 1]
    assert expert.layer_gpus(8, 4) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert expert.layer_gpus(8, 4, "round_robin") == [0, 1, 2, 3, 0, 1, 2, 3]
    assert expert.layer_gpus(3, 2) == [0, 0, 1]
    with pytest.raises(InputError, match="wrap"):
        expert.layer_gpus(3, 2, "spiral")


def test_gradient_ops_follow_their_forward_op_by_name():
    names = ["rnn/layer_0/t_1/MatMul", "a/b", "gradients/rnn/layer_0/t_1/MatMul_grad/MatMul_1"]
    names += ["gradients_1/a/b_grad/c_grad/X", "gradients/AddN_3", "SGD/update_a/b/Apply"]
    g = OpGraph.create("names", names, ["T"] * len(names), [])
    assert expert._links(g).tolist() == [-1, -1, 0, 1, -1, 1]


def test_cpu_only_ops_and_colocation():
    # a -> b -> c; b has no GPU kernel; d is colocated with b (key "b"); e with c.
    names = ["rnn/layer_0/a", "rnn/layer_0/b", "rnn/layer_1/c", "rnn/layer_1/d", "rnn/layer_0/e"]
    cost = np.array([[1, 1], [1, np.nan], [1, 1], [1, 1], [1, 1]], dtype=float)
    g = OpGraph.create(
        "rnnlm",
        names,
        ["Op"] * 5,
        [("rnn/layer_0/a", "rnn/layer_0/b"), ("rnn/layer_0/b", "rnn/layer_1/c")],
        colocation=["", "rnn/layer_0/b", "rnn/layer_1/c", "rnn/layer_0/b", "rnn/layer_1/c"],
        device_types=("CPU", "GPU"),
        compute_cost=cost,
    )
    dev, rule = expert.assign(g, _cluster(gpus=2))
    w = dict(zip(g.names, dev.tolist(), strict=True))
    assert w == {"rnn/layer_0/a": 1, "rnn/layer_0/b": 0, "rnn/layer_1/c": 2, "rnn/layer_1/d": 0, "rnn/layer_0/e": 2}
    r = dict(zip(g.names, rule, strict=True))
    assert r["rnn/layer_0/b"] == "cpu" and r["rnn/layer_1/d"] == "colocation" and r["rnn/layer_0/e"] == "colocation"


def test_inception_on_a_single_gpu():
    names = ["input/images", "conv2d/Conv2D", "gradients/conv2d/Conv2D_grad/Conv2DBackpropFilter"]
    g = OpGraph.create("inception_v3", names, ["Op"] * 3, [(names[0], names[1]), (names[1], names[2])])
    p = expert.place(g, _cluster(gpus=4))
    assert p.devices.tolist() == [1, 1, 1]


def test_bad_inputs():
    g = OpGraph.create("resnet", ["a"], ["Op"], [])
    with pytest.raises(InputError, match="no expert placement for this graph: resnet"):
        expert.place(g, _cluster())
    with pytest.raises(InputError, match="GPU"):
        expert.place(_rnnlm_like(), _cluster(gpus=0))
    with pytest.raises(InputError, match="option"):
        expert.place(_rnnlm_like(), _cluster(), gpus=3)


# ----- tiny models, extracted from TensorFlow ---------------------------------


@pytest.fixture(scope="module")
def extracted(extracted_graph):
    specs = {"rnnlm": "configs/rnnlm.py:tiny", "nmt": "configs/nmt.py:tiny", "nmt4": "configs/nmt.py:tiny,layers=4"}
    return {key: extracted_graph(spec) for key, spec in specs.items()}


def _layer_of(name):
    m = expert._LAYER.match(name[len("gradients/") :] if name.startswith("gradients/") else name)
    return None if m is None else int(m.group(1))


@pytest.mark.parametrize("key", ["rnnlm", "nmt"])
def test_tiny_models_every_op_has_a_rule(extracted, key):
    g = extracted[key]
    c = _cluster(gpus=4)
    dev, rule = expert.assign(g, c)
    assert "default" not in rule
    index = g.index()
    gpu_of = {}
    for name, d, r in zip(g.names, dev.tolist(), rule, strict=True):
        assert c.devices[d].type == "GPU"
        layer = _layer_of(name)
        if layer is not None:
            gpu_of.setdefault(layer, set()).add(d)
        if r == "neighbour":  # the catch-all only takes sums, constants and NoOps no scope names
            assert not name.startswith(("rnn/", "encoder/", "decoder/", "attention/", "softmax/")), name
        fwd = op_names.forward_op_for(name, index)
        if fwd is not None and op_names.is_gradient(name):
            assert d == dev[fwd], f"{name} is not with {g.names[fwd]}"
        if name.startswith(("attention/", "softmax/", "loss/")):
            assert d == 2, name  # the last layer's GPU (layer 1 -> GPU index 2 after the CPU)
        if name.startswith(("embedding/", "encoder/embedding/", "decoder/embedding/", "input/")):
            assert d == 1, name
    assert {k: v for k, v in gpu_of.items()} == {0: {1}, 1: {2}}  # one layer per GPU


def test_tiny_nmt_four_layers_on_two_gpus_in_blocks(extracted):
    g = extracted["nmt4"]
    c = _cluster(gpus=2)
    dev, rule = expert.assign(g, c)
    assert "default" not in rule
    want = {0: 1, 1: 1, 2: 2, 3: 2}
    for name, d in zip(g.names, dev.tolist(), strict=True):
        layer = _layer_of(name)
        if layer is not None:
            assert d == want[layer], name
    # variable updates sit with their variables
    index = g.index()
    for name, d in zip(g.names, dev.tolist(), strict=True):
        if name.startswith("GradientDescent/update_decoder/layer_3/kernel/"):
            assert d == dev[index["decoder/layer_3/kernel"]] == 2
