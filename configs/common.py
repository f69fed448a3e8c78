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
    # Our choice: merging stops before fewer than this many groups remain, so
    # that a graph that is mostly one chain is not swallowed into a handful of
    # groups; -1 = min(target_groups, max(8 x devices, 32)), 0 = no floor.
    c.grouping.min_groups = -1
    # Our choice: ops in different name scopes at this depth never share a group
    # (placer.core.op_names.scope_colors), so that coarsening cannot mix, say, the
    # two layers of an LSTM at one time step; 0 = op names are not read. 2 suits the
    # RNN configs' scopes ("encoder/layer_0"); docs/rl.md, "What the groups can express".
    c.grouping.scope_depth = 0
    # True = gradient ops join the forward op they differentiate, and update ops their
    # variable (placer.core.grouping, step 2, as TF's colocate_gradients_with_ops would).
    # Our choice: False, so a placement may run an op's gradient on another device than
    # the op; with step 2 the searches from scratch found little better than one GPU
    # (docs/rl.md, "Gradients apart from their forward ops").
    c.grouping.colocate_gradients = False

    c.policy = ml_collections.ConfigDict()
    # TF's hierarchical placer uses 512; on a 2-core CPU a policy step on the
    # 256-group NMT took about 4x longer at 256 than at 128 units (bench/rl.py), and
    # 128 reached the better placements within the time budget (our choice).
    c.policy.hidden_size = 128
    c.policy.type_embedding_size = 32  # our choice
    c.policy.device_embedding_size = 32  # our choice
    c.policy.temperature = 10.0  # TF hierarchical placer default.
    c.policy.tanh_constant = 5.0  # TF hierarchical placer default.
    # Gaussian noise on the logits for the first steps, so that early samples
    # explore beyond what the untrained policy prefers: TF's hierarchical
    # placer (tensorflow/python/grappler/hierarchical_controller.py) uses std
    # 0.5 until step 750. 0 = none (the paper's method).
    c.policy.logits_noise_std = 0.5
    c.policy.logits_noise_steps = 750
    # A prior on the devices (our choice): the sampling logits of each group start biased by
    # -compute_prior x ln(its charge on the device / on its cheapest device), the charge being
    # its compute time there plus the mean over all groups (placer.rl.rl_math.compute_prior),
    # so the uniform start no longer sends a fifth of the groups to a CPU that runs them several
    # times slower; ties (the four GPUs) stay even. 0 = uniform (the paper's method). docs/rl.md.
    c.policy.compute_prior = 0.0
    # Softmax temperature schedule: "constant" (the paper's method and TF's
    # placer), "linear" or "exponential" from `temperature` to
    # `temperature_end` over `temperature_decay_steps` steps (annealing from a
    # flat to a sharp sampling distribution; our choice, off by default).
    c.policy.temperature_schedule = "constant"
    c.policy.temperature_end = 10.0
    c.policy.temperature_decay_steps = 0
    # The encoder reading the groups (placer/rl/encoders.py registry); the paper's is a bidirectional LSTM.
    c.policy.encoder = "bilstm"
    # The graph policy ("gnn", placer/rl/graph_policy.py; our choices): hidden units, message-passing
    # rounds, and its softmax temperature, which replaces `temperature` when it is trained.
    c.policy.gnn_hidden_size = 64
    c.policy.gnn_layers = 3
    c.policy.gnn_temperature = 1.0
    c.policy.gnn_tanh_constant = 3.0  # logits bound; 5 and none let it collapse onto one device (bench/transfer.py)
    # placer-train only: a [groups, devices] table of logits learned on the trained graph alone,
    # times this scale (a larger step for it under Adam), beside the shared weights; 0 = none.
    # The shared weights alone barely moved a fine-tuned policy's samples (bench/transfer.py).
    c.policy.gnn_group_bias_scale = 10.0

    c.train = ml_collections.ConfigDict()
    # The learned method (placer/rl/methods.py registry): "seq2seq" is the paper's policy trained by
    # REINFORCE (or PPO, below); "learned_moves" and "cost_model" are annealing with learned
    # proposals or with a learned cost model screening them; "*_off" are their learning-off
    # ablations and "annealing" the plain search. Chosen by bench/budget.py (docs/rl.md).
    c.train.method = "seq2seq"
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
    # Update rule: "reinforce" (the paper: one policy-gradient step per batch)
    # or "ppo" (Schulman et al. 2017, "Proximal Policy Optimization
    # Algorithms"; used for placement by Gao et al. 2018, "Post"):
    # `epochs_per_batch` steps on each batch with the probability ratio
    # clipped to 1 +- `ppo_clip`.
    c.train.algorithm = "ppo"
    c.train.ppo_clip = 0.2  # Schulman et al. 2017.
    c.train.epochs_per_batch = 4  # Post (Gao et al. 2018) uses several; our choice of 4.
    # Per-batch advantage normalisation (zero mean, unit std; PPO's reference
    # code): the step size then does not depend on the reward scale. False =
    # the paper's raw reward minus baseline.
    c.train.normalise_advantages = True
    # Entropy bonus (Williams and Peng 1991; Mnih et al. 2016, "A3C") against
    # early collapse onto one device, decayed by `entropy_schedule` to
    # `entropy_end` over `entropy_decay_steps` steps; 0 = none (the paper).
    c.train.entropy_weight = 0.01
    c.train.entropy_schedule = "linear"
    c.train.entropy_end = 0.0
    c.train.entropy_decay_steps = 1000
    # Cross-entropy-method elite update (Gao et al. 2018, "Post"): the policy
    # also maximises the mean log-likelihood per group of the best
    # `elite_fraction` of each batch, weighted by `elite_weight`; 0 = none.
    c.train.elite_fraction = 0.125
    c.train.elite_weight = 0.1
    # Self-imitation (Oh et al. 2018, "Self-Imitation Learning"): the best
    # `elite_memory` distinct placements measured so far also join that elite
    # term at every update, so a rare good sample keeps pulling the policy; 0 = none.
    c.train.elite_memory = 0
    c.train.failing_step_time = 100.0  # seconds for a failed sample (TF hierarchical placer).
    c.train.drop_failures_after = 0  # steps after which failed samples leave the update; 0 = never.
    c.train.checkpoint_every = 50  # steps between checkpoints (our choice).
    # Supervised warm start (our addition to the paper's method): imitate the
    # fastest of these baselines before REINFORCE, and record it as the best at
    # step 0; "all" = every registered baseline that does not search by
    # measuring, single_gpu included; "" = start from scratch.
    c.train.warm_start = "all"
    # Maximum-likelihood steps on that placement: until the policy's greedy
    # placement equals it, at most this many (our choice).
    c.train.warm_start_steps = 500
    c.train.warm_start_learning_rate = 0.005  # Adam, for those steps (our choice: 0.02 and up diverged on NMT).
    # Measure placements op by op (our choice): simulating each group's ops back
    # to back is faster but overestimated NMT step times by up to 40%.
    c.train.measure_op_level = True
    return c


