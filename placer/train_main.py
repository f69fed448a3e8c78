"""placer-train: learn a placement with one of the learned methods (placer.rl.methods).

Example:
  placer-train --config=configs/nmt.py --cluster=k80x4 --measure=sim \
      --workdir=/tmp/nmt --max_placements=4000 --seed=0 --config.placer.train.method=seq2seq
  placer-train --config=configs/nmt.py:tiny --cluster=local:2 --measure=session \
      --engine=ray --workers=2 --workdir=/tmp/nmt-ray --steps=20
"""

from absl import flags
from ml_collections import config_flags

from configs import common
from placer import cli
from placer.core import locks, stop

_CONFIG = config_flags.DEFINE_config_file(
    "config",
    common.__file__,
    "Model config file, e.g. configs/nmt.py or configs/nmt.py:tiny (default: configs/common.py, the search "
    "settings without a model, for --graph); any field can be overridden, e.g. --config.placer.train.steps=10.",
)
_GRAPH = flags.DEFINE_string("graph", None, "Graph JSON file to place instead of the config's model.")
_CLUSTER = flags.DEFINE_string("cluster", None, "Cluster preset or JSON file (default: the config's).")
_MEASURE = flags.DEFINE_enum("measure", None, ["sim", "grappler", "session"], "Measurement backend.")
_WORKDIR = flags.DEFINE_string("workdir", None, "Output folder.", required=True)
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
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")
_RESUME = cli.define_resume("Continue the search saved in --workdir, if made from the same inputs.")
_MAX_MINUTES = flags.DEFINE_float(
    "max_minutes", 0.0, "Stop training after this many minutes of wall time (0 = no limit); results are still written."
)
_PROGRESS = flags.DEFINE_bool("progress", True, "Show a progress line.")
_INIT_FROM = flags.DEFINE_string(
    "init_from",
    None,
    "seq2seq: a placer-pretrain policy folder to fine-tune (the graph policy); learned_moves: the --workdir of an "
    "earlier learned_moves search (any graph), whose learned move weights start this one.",
)
_ENGINE, _WORKERS, _RAY_ADDRESS = cli.define_engine_flags(__name__)

WRITES = (
    "run.json", "history.json", "curve.csv", "summary.json", "best_placement.json", "checkpoints", "tensorboard",
    "search.json", "best_curve.csv", "learner.json", "inputs.json",
)  # fmt: skip


def main(argv):
    del argv
    inputs = {"graph": _GRAPH.value, "cluster": _CLUSTER.value, "init_from": _INIT_FROM.value}
    locks.claim_workdir(_WORKDIR.value, inputs=inputs, owned=WRITES)
    from placer.rl import train_lib  # noqa: PLC0415 (imports TensorFlow)

    config = cli.config_or_default(_CONFIG.value, _GRAPH.value)
    if _CLUSTER.value:
        config.cluster = _CLUSTER.value
    if _MEASURE.value:
        config.measure = _MEASURE.value
    cli.set_engine(config, _ENGINE, _WORKERS, _RAY_ADDRESS)
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
