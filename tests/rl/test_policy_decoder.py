"""The policy's fast decoder: the same LSTM and attention as the Keras layers, one trace per run."""

import numpy as np
import tensorflow as tf

from configs.common import placer_config
from placer.measure.simulator import Simulator
from placer.rl import problem as problem_lib
from placer.rl.policy import build_policy
from placer.rl.reinforce import Trainer, seed_everything
from tests.hand_graphs import chains_and_gpus
from tests.rl.test_reinforce import config

G, F, V, D = 5, 3, 4, 3


def _policy(seed=0):
    c = placer_config().policy
    c.hidden_size = 8
    c.temperature = 1.0  # logits near their raw values, so a wrong weight shows
    return build_policy(V, F, D, c, seed=seed)


def _inputs():
    rng = np.random.default_rng(0)
    return rng.integers(0, V, G).astype(np.int32), rng.normal(size=(G, F)).astype(np.float32)


def test_hoisted_decoder_equals_the_keras_lstm_fed_the_previous_device():
    policy = _policy()
    t, f = _inputs()
    enc = policy.encode(t, f)
    actions = tf.constant([[0, 2, 1, 1, 0], [2, 2, 2, 0, 1]], tf.int32)
    # The decoder input at group g is [embedding of the device chosen for g - 1 (start token D at g = 0),
    # encoding of g]; the Keras LSTM reads it whole, the fast path splits its kernel by input.
    prev = tf.concat([tf.fill([2, 1], D), actions[:, :-1]], axis=1)
    x = tf.concat([policy.device_embedding(prev), tf.repeat(enc, 2, axis=0)], axis=-1)
    want, _, _ = policy.decoder(x)
    np.testing.assert_allclose(policy._decode(enc, actions).numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_attention_through_precomputed_keys_equals_the_dense_layer():
    policy = _policy()
    t, f = _inputs()
    enc = policy.encode(t, f)
    dec = tf.random.stateless_normal([2, G, 8], seed=[1, 2])
    # Luong "general": score(k, t, g) = (dec W)[k, t] . enc[g] = dec[k, t] . (enc W^T)[g].
    want = tf.einsum("kth,gh->ktg", policy.attention_w(dec), enc[0])
    got = tf.einsum("kth,gh->ktg", dec, policy._keys(enc))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_step_by_step_sampling_and_the_batched_decoder_agree_on_the_greedy_placement():
    policy = _policy(seed=3)
    t, f = _inputs()
    greedy = policy.greedy(t, f)
    # Teacher-forced with the greedy devices, every group's most likely device is the one greedy chose:
    # the sampler's LSTM steps and the batched one compute the same logits.
    enc = policy.encode(t, f)
    logits = policy._logits(policy._decode(enc, tf.constant(greedy[None])), enc, policy._keys(enc))
    np.testing.assert_array_equal(np.argmax(logits.numpy()[0], axis=-1), greedy)


def test_an_update_raises_the_log_probability_of_a_rewarded_placement_without_retracing(tmp_path):
    graph, cluster = chains_and_gpus()
    c = config()
    c.train.learning_rate = 1e-3  # small steps: the first-order effect of the gradient decides the sign
    c.train.elite_fraction = 0.0  # only the policy-gradient term acts
    c.train.normalise_advantages = False
    seed_everything(0)
    problem, _ = problem_lib.make_problem(graph, cluster, c)
    trainer = Trainer(problem, Simulator(graph, cluster), c, str(tmp_path), seed=0)
    policy, p = trainer.policy, problem

    def logp(actions):
        return policy.log_probs(p.type_ids, p.features, actions, trainer.mask_bias, p.leader)[0].numpy()

    traces = []
    for step in range(2):
        actions = policy.sample(p.type_ids, p.features, 8, seed=(0, step), mask_bias=trainer.mask_bias, leader=p.leader)
        # Reward 1 for the first sample's placement (and its copies), 0 for the rest, baseline 0: the loss is
        # -(copies / 8) * log p(first placement), no entropy term, so each PPO epoch's step raises log p.
        r = np.all(actions == actions[0], axis=1).astype(float)
        before = logp(actions[:1])[0]
        trainer._learn(actions, r, np.ones(len(r), bool), 0.0, 0.0)
        assert logp(actions[:1])[0] > before
        traces.append(trainer._update.experimental_get_tracing_count())
    assert traces[0] == traces[1]  # a new batch of the same shape reuses the traced update
