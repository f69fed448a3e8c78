"""Config sections shared by every model config: the placer and its search.

Each model config (configs/rnnlm.py, nmt.py, inception_v3.py) attaches these
under `config.placer`, `config.cluster` and `config.measure`, so any field can
be overridden from the command line, e.g. `--config.placer.policy.hidden_size=256`.
"""

import ml_collections

from placer.core.errors import InputError


def grouping_config() -> ml_collections.ConfigDict:
    """`config.placer.grouping`: how ops become the groups the policy places (placer.core.grouping)."""
    c = ml_collections.ConfigDict()
    # Paper section 3 (co-location heuristics): merge an op into its only consumer.
    c.merge_single_consumer = True
    c.max_group_ops = 0  # ops per group at most; 0 = no cap (our choice).
    # Groups at most, by coarsening; 0 = no coarsening. Our choice: the paper's policy reads
    # a few hundred groups (NMT: 280).
    c.target_groups = 256
    # Groups at least, where merging stops; -1 = min(target_groups, max(8 x devices, 32)),
    # 0 = no floor. Our choice (docs/rl.md, "The grouping's floor").
    c.min_groups = -1
    # Name-scope depth that groups never cross (placer.core.op_names.scope_colors); 0 = names
    # not read. Our choice; 2 suits the RNN configs (docs/rl.md, "What the groups can express").
    c.scope_depth = 0
    # True = gradient ops join their forward op and update ops their variable, as TF's
    # colocate_gradients_with_ops would. Our choice: False (docs/rl.md, "Gradients apart from
    # their forward ops").
    c.colocate_gradients = False
    return c


def policy_config() -> ml_collections.ConfigDict:
    """`config.placer.policy`: the network that samples a device per group (placer/rl)."""
    c = ml_collections.ConfigDict()
    # LSTM units; TF's hierarchical placer uses 512, our choice of 128 (docs/rl.md, "Where the
    # defaults come from").
    c.hidden_size = 128
    c.type_embedding_size = 32  # units (our choice)
    c.device_embedding_size = 32  # units (our choice)
    c.temperature = 10.0  # softmax temperature (TF hierarchical placer default).
    c.tanh_constant = 5.0  # logits bound (TF hierarchical placer default).
    # Std of Gaussian noise on the logits for the first `logits_noise_steps` steps; 0 = none (the
    # paper). TF's hierarchical placer (tensorflow/python/grappler/hierarchical_controller.py):
    # 0.5 until step 750.
    c.logits_noise_std = 0.5
    c.logits_noise_steps = 750
    # Device prior (placer.rl.rl_math.compute_prior), a multiple of ln(charge ratio); 0 = uniform
    # start (the paper). Our choice (docs/rl.md, "A start that knows the devices").
    c.compute_prior = 0.0
    # Softmax temperature schedule (placer.rl.rl_math.scheduled): "constant" (the paper and TF's
    # placer), "linear" or "exponential" from `temperature` to `temperature_end` over
    # `temperature_decay_steps` steps (our choice, off by default).
    c.temperature_schedule = "constant"
    c.temperature_end = 10.0
    c.temperature_decay_steps = 0
    # The encoder reading the groups (placer/rl/encoders.py registry); the paper's is a bidirectional LSTM.
    c.encoder = "bilstm"
    # The graph policy ("gnn", placer/rl/graph_policy.py; our choices): hidden units, message-passing
    # rounds, and its softmax temperature, which replaces `temperature` when it is trained.
    c.gnn_hidden_size = 64
    c.gnn_layers = 3
    c.gnn_temperature = 1.0
    c.gnn_tanh_constant = 3.0  # logits bound (our choice, bench/transfer.py).
    # placer-train only: a [groups, devices] logits table learned on the trained graph alone, times
    # this scale, beside the shared weights; 0 = none (our choice, bench/transfer.py).
    c.gnn_group_bias_scale = 10.0
    return c


