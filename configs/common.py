"""Config sections shared by every model config: the placer and its search.

Each model config (configs/rnnlm.py, nmt.py, inception_v3.py) attaches these
under `config.placer`, `config.cluster` and `config.measure`, so any field can
be overridden from the command line, e.g. `--config.placer.policy.hidden_size=256`.
"""

import ml_collections

from placer.core.errors import InputError


def placer_config() -> ml_collections.ConfigDict:
    """Returns the grouping, policy and REINFORCE settings with their sources."""
    c = ml_collections.ConfigDict()

    c.grouping = ml_collections.ConfigDict()
    # Paper section 3 (co-location heuristics). Merge an op into its only
    # consumer; cap the group size so a few groups do not swallow the graph.
    c.grouping.merge_single_consumer = True
    c.grouping.max_group_ops = 0  # 0 = no cap (our choice).
    # Our choice: coarsen to at most this many groups; the paper's policy reads a few
    # hundred groups (NMT's search space is 5^280: 280 groups). 0 = no coarsening.
    c.grouping.target_groups = 256

    c.policy = ml_collections.ConfigDict()
    # TF's hierarchical placer uses 512; on a 2-core CPU a policy step on the
    # 256-group NMT took about 4x longer at 256 than at 128 units (bench/rl.py), and
    # 128 reached the better placements within the time budget (our choice).
    c.policy.hidden_size = 128
    c.policy.type_embedding_size = 32  # our choice
    c.policy.device_embedding_size = 32  # our choice
    c.policy.temperature = 10.0  # TF hierarchical placer default.
    c.policy.tanh_constant = 5.0  # TF hierarchical placer default.
    c.policy.logits_noise_std = 0.0  # Gaussian logits noise, first steps only.
    c.policy.logits_noise_steps = 0  # steps with logits noise.

    c.train = ml_collections.ConfigDict()
    # TF's hierarchical placer samples 4; the simulator measures a placement in
    # milliseconds, so more samples per policy update are nearly free (our choice).
    c.train.samples_per_step = 16
    # TF's hierarchical placer uses Adam at 0.1; that collapsed the policy onto one
    # device within 50 steps on NMT here, 0.002 kept improving (our choice).
    c.train.learning_rate = 0.002
    c.train.lr_decay_steps = 0  # 0 = constant learning rate.
    c.train.lr_decay_rate = 0.96
    c.train.clip_norm = 1.0  # gradient-norm clipping (TF hierarchical placer).
    c.train.baseline_decay = 0.9  # EMA baseline (TF hierarchical placer).
    c.train.entropy_weight = 0.0  # optional entropy bonus (our choice: off).
    c.train.failing_step_time = 100.0  # seconds for a failed sample (TF hierarchical placer).
    c.train.drop_failures_after = 0  # steps after which failed samples leave the update; 0 = never.
    c.train.checkpoint_every = 50  # steps between checkpoints (our choice).
    # Supervised warm start (our addition to the paper's method): imitate the
    # fastest of these baselines before REINFORCE; "" = start from scratch.
    c.train.warm_start = "m_sct,m_etf,expert,metis,m_topo"
    c.train.warm_start_steps = 150  # maximum-likelihood steps on that placement (our choice).
    c.train.warm_start_learning_rate = 0.005  # Adam, for those steps (our choice: 0.02 and up diverged on NMT).
    # Measure placements op by op (our choice): simulating each group's ops back
    # to back is faster but overestimated NMT step times by up to 40%.
    c.train.measure_op_level = True
    return c


def attach(
    config: ml_collections.ConfigDict, cluster: str = "k80x4", measure: str = "sim"
) -> ml_collections.ConfigDict:
    """Adds the shared sections to a model config and returns it."""
    config.placer = placer_config()
    config.cluster = cluster  # preset name in configs/clusters or a JSON path.
    config.measure = measure  # sim | grappler | session
    return config


def parse_variant(variant: str, keys: tuple[str, ...] = ("layers", "batch")) -> tuple[bool, dict[str, int]]:
    """Parses a model config variant such as "", "tiny", "layers=4" or "tiny,layers=4".

    Args:
      variant: comma-separated tokens: "tiny" (small sizes), or key=value
        integer overrides with a key from `keys`.
      keys: the override keys the model accepts.

    Returns:
      (tiny, overrides): whether "tiny" was given, and the integer overrides.

    Raises:
      InputError: an unknown token, key or a value that is not a positive integer.
    """
    tiny, overrides = False, {}
    for token in (t.strip() for t in variant.split(",")):
        if not token:
            continue
        if token == "tiny":
            tiny = True
            continue
        key, sep, value = token.partition("=")
        if not sep or key not in keys:
            raise InputError(
                f"config variant {variant!r}: unknown token {token!r} "
                f"(valid: tiny, {', '.join(k + '=N' for k in keys)})"
            )
        if not value.isdigit() or int(value) <= 0:
            raise InputError(f"config variant {variant!r}: {key} must be a positive integer, got {value!r}")
        overrides[key] = int(value)
    return tiny, overrides


def get_config() -> ml_collections.ConfigDict:
    """The shared sections alone, with no model: the defaults for a graph read from a file (--graph)."""
    return attach(ml_collections.ConfigDict())
