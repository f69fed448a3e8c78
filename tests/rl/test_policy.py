"""The placement policy: shapes, valid samples, determinism, masking."""

import numpy as np
import pytest

from configs.common import placer_config
from placer.rl.policy import build_policy

G, F, V = 7, 5, 4


def _policy(num_devices, seed=0):
    c = placer_config().policy
    c.hidden_size = 16
    return build_policy(V, F, num_devices, c, seed=seed)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, V, G).astype(np.int32), rng.normal(size=(G, F)).astype(np.float32)


@pytest.mark.parametrize("num_devices", [2, 4, 8])
def test_samples_are_valid_placements_for_any_device_count(num_devices):
    policy = _policy(num_devices)
    t, f = _inputs()
    actions = policy.sample(t, f, 6, seed=(1, 2))
    assert actions.shape == (6, G)
    assert actions.min() >= 0 and actions.max() < num_devices
    logp, entropy = policy.log_probs(t, f, actions)
    assert logp.shape == (6,) and entropy.shape == (6,)
    # Log-probabilities of a full placement are at most 0 and at least G * log of the tanh-bounded floor.
    assert np.all(logp.numpy() <= 0)
    assert np.all(entropy.numpy() <= np.log(num_devices) + 1e-5)


def test_same_seed_same_samples_and_greedy_is_deterministic():
    policy = _policy(4)
    t, f = _inputs()
    a = policy.sample(t, f, 3, seed=(5, 7))
    b = policy.sample(t, f, 3, seed=(5, 7))
    c = policy.sample(t, f, 3, seed=(5, 8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(policy.greedy(t, f), policy.greedy(t, f))


def test_greedy_picks_the_most_likely_device_at_each_step():
    policy = _policy(3)
    t, f = _inputs()
    greedy = policy.greedy(t, f)
    best = policy.log_probs(t, f, greedy[None])[0].numpy()[0]
    # Changing any single group's device away from greedy lowers that group's
    # own log-probability; the greedy sequence beats random samples on average.
    samples = policy.sample(t, f, 32, seed=(0, 1))
    others = policy.log_probs(t, f, samples)[0].numpy()
    assert best >= np.median(others)


def test_mask_keeps_groups_off_forbidden_devices():
    policy = _policy(3)
    t, f = _inputs()
    mask = np.zeros((G, 3), np.float32)
    mask[:, 0] = -1e9  # device 0 forbidden everywhere
    mask[2, :] = -1e9
    mask[2, 1] = 0.0  # group 2 may only go to device 1
    actions = policy.sample(t, f, 50, seed=(3, 3), mask_bias=mask)
    assert np.all(actions != 0)
    assert np.all(actions[:, 2] == 1)
    assert np.all(policy.greedy(t, f, mask)[[2]] == 1)


def test_temperature_and_tanh_constant_bound_the_logits():
    c = placer_config().policy
    c.hidden_size = 16
    c.tanh_constant = 0.5
    policy = build_policy(V, F, 2, c, seed=0)
    t, f = _inputs()
    # With logits bounded to (-0.5, 0.5), no device gets more than e^1 / (1 + e^1) of the mass.
    logp, _ = policy.log_probs(t, f, np.zeros((1, G), np.int32))
    per_group = logp.numpy()[0] / G
    assert per_group > np.log(np.exp(-0.5) / (np.exp(-0.5) + np.exp(0.5))) - 1e-6


def test_logits_noise_changes_samples_of_the_same_seed():
    policy = _policy(4)
    t, f = _inputs()
    plain = policy.sample(t, f, 8, seed=(2, 2))
    np.testing.assert_array_equal(plain, policy.sample(t, f, 8, seed=(2, 2), noise_std=0.0))
    assert not np.array_equal(plain, policy.sample(t, f, 8, seed=(2, 2), noise_std=5.0))