def paper_method(placer: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """Switches `config.placer` to the paper's update rule, from scratch (Mirhoseini et al. 2017).

    REINFORCE with a moving-average baseline on the raw reward, one update per
    batch, no entropy bonus, no logits noise, no elite update, a constant
    temperature and no warm start. Returns `placer`, changed in place.
    """
    placer.train.algorithm = "reinforce"
    placer.train.normalise_advantages = False
    placer.train.entropy_weight = 0.0
    placer.train.elite_fraction = 0.0
    placer.train.elite_memory = 0
    placer.train.warm_start = ""
    placer.policy.logits_noise_std = 0.0
    placer.policy.compute_prior = 0.0
    placer.policy.temperature_schedule = "constant"
    return placer


ALGORITHMS = ("reinforce", "ppo")


def check_placer_config(placer: ml_collections.ConfigDict) -> None:
    """Checks the option values of `config.placer` that name a choice.

    Raises:
      InputError: one line naming the field, the value and the valid ones.
    """
    choices = {
        "train.algorithm": ALGORITHMS,
        "train.entropy_schedule": SCHEDULES,
        "policy.temperature_schedule": SCHEDULES,
    }
    for field, valid in choices.items():
        section, key = field.split(".")
        value = placer[section].get(key)
        if value not in valid:
            raise InputError(f"--config.placer.{field}: unknown value {value!r} (valid: {', '.join(valid)})")
    if placer.policy.get("compute_prior", 0.0) < 0:
        raise InputError(f"--config.placer.policy.compute_prior must be at least 0, got {placer.policy.compute_prior}")
    if placer.train.get("epochs_per_batch", 1) < 1:
        raise InputError(
            f"--config.placer.train.epochs_per_batch must be at least 1, got {placer.train.epochs_per_batch}"
        )


# The annealing schedules (placer.rl.rl_math.scheduled).
SCHEDULES = ("constant", "linear", "exponential")


def attach(
    config: ml_collections.ConfigDict, cluster: str = "k80x4", measure: str = "sim"
) -> ml_collections.ConfigDict:
    """Adds the shared sections to a model config and returns it."""
    config.placer = placer_config()
    config.cluster = cluster  # preset name in configs/clusters or a JSON path.
    config.measure = measure  # sim | grappler | session
    # Where placements are measured: "inprocess" (one after another) or "ray" (`workers` Ray actors, each
    # with its own backend, in parallel; placer.measure.ray_pool); "" = start a local Ray unless one runs.
    config.engine = "inprocess"
    config.workers = 1
    config.ray_address = ""
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
