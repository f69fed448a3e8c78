"""placer-pretrain: train one graph policy on many graphs and clusters.

Example:
  placer-pretrain --config=configs/pretrain.py:small --workdir=/tmp/policy --steps=300
  placer-pretrain --config=configs/pretrain.py:small --workdir=/tmp/policy --steps=600 --resume
  placer-pretrain --config=configs/pretrain.py:small --workdir=/tmp/policy --steps=300 --engine=ray --workers=2

Writes WORKDIR/policy.json (policy kind, sizes, feature layout, training and
held-out lists), WORKDIR/checkpoints/ and WORKDIR/tensorboard/.
"""

from absl import flags
from ml_collections import config_flags

from placer import cli, cli_flags
from placer.core import configs_util

_CONFIG = config_flags.DEFINE_config_file(
    "config", configs_util.resolve("configs/pretrain.py"), "Pretraining config, e.g. configs/pretrain.py:small."
)
_STEPS = flags.DEFINE_integer("steps", 1000, "Total policy-gradient steps (counting resumed ones).")
_MAX_MINUTES = flags.DEFINE_float(
    "max_minutes",
    0.0,
    "Stop after this many minutes of wall time (0 = no limit), as placer-train does.",
    lower_bound=0.0,
)
_WORKDIR, _SEED, _RESUME, _PROGRESS = cli_flags.define_flags(
    __name__, "workdir", "seed", "resume", "progress", required=["workdir"], notes={"workdir": "The policy's."}
)
_ENGINE, _WORKERS, _RAY_ADDRESS = cli_flags.define_flags(__name__, "engine", "workers", "ray_address")

WRITES = ("policy.json", "checkpoints", "tensorboard")  # what --workdir receives


def main(argv):
    del argv
    from placer.core import locks, stop  # noqa: PLC0415

    locks.claim_workdir(_WORKDIR.value, inputs={"config": cli.config_file(_CONFIG)}, owned=WRITES)
    config = _CONFIG.value
    cli_flags.set_engine(config, _ENGINE, _WORKERS, _RAY_ADDRESS)
    from placer.rl import pretrain_lib  # noqa: PLC0415 (imports TensorFlow)

    with stop.on_signals() as request:  # SIGINT/SIGTERM: pretraining ends after its step and saves
        summary = pretrain_lib.run(
            config,
            workdir=_WORKDIR.value,
            steps=_STEPS.value,
            seed=_SEED.value,
            resume=_RESUME.value,
            progress=_PROGRESS.value,
            max_seconds=60.0 * _MAX_MINUTES.value,
        )
    cli.exit_if_stopped(request, summary["steps"])


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
