"""A user's Keras model (--model=FILE.py:FUNCTION or FILE.keras) as one training step, and each mistake's one line."""

import os

import numpy as np
import pytest
import tensorflow as tf

import models
from models import registry
from placer.core.errors import InputError
from tests.binaries import run
from tests.cli import ROOT

MODELS = os.path.join(ROOT, "tests", "testdata", "keras_models.py")


def _ancestors(op: tf.Operation) -> set[str]:
    seen, stack = {op.name}, [op]
    while stack:
        cur = stack.pop()
        for p in [t.op for t in cur.inputs] + list(cur.control_inputs):
            if p.name not in seen:
                seen.add(p.name)
                stack.append(p)
    return seen


@pytest.fixture(scope="module")
def mlp():
    return models.build(registry.user_model_config(f"{MODELS}:mlp", batch_size=4))


def test_one_forward_pass_on_synthetic_data_and_no_feed(mlp):
    ops = mlp.graph.get_operations()
    assert mlp.name == "mlp"
    assert not [op.name for op in ops if op.type.startswith("Placeholder")]
    step = _ancestors(mlp.train_op)
    matmuls = sorted(op.name for op in ops if op.type == "MatMul" and op.name in step)
    # Two Dense layers: 2 forward MatMuls, and 3 backward (both kernels' gradients, the logits layer's input's).
    forward = [n for n in matmuls if not n.startswith("gradients")]
    assert len(forward) == 2 and len(matmuls) == 5, matmuls
    # Every MatMul of the graph is in the step: the placeholder-fed pass Keras built first is gone.
    assert len([op for op in ops if op.type == "MatMul"]) == 5
    # The inputs and targets are made in the graph: [4, 4] floats in [-1, 1), [4] class ids in [0, 3).
    x, y = mlp.graph.get_tensor_by_name("input/x0:0"), mlp.graph.get_tensor_by_name("target/y0:0")
    assert x.shape.as_list() == [4, 4] and x.dtype == tf.float32
    assert y.shape.as_list() == [4] and y.dtype == tf.int32
    with tf.compat.v1.Session(graph=mlp.graph) as sess:
        xv, yv = sess.run([x, y])
    assert xv.min() >= -1 and xv.max() < 1 and set(yv.tolist()) <= {0, 1, 2}
    assert list(mlp.metagraph.collection_def["train_op"].node_list.value) == [mlp.train_op.name]


def test_a_step_updates_the_weights_and_the_batch_norm_averages(mlp):
    updates = [op for op in mlp.graph.get_operations() if op.type == "AssignSubVariableOp"]
    assert len(updates) == 2 and all(op.name in _ancestors(mlp.train_op) for op in updates)  # moving mean, variance
    mean = next(v for v in mlp.graph.get_collection("variables") if v.name.startswith("bn/moving_mean"))
    with tf.compat.v1.Session(graph=mlp.graph) as sess:
        sess.run(mlp.init_op)
        before = sess.run(mean)
        losses = [sess.run([mlp.train_op, mlp.loss])[1] for _ in range(3)]
        after = sess.run(mean)
    assert np.all(before == 0) and np.any(after != 0)
    assert losses[2] < losses[1] < losses[0]  # SGD on the same batch
    assert losses[0] == pytest.approx(np.log(3), abs=1e-5)  # a uniform softmax over 3 classes at the start


def test_two_inputs_two_outputs_and_their_targets():
    m = models.build(registry.user_model_config(f"{MODELS}:two_heads", batch_size=6))
    g = m.graph
    tokens, extra = g.get_tensor_by_name("input/x0:0"), g.get_tensor_by_name("input/x1:0")
    classes, value = g.get_tensor_by_name("target/y0:0"), g.get_tensor_by_name("target/y1:0")
    assert tokens.dtype == tf.int32 and tokens.shape.as_list() == [6, 5] and extra.shape.as_list() == [6, 2]
    assert classes.shape.as_list() == [6, 3] and value.shape.as_list() == [6, 1]  # one-hot rows; floats
    with tf.compat.v1.Session(graph=g) as sess:
        sess.run(m.init_op)
        t, c = sess.run([tokens, classes])
        loss = sess.run([m.train_op, m.loss])[1]
    assert t.min() >= 0 and t.max() < 7  # below the Embedding's input_dim
    assert np.all(c.sum(axis=1) == 1) and np.isfinite(loss)