def train_config() -> ml_collections.ConfigDict:
    """`config.placer.train`: the policy-gradient search (placer.rl.reinforce)."""
    c = ml_collections.ConfigDict()
    # The search method (placer/rl/methods.py registry; docs/methods.md). "annealing_warm", annealing from
    # the fastest baseline, is the best on the benchmark suite's test split at 256, 1,000 and 4,000
    # placements (BENCHMARKS.md, "Suite"); "seq2seq" is the paper's policy, trained by REINFORCE (or PPO).
    c.method = "annealing_warm"
    # False = the method's learning-off ablation (methods whose config class has `learning`).
    c.learning = True
    # Placements per policy update; TF's hierarchical placer samples 4 (our choice of 16:
    # the simulator measures one in milliseconds).
    c.samples_per_step = 16
    # Adam step size; TF's hierarchical placer uses 0.1 (our choice, docs/rl.md, "Where the
    # defaults come from").
    c.learning_rate = 0.002
    c.lr_decay_steps = 0  # steps per decay; 0 = constant learning rate.
    c.lr_decay_rate = 0.96  # factor per `lr_decay_steps`.
    c.clip_norm = 1.0  # gradient-norm clipping (TF hierarchical placer).
    # Compile the policy's update with XLA: "on", "off", or "auto" (our choice): on when groups x hidden
    # size >= 16,384, where the compiling pays for itself (docs/rl.md).
    c.jit_compile = "auto"
    c.baseline_decay = 0.9  # EMA baseline (TF hierarchical placer).
    # Update rule: "reinforce" (the paper: one policy-gradient step per batch) or "ppo"
    # (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"; for placement, Gao et
    # al. 2018, "Post"): `epochs_per_batch` steps per batch, ratio clipped to 1 +- `ppo_clip`.
    c.algorithm = "ppo"
    c.ppo_clip = 0.2  # Schulman et al. 2017.
    c.epochs_per_batch = 4  # Post (Gao et al. 2018) uses several; our choice of 4.
    # Per-batch advantage normalisation (PPO's reference code); False = the paper's raw reward
    # minus baseline.
    c.normalise_advantages = True
    # Entropy bonus (Williams and Peng 1991; Mnih et al. 2016, "A3C"), decayed by
    # `entropy_schedule` to `entropy_end` over `entropy_decay_steps` steps; 0 = none (the paper).
    c.entropy_weight = 0.01
    c.entropy_schedule = "linear"
    c.entropy_end = 0.0
    c.entropy_decay_steps = 1000
    # Cross-entropy-method elite update (Gao et al. 2018, "Post"): the mean log-likelihood per
    # group of the best `elite_fraction` of each batch, weighted by `elite_weight`; 0 = none.
    c.elite_fraction = 0.125
    c.elite_weight = 0.1
    # Self-imitation (Oh et al. 2018): the best `elite_memory` distinct placements so far join the
    # elite term at every update; 0 = none.
    c.elite_memory = 0
    c.failing_step_time = 100.0  # seconds for a failed sample (TF hierarchical placer).
    c.drop_failures_after = 0  # steps after which failed samples leave the update; 0 = never.
    c.checkpoint_every = 50  # steps between checkpoints (our choice).
    # Supervised warm start (our addition): imitate the fastest of these baselines first and
    # record it as the best at step 0; "all" = every registered baseline that does not search
    # by measuring, single_gpu included; "" = from scratch.
    c.warm_start = "all"
    # With warm_start "all", graphs of more ops than this skip the list-scheduling baselines, the
    # slowest to place (BENCHMARKS.md, "Baseline placement time"); 0 = never skip (our choice: every
    # model graph of configs/ is below it).
    c.warm_start_list_scheduling_max_ops = 50_000
    c.warm_start_steps = 500  # imitation steps at most, until the greedy placement matches (our choice).
    c.warm_start_learning_rate = 0.005  # Adam, for those steps (our choice, docs/rl.md).
    # Measure placements op by op (our choice; docs/rl.md, "Where the defaults come from").
    c.measure_op_level = True
    # Method "exact" (docs/exact.md): seconds its CP-SAT solve searches after annealing, and its threads
    # (our choice: the solve of a 300-op graph's groups finds most of its gains within a minute).
    c.exact_seconds = 60.0
    c.exact_workers = 1
    return c


def placer_config() -> ml_collections.ConfigDict:
    """Returns `config.placer`: the grouping, policy and REINFORCE settings with their sources."""
    c = ml_collections.ConfigDict()
    c.grouping = grouping_config()
    c.policy = policy_config()
    c.train = train_config()
    return c


def paper_method(placer: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """Switches `config.placer` to the paper's method and update rule, from scratch (Mirhoseini et al. 2017).

    The seq2seq policy; REINFORCE with a moving-average baseline on the raw reward, one update per
    batch, no entropy bonus, no logits noise, no elite update, a constant
    temperature and no warm start. Returns `placer`, changed in place.
    """
    placer.train.method = "seq2seq"
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
JIT_COMPILE = ("auto", "on", "off")  # train.jit_compile


def check_placer_config(placer: ml_collections.ConfigDict) -> None:
    """Checks the option values of `config.placer` that name a choice.

    Raises:
      InputError: one line naming the field, the value and the valid ones.
    """
    choices = {
        "train.algorithm": ALGORITHMS,
        "train.entropy_schedule": SCHEDULES,
        "train.jit_compile": JIT_COMPILE,
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
