"""placer-place: place a graph zero-shot with a pretrained policy (placer-pretrain).

Example:
  placer-place --policy=/tmp/policy --graph=g.graph.json --cluster=k80x4 --out=placement.json
  placer-place --policy=/tmp/policy --config=configs/nmt.py:layers=8 --cluster=h100x8 --out=p.json

Measures the policy's greedy placement and --samples sampled ones (fewer when
--max_seconds runs out) with the simulator, writes the fastest to --out, and
prints it beside the baselines.
A graph whose feature layout the policy cannot read is refused in one line
(exit status 2).
"""

from absl import flags
from ml_collections import config_flags

from placer import cli

DEFAULT_SAMPLES = 64  # sampled placements without --samples or --max_seconds

_POLICY = flags.DEFINE_string("policy", None, "Policy folder written by placer-pretrain.", required=True)
_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:layers=8.")
_GRAPH = flags.DEFINE_string("graph", None, "Graph JSON file, or gen:FAMILY:OPS:SEED, instead of --config.")
_CLUSTER = flags.DEFINE_string("cluster", None, "Cluster preset or JSON file (default: the config's, else k80x4).")
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
_SEED = flags.DEFINE_integer("seed", 0, "Sampling seed.")
_OUT = flags.DEFINE_string("out", None, "Placement JSON file to write.", required=True)
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --out file.")


def main(argv):
    del argv
    from placer.core import atomic, fmt  # noqa: PLC0415
    from placer.core.errors import InputError  # noqa: PLC0415

    inputs = {"graph": _GRAPH.value, "cluster": _CLUSTER.value, "policy": _POLICY.value}
    inputs["config"] = cli.config_file(_CONFIG)
    atomic.check_output_file(_OUT.value, "out", overwrite=_OVERWRITE.value, inputs=inputs)
    from placer.rl import place_lib, transfer_lib  # noqa: PLC0415 (imports TensorFlow)

    samples = _SAMPLES.value if _SAMPLES.value is not None else (None if _MAX_SECONDS.value else DEFAULT_SAMPLES)
    if samples is not None and samples < 0:
        raise InputError(f"--samples must be at least 0, got {_SAMPLES.value}")
    if _MAX_SECONDS.value is not None and _MAX_SECONDS.value < 0:
        raise InputError(f"--max_seconds must be at least 0, got {_MAX_SECONDS.value}")
    if (_CONFIG.value is None) == (_GRAPH.value is None):
        raise InputError("give exactly one of --config and --graph")
    policy, _ = transfer_lib.load_policy(_POLICY.value)
    config = cli.config_or_default(_CONFIG.value, _GRAPH.value)
    cluster = cli.load_cluster(_CLUSTER.value or config.get("cluster", "k80x4"))
    if _GRAPH.value is not None:
        source = _GRAPH.value
        graph = transfer_lib.load_spec(source, cluster)
    else:
        from graphs import pipeline  # noqa: PLC0415

        source = f"--config ({config.model.name})"
        graph = pipeline.load_graph(cluster, config=config).graph
    result = place_lib.place(
        policy,
        graph,
        cluster,
        config.placer,
        samples=samples,
        seed=_SEED.value,
        source=source,
        max_seconds=_MAX_SECONDS.value,
    )
    result["placement"].save(_OUT.value)
    baselines = place_lib.baseline_times(graph, cluster, result["measurer"], seed=_SEED.value)
    print(place_lib.table(result, baselines))
    print(
        f"{graph.name} on {cluster.name}: {fmt.seconds(result['step_time'])}, best of the greedy placement and "
        f"{result['samples']} samples, in {fmt.seconds(result['seconds'])} of wall time; wrote {_OUT.value}"
    )


def run():
    cli.run_main(main)


if __name__ == "__main__":
    run()
