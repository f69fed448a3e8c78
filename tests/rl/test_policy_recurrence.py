"""The policy's fast paths: the LSTM recurrence with its hand-written gradient, the encoder built on it, the
attention head through precomputed values, and the same result for the same seed."""

import math

import numpy as np
import tensorflow as tf

from configs.common import placer_config
from placer.measure.simulator import Simulator
from placer.rl import encoders, recurrence
from placer.rl import problem as problem_lib
from placer.rl.policy import build_policy
from placer.rl.reinforce import Trainer, seed_everything
from tests.hand_graphs import chains_and_gpus
from tests.rl.test_reinforce import config

LN3 = math.log(3.0)  # sigmoid(ln 3) = 3/4, tanh(ln 3) = 8/10


def test_two_steps_by_hand_values_and_gradients():
    # One unit (H = 1), one sequence, gate order (i, f, g, o), zero recurrent kernel.
    # Step 1, z = [ln3, 0, ln3, ln3]: i = .75, f = .5, g = .8, o = .75; c1 = .5 * 0 + .75 * .8 = .6, h1 = .75 tanh(.6).
    # Step 2, z = [0, ln3, 0, 0]: i = .5, f = .75, g = 0, o = .5; c2 = .75 * .6 + .5 * 0 = .45, h2 = .5 tanh(.45).
    z_in = tf.Variable([[[LN3, 0.0, LN3, LN3]], [[0.0, LN3, 0.0, 0.0]]])
    kernel = tf.Variable(tf.zeros([1, 4]))
    with tf.GradientTape() as tape:
        h = recurrence.lstm(z_in, kernel)
        loss = h[1, 0, 0]  # h2
    h1, h2 = 0.75 * math.tanh(0.6), 0.5 * math.tanh(0.45)
    np.testing.assert_allclose(h.numpy().ravel(), [h1, h2], rtol=1e-6)
    dz, dk = tape.gradient(loss, [z_in, kernel])
    # dh2/dc2 = o2 (1 - tanh^2 c2) = .5 (1 - tanh^2 .45); dc2/dc1 = f2 = .75.
    dc2 = 0.5 * (1 - math.tanh(0.45) ** 2)
    dc1 = 0.75 * dc2
    # Step 2: dz_i = dc2 g2 i2(1-i2) = 0, dz_f = dc2 c1 f2(1-f2) = dc2 .6 .1875, dz_g = dc2 i2 (1-g2^2) = dc2 .5,
    # dz_o = tanh(c2) o2(1-o2) = tanh(.45) .25.
    want2 = [0.0, dc2 * 0.6 * 0.1875, dc2 * 0.5, math.tanh(0.45) * 0.25]
    # Step 1: dz_i = dc1 g1 i1(1-i1) = dc1 .8 .1875, dz_f = dc1 c0 ... = 0, dz_g = dc1 i1 (1-g1^2) = dc1 .75 .36,
    # dz_o = 0 (h1 reaches h2 only through the kernel, which is zero).
    want1 = [dc1 * 0.8 * 0.1875, 0.0, dc1 * 0.75 * 0.36, 0.0]
    np.testing.assert_allclose(dz.numpy()[:, 0], [want1, want2], rtol=1e-5, atol=1e-7)
    # The kernel's gradient: sum over steps of h_t-1 dz_t = h0 dz1 + h1 dz2 = h1 dz2 (h0 = 0).
    np.testing.assert_allclose(dk.numpy()[0], h1 * np.array(want2), rtol=1e-5, atol=1e-7)


def _reference(z_in, kernel):
    """The Keras LSTM step, looped in Python and differentiated by TensorFlow."""
    h = c = tf.zeros(z_in.shape[1:-1] + kernel.shape[-2:-1])
    out = []
    for t in range(z_in.shape[0]):
        i, f, g, o = tf.split(z_in[t] + tf.matmul(h, kernel), 4, axis=-1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        out.append(h)
    return tf.stack(out)


def test_gradient_equals_autodiff_of_the_looped_cell_for_stacked_lstms():
    rng = np.random.default_rng(0)
    # Two LSTMs side by side (B = 2, as the encoder's directions), 3 sequences, 4 units, 11 steps (one full loop
    # iteration of UNROLL = 8 steps and one padded).
    z_in = tf.Variable(rng.normal(size=(11, 2, 3, 16)).astype(np.float32))
    kernel = tf.Variable(rng.normal(scale=0.5, size=(2, 4, 16)).astype(np.float32))
    weights = tf.constant(rng.normal(size=(11, 2, 3, 4)).astype(np.float32))  # a loss that reads every output
    grads = []
    for fn in (recurrence.lstm, _reference):
        with tf.GradientTape() as tape:
            h = fn(z_in, kernel)
            loss = tf.reduce_sum(h * weights)
        grads.append((h.numpy(), *[g.numpy() for g in tape.gradient(loss, [z_in, kernel])]))
    for got, want in zip(*grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_encoder_equals_the_keras_bidirectional_layer_it_holds():
    encoder = encoders.build("bilstm", 8, seed=0)
    x = tf.constant(np.random.default_rng(1).normal(size=(2, 5, 8)).astype(np.float32))
    got = encoder(x)
    # The Keras layer reads the same weights, its backward direction over the reversed groups.
    np.testing.assert_allclose(got.numpy(), encoder.rnn(x).numpy(), rtol=1e-5, atol=1e-6)


def _run(tmp_path, name):
    graph, cluster = chains_and_gpus()
    seed_everything(0)
    problem, _ = problem_lib.make_problem(graph, cluster, config())
    trainer = Trainer(problem, Simulator(graph, cluster), config(), str(tmp_path / name), seed=1)
    placements = []
    for _ in range(3):
        placements.append(trainer.sample())
        trainer.learn(placements[-1], problem.measure(trainer.measurer, placements[-1]))
    return np.array(placements), [v.numpy() for v in trainer.policy.trainable_variables]


def test_the_same_seed_gives_the_same_placements_and_weights_after_ppo_updates(tmp_path):
    (a, wa), (b, wb) = _run(tmp_path, "a"), _run(tmp_path, "b")
    np.testing.assert_array_equal(a, b)
    for x, y in zip(wa, wb, strict=True):
        np.testing.assert_array_equal(x, y)


def test_logits_through_precomputed_values_equal_the_keras_layers_on_the_concatenated_context():
    c = placer_config().policy
    c.hidden_size, c.temperature, c.tanh_constant = 8, 2.0, 5.0
    policy = build_policy(4, 3, 3, c, seed=0)
    rng = np.random.default_rng(0)
    enc = policy.encode(rng.integers(0, 4, 5).astype(np.int32), rng.normal(size=(5, 3)).astype(np.float32))
    dec = tf.constant(rng.normal(size=(2, 5, 8)).astype(np.float32))
    # The paper's head: context = softmax(dec W enc^T) enc, logits = out(combine([dec, context])),
    # divided by the temperature (2) and bounded by 5 tanh(.).
    context = tf.nn.softmax(tf.einsum("kth,gh->ktg", policy.attention_w(dec), enc[0]), axis=-1) @ enc[0]
    raw = policy.output_layer(policy.combine(tf.concat([dec, context], -1)))
    want = 5.0 * tf.tanh(raw / 2.0)
    np.testing.assert_allclose(policy._logits(dec, enc, policy._keys(enc)).numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