def test_a_saved_keras_file_gives_the_same_step(tmp_path, mlp):
    import sys  # noqa: PLC0415

    sys.path.insert(0, os.path.dirname(MODELS))
    try:
        import keras_models  # noqa: PLC0415
    finally:
        sys.path.remove(os.path.dirname(MODELS))
    path = str(tmp_path / "mlp.keras")
    keras_models.mlp().save(path)
    m = models.build(registry.user_model_config(path, batch_size=4))
    assert m.name == "mlp"
    types = sorted(op.type for op in m.graph.get_operations() if op.name in _ancestors(m.train_op))
    assert types == sorted(op.type for op in mlp.graph.get_operations() if op.name in _ancestors(mlp.train_op))


def test_builtin_models_are_sources_of_the_registry():
    assert registry.source_of({"name": "nmt"}) == "models.nmt:build"
    with pytest.raises(InputError, match="unknown model 'mnv2' \\(valid: inception_v3, nmt, rnnlm\\)"):
        registry.source_of({"name": "mnv2"})
    with pytest.raises(InputError, match="neither FILE.py:FUNCTION"):
        registry.user_model_config("examples/tiny_cnn.py")
    with pytest.raises(InputError, match="nowhere.py: no such file"):
        registry.user_model_config("nowhere.py:f")


def test_a_keras3_model_is_traced_into_a_standalone_step():
    m = models.build(registry.user_model_config(f"{MODELS}:keras3_mlp", batch_size=4))
    ops = m.graph.get_operations()
    assert not [op.name for op in ops if op.type.startswith("Placeholder")]
    # The traced function's captured handles became variables named after their Keras paths.
    handles = {op.name for op in ops if op.type == "VarHandleOp"}
    assert {"k3_hidden/kernel", "k3_bn/moving_mean", "k3_logits/bias"} <= handles
    step = _ancestors(m.train_op)
    updates = [
        op for op in ops if op.type == "AssignVariableOp" and op.name in step and "moving_mean" in op.inputs[0].op.name
    ]
    assert updates  # batch norm's moving mean is updated with every step
    with tf.compat.v1.Session(graph=m.graph) as sess:
        sess.run(m.init_op)
        losses = [sess.run([m.train_op, m.loss])[1] for _ in range(3)]
    assert losses[2] < losses[1] < losses[0]


# Each mistake in a model file: placer-extract prints one line naming the file, the function and the problem.
MISTAKES = {
    "raises": "raised RuntimeError: out of coffee",
    "not_a_model": "returned str, not a compiled Keras model",
    "uncompiled": "the model is not compiled (call model.compile(optimizer=..., loss=...))",
    "unknown_shape": "has unknown dimensions (None, None, 4) (give every dimension but the batch",
    "needs_feed": "the training step needs a feed for placeholder 'scale'",
    "keras3_uncompiled": "the model is not compiled (call model.compile(optimizer=..., loss=...))",
    "missing": "no function 'missing' in",
    "takes_arguments": "takes arguments; --model needs a function of none that returns a compiled Keras model",
}


@pytest.mark.parametrize("function", sorted(MISTAKES))
def test_a_bad_model_function_is_one_line_and_exit_2(function, tmp_path):
    out = tmp_path / "g.json"
    r = run("placer.extract_main", f"--model={MODELS}:{function}", "--cluster=k80x4", f"--out={out}")
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {MODELS}:{function}: "), r.stderr
    assert MISTAKES[function] in lines[0]
    assert not out.exists()
