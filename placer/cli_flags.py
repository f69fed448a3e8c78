"""The flags the binaries share, each defined once, and the model and engine flags' meaning.

A binary declares the shared flags it uses (`define_flags`), so every one
has the same name, help and default everywhere; `--model` and `--batch_size`
(`define_model_flags`, `with_model`) turn a user's Keras model into the
config section a `--config` model would give.
"""

from __future__ import annotations

from absl import flags

from placer.core.errors import InputError


class _ResumeParser(flags.BooleanParser):
    """A boolean flag's parser that also takes "restart" (--resume=restart)."""

    def parse(self, argument):
        if isinstance(argument, str) and argument.lower() == "restart":
            return "restart"
        return super().parse(argument)


def define_resume(help_text: str, module_name: str | None = None):
    """Defines --resume: bare (or true) continues the run in --workdir, --resume=restart starts it over
    when its inputs changed since the checkpoint (placer/core/resume_check.py), --noresume is off.

    Returns:
      The flag holder; its value is False, True or "restart".
    """
    flag = flags.BooleanFlag(
        "resume",
        False,
        help_text + " --resume=restart: start over, said aloud, when the "
        "graph, costs, cluster, input file, method or config changed since the checkpoint.",
    )
    flag.parser = _ResumeParser()
    return flags.DEFINE_flag(flag, module_name=module_name)


def set_engine(config, engine, workers, ray_address) -> None:
    """Copies the engine flags into a run config, after checking them (Ray installed for --engine=ray).

    Raises:
      InputError: as placer.measure.registry.check_engine.
    """
    from placer.measure import registry  # noqa: PLC0415 (no TensorFlow)

    registry.check_engine(engine.value, workers.value, ray_address.value or "")
    config.engine = engine.value
    config.workers = workers.value
    config.ray_address = ray_address.value or ""


# The flags several binaries share, defined once: name -> (absl DEFINE function, default, help, its other
# arguments). Each binary declares the ones it uses with `define_flags`.
SHARED_FLAGS = {
    "graph": (
        flags.DEFINE_string,
        None,
        "Graph JSON file with costs (docs/formats.md) instead of --config's model.",
        {},
    ),
    "cluster": (
        flags.DEFINE_string,
        None,
        "Cluster preset (configs/clusters), JSON file, or 'local[:N]' (this machine's devices); "
        "default: the config's cluster, else k80x4.",
        {},
    ),
    "measure": (
        flags.DEFINE_enum,
        "sim",
        "Measurement backend: the simulator, Grappler's cost model, or real TF sessions.",
        {"enum_values": ["sim", "grappler", "session"]},
    ),
    "seed": (flags.DEFINE_integer, 0, "Random seed: the same seed gives the same result.", {}),
    "workdir": (flags.DEFINE_string, None, "Output folder.", {}),
    "resume": (flags.DEFINE_bool, False, "Continue the run saved in --workdir.", {}),
    "progress": (flags.DEFINE_bool, True, "Show a progress line.", {}),
    "engine": (
        flags.DEFINE_enum,
        "inprocess",
        "Where placements are measured: in this process, or on Ray actors.",
        {"enum_values": ["inprocess", "ray"]},
    ),
    "workers": (
        flags.DEFINE_integer,
        1,
        "With --engine=ray: Ray actors measuring a step's placements in parallel.",
        {"lower_bound": 1},
    ),
    "ray_address": (
        flags.DEFINE_string,
        None,
        "With --engine=ray: the Ray cluster to join (default: start a local Ray).",
        {},
    ),
}


def define_flags(module_name: str, *names: str, required=(), defaults=None, notes=None) -> tuple:
    """Defines the shared flags `names` (SHARED_FLAGS) for one binary; returns their holders in that order.

    Args:
      module_name: the binary's module, which the flags are listed under in its --help.
      *names: keys of SHARED_FLAGS.
      required: the names the binary cannot run without.
      defaults: {name: default} where the binary's differs from SHARED_FLAGS'.
      notes: {name: sentence} added to the shared help for this binary.
    """
    defaults, notes = defaults or {}, notes or {}
    holders = []
    for name in names:
        define, default, text, extra = SHARED_FLAGS[name]
        text = f"{text} {notes[name]}" if name in notes else text
        value = defaults.get(name, default)
        holders.append(define(name, value, help=text, required=name in required, module_name=module_name, **extra))
    return tuple(holders)


def cluster_spec(flag_value: str | None, config) -> str:
    """The cluster a run uses: --cluster, else the config's (None: no config), else k80x4."""
    return flag_value or (config.get("cluster") if config is not None else None) or "k80x4"


def define_model_flags(module_name: str):
    """Defines --model and --batch_size (your own Keras model, docs/own_model.md); returns their holders.

    Args:
      module_name: the binary's module, which the flags are listed under.
    """
    from models.registry import DEFAULT_BATCH_SIZE  # noqa: PLC0415 (no TensorFlow)

    return (
        flags.DEFINE_string(
            "model",
            None,
            "Your own Keras model instead of --config: FILE.py:FUNCTION (FUNCTION() returns a compiled tf_keras "
            "model with fixed input shapes but the batch) or FILE.keras (a saved compiled tf_keras model); "
            "see docs/own_model.md.",
            module_name=module_name,
        ),
        flags.DEFINE_integer(
            "batch_size",
            DEFAULT_BATCH_SIZE,
            "With --model: examples per training step (synthetic inputs and targets made in the graph).",
            lower_bound=1,
            module_name=module_name,
        ),
    )


def with_model(config, model, batch_size):
    """The config a binary runs: --config's, or with --model, a model section for the user's model.

    Args:
      config: the parsed --config (None when not given; a config without a
        model section, such as configs/common.py, takes --model's).
      model, batch_size: the FlagHolders of define_model_flags.

    Returns:
      The config (the same object as `config` when --model is not given).

    Raises:
      InputError: --model with a config that has a model, --batch_size
        without --model, or a malformed --model.
    """
    if model.value is None:
        if flags.FLAGS[batch_size.name].present:
            raise InputError("--batch_size needs --model (a --config model sets it as --config.model.batch_size=N)")
        return config
    from models import registry  # noqa: PLC0415 (no TensorFlow)

    if config is None:
        from configs import common  # noqa: PLC0415

        config = common.get_config()
    elif "model" in config:
        raise InputError("give one of --config=configs/MODEL.py and --model=FILE.py:FUNCTION, not both")
    section = registry.user_model_config(model.value, batch_size.value)
    with config.unlocked():  # ml_collections locks a config file's fields
        config.model = section
    return config


def model_file(model) -> str | None:
    """The file --model names (a FlagHolder of define_model_flags), or None."""
    if model.value is None:
        return None
    from models import registry  # noqa: PLC0415

    return registry.source_file(model.value)
