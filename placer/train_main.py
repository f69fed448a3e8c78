"""placer-train: learn a placement with one of the learned methods (placer.rl.methods).

Example:
  placer-train --config=configs/nmt.py --cluster=k80x4 --measure=sim \
      --workdir=/tmp/nmt --max_placements=4000 --seed=0 --config.placer.train.method=seq2seq
  placer-train --config=configs/nmt.py:tiny --cluster=local:2 --measure=session \
      --engine=ray --workers=2 --workdir=/tmp/nmt-ray --steps=20
  placer-train --model=examples/tiny_cnn.py:tiny_cnn --batch_size=8 --cluster=local:4 \
      --workdir=/tmp/tiny --max_placements=200
"""

from absl import flags
from ml_collections import config_flags

from configs import common
from placer import cli, cli_flags
from placer.core import locks, stop

_CONFIG = config_flags.DEFINE_config_file(
    "config",
    common.__file__,
    "Model config file, e.g. configs/nmt.py or configs/nmt.py:tiny (default: configs/common.py, the search "
    "settings without a model, for --graph); any field can be overridden, e.g. --config.placer.train.steps=10.",
)
_MODEL, _BATCH_SIZE = cli_flags.define_model_flags(__name__)
_GRAPH, _CLUSTER, _MEASURE, _WORKDIR, _SEED, _PROGRESS = cli_flags.define_flags(
    __name__,
    "graph", "cluster", "measure", "workdir", "seed", "progress",
    required=["workdir"],
    defaults={"measure": None},
    notes={"measure": "Default: the config's."},
)  # fmt: skip
_STEPS = flags.DEFINE_integer(
    "steps",
    200,
    "Total rounds of the method (one batch of placements each; for seq2seq, one policy-gradient step); "
    "when only --max_placements is given it sets the limit alone. 0 = no limit.",
)
_MAX_PLACEMENTS = flags.DEFINE_integer(
    "max_placements",
    0,
    "Stop after this many measured placements in all, counting a warm start's baselines (0 = no limit).",
)
_RESUME = cli_flags.define_resume("Continue the search saved in --workdir, if made from the same inputs.", __name__)
_MAX_MINUTES = flags.DEFINE_float(
    "max_minutes", 0.0, "Stop training after this many minutes of wall time (0 = no limit); results are still written."
)
# What --init_from accepts, by the method's `init_from` (placer.rl.methods.init_from); a test checks it
# against the registry. Written out here: --help does not import the methods (TensorFlow).
INIT_FROM_ACCEPTS = {"policy": "a placer-pretrain policy folder"}
INIT_FROM_METHODS = {"policy": ("seq2seq", "cross_entropy", "ce_or_annealing")}
_INIT_FROM = flags.DEFINE_string(
    "init_from",
    None,
    "What the method starts from. "
    + "; ".join(f"{', '.join(INIT_FROM_METHODS[k])}: {v}" for k, v in INIT_FROM_ACCEPTS.items())
    + ". seq2seq fine-tunes the policy, the others of its list start from its placements' device shares. "
    "Other methods take none.",
)
_ENGINE, _WORKERS, _RAY_ADDRESS = cli_flags.define_flags(__name__, "engine", "workers", "ray_address")

WRITES = (
    "run.json", "history.json", "curve.csv", "summary.json", "best_placement.json", "checkpoints", "tensorboard",
    "search.json", "best_curve.csv", "learner.json", "inputs.json",
)  # fmt: skip


def main(argv):
    del argv
    inputs = {"graph": _GRAPH.value, "cluster": _CLUSTER.value, "init_from": _INIT_FROM.value}
    inputs["model"] = cli_flags.model_file(_MODEL)
    locks.claim_workdir(_WORKDIR.value, inputs=inputs, owned=WRITES)
    config = cli.config_or_default(cli_flags.with_model(_CONFIG.value, _MODEL, _BATCH_SIZE), _GRAPH.value)
    if config.placer.train.get("method") == "exact":
        from placer.measure import exact  # noqa: PLC0415 (OR-Tools, which must load before TensorFlow)

        exact.require_ortools()
    from placer.rl import train_lib  # noqa: PLC0415 (imports TensorFlow)

    if _CLUSTER.value:
        config.cluster = _CLUSTER.value
    if _MEASURE.value:
        config.measure = _MEASURE.value
    cli_flags.set_engine(config, _ENGINE, _WORKERS, _RAY_ADDRESS)
    with stop.on_signals() as request:  # SIGINT/SIGTERM: the search ends after its step and saves
        summary = train_lib.run(
            config,
            workdir=_WORKDIR.value,
            steps=_STEPS.value if _STEPS.present or not _MAX_PLACEMENTS.value else 0,
            max_placements=_MAX_PLACEMENTS.value,
            seed=_SEED.value,
            resume=_RESUME.value,
            graph_path=_GRAPH.value,
            progress=_PROGRESS.value,
            max_seconds=60.0 * _MAX_MINUTES.value,
            init_from=_INIT_FROM.value,
        )
    cli.exit_if_stopped(request, summary.get("steps", 0))


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
