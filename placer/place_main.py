"""placer-place: place a graph with a pretrained policy (placer-pretrain).

Example:
  placer-place --policy=/tmp/policy --graph=g.graph.json --cluster=k80x4 --out=placement.json
  placer-place --policy=/tmp/policy --config=configs/nmt.py:layers=8 --cluster=h100x8 --out=p.json
  placer-place --policy=/tmp/policy --graph=gen:fanin:60:100 --method=zero_shot --samples=256 --out=p.json

By default runs `ce_or_annealing` started from the policy for --max_placements
measured placements (1,000: the way to use a pretrained policy measured best
in BENCHMARKS.md, "Learned search at equal budgets (earlier methods)"); any
placer-train method that starts from a policy can be named instead.
--method=zero_shot measures the policy's greedy placement and --samples
sampled ones (fewer when --max_seconds runs out) instead. Either way the
simulator measures, the fastest placement goes to --out (recording how many
placements were measured), and is printed beside the baselines. A graph
whose feature layout the policy cannot read is refused in one line (exit
status 2).
"""

from absl import flags
from ml_collections import config_flags

from placer import cli, cli_flags

DEFAULT_SAMPLES = 64  # sampled placements without --samples or --max_seconds

_POLICY = flags.DEFINE_string("policy", None, "Policy folder written by placer-pretrain.", required=True)
_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:layers=8.")
_MODEL, _BATCH_SIZE = cli_flags.define_model_flags(__name__)
_GRAPH, _CLUSTER, _SEED = cli_flags.define_flags(
    __name__, "graph", "cluster", "seed", notes={"graph": "Also gen:FAMILY:OPS:SEED, a generated graph."}
)
_SAMPLES = flags.DEFINE_integer(
    "samples",
    None,
    "Sampled placements measured besides the greedy one (default: 64, or as many as --max_seconds allows).",
)
_MAX_SECONDS = flags.DEFINE_float(
    "max_seconds",
    None,
    "Wall-time budget (s): no new chunk of samples starts past it; alone, samples until it is spent (default: no budget).",
)
_METHOD = flags.DEFINE_string(
    "method",
    "ce_or_annealing",
    "zero_shot, or a placer-train method started from the policy (ce_or_annealing, cross_entropy, seq2seq).",
)
_MAX_PLACEMENTS = flags.DEFINE_integer(
    "max_placements", 1000, "Measured placements of the search (not of --method=zero_shot, which takes --samples)."
)
_OUT = flags.DEFINE_string("out", None, "Placement JSON file to write.", required=True)
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --out file.")
_PROGRESS = flags.DEFINE_bool("progress", True, "Show the search's progress line (--noprogress: none).")


def main(argv):
    del argv
    from placer.core import atomic, fmt  # noqa: PLC0415
    from placer.core.errors import InputError  # noqa: PLC0415

    inputs = {"graph": _GRAPH.value, "cluster": _CLUSTER.value, "policy": _POLICY.value}
    inputs["config"] = cli.config_file(_CONFIG)
    inputs["model"] = cli_flags.model_file(_MODEL)
    atomic.check_output_file(_OUT.value, "out", overwrite=_OVERWRITE.value, inputs=inputs)
    from placer.rl import methods, place_lib, transfer_lib  # noqa: PLC0415 (imports TensorFlow)

    zero_shot = _METHOD.value == "zero_shot"
    takers = methods.policy_methods()
    if not zero_shot and _METHOD.value not in takers:
        raise InputError(
            f"--method: {_METHOD.value!r} is neither zero_shot nor a method started from a policy ({', '.join(takers)})"
        )
    if not zero_shot and _SAMPLES.value is not None:
        raise InputError(f"--samples is for --method=zero_shot; --method={_METHOD.value} takes --max_placements")
    if not zero_shot and _MAX_PLACEMENTS.value < 1:
        raise InputError(f"--max_placements must be at least 1, got {_MAX_PLACEMENTS.value}")
    samples = _SAMPLES.value if _SAMPLES.value is not None else (None if _MAX_SECONDS.value else DEFAULT_SAMPLES)
    if samples is not None and samples < 0:
        raise InputError(f"--samples must be at least 0, got {_SAMPLES.value}")
    if _MAX_SECONDS.value is not None and _MAX_SECONDS.value < 0:
        raise InputError(f"--max_seconds must be at least 0, got {_MAX_SECONDS.value}")
    given = cli_flags.with_model(_CONFIG.value, _MODEL, _BATCH_SIZE)
    if (given is None) == (_GRAPH.value is None):
        raise InputError("give exactly one of --config (or --model) and --graph")
    policy, _ = transfer_lib.load_policy(_POLICY.value)
    config = cli.config_or_default(given, _GRAPH.value)
    cluster = cli.load_cluster(cli_flags.cluster_spec(_CLUSTER.value, config))
    if _GRAPH.value is not None:
        source = _GRAPH.value
        graph = transfer_lib.load_spec(source, cluster)
    else:
        from graphs import pipeline  # noqa: PLC0415

        source = f"--config ({config.model.name})"
        graph = pipeline.load_graph(cluster, config=config).graph
    if zero_shot:
        result = place_lib.place(
            policy, graph, cluster, config.placer, samples=samples, seed=_SEED.value, source=source,
            max_seconds=_MAX_SECONDS.value,
        )  # fmt: skip
        how = f"best of the greedy placement and {result['samples']} samples"
    else:
        transfer_lib.make_task(graph, cluster, config.placer, None, source)  # the policy can read the graph
        result = place_lib.search(
            _POLICY.value, graph, cli_flags.cluster_spec(_CLUSTER.value, config), config, method=_METHOD.value,
            budget=_MAX_PLACEMENTS.value, seed=_SEED.value, max_seconds=_MAX_SECONDS.value, progress=_PROGRESS.value,
        )  # fmt: skip
        how = f"best of {result['placements']} placements {_METHOD.value} measured from the policy"
    result["placement"].save(_OUT.value)
    baselines = place_lib.baseline_times(graph, cluster, result["measurer"], seed=_SEED.value)
    print(place_lib.table(result, baselines))
    print(f"{graph.name} on {cluster.name}: {fmt.step_time(result['step_time'])}, {how}, in "
          f"{fmt.seconds(result['seconds'])} of wall time; wrote {_OUT.value}")  # fmt: skip


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
