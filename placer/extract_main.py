"""placer-extract: a training graph, extracted with op costs, grouped and summarised.

  placer-extract --config=configs/nmt.py:tiny --cluster=k80x4 --out=nmt.graph.json.gz
  placer-extract --model=examples/tiny_cnn.py:tiny_cnn --batch_size=8 --cluster=local:4 --out=tiny.graph.json.gz
  placer-extract --metagraph=model.meta --name=mymodel --costs=profile --out=mymodel.graph.json
  placer-extract --graph=nmt.graph.json.gz

The written graph carries a cost per op for each device type of --cluster
(Grappler's analytical model by default; --costs=profile times the ops on
this machine's devices; --costs=none writes none, and then the graph cannot
be placed). Prints the number of ops, edges (data / control), groups, op
types (and the most common ones), the device types with costs, and the
extraction and grouping wall times. Bad input (unknown model, missing or
corrupt config, metagraph or graph file) is one line "error: ..." on stderr
and exit status 2, and nothing is written.
"""

from __future__ import annotations

from absl import flags
from ml_collections import config_flags

from placer import cli, cli_flags
from placer.core import atomic, io
from placer.core.errors import InputError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_MODEL, _BATCH_SIZE = cli_flags.define_model_flags(__name__)
_METAGRAPH = flags.DEFINE_string("metagraph", None, "MetaGraphDef file (binary or text) instead of --config.")
_NAME = flags.DEFINE_string("name", None, "Graph name for --metagraph (default: the file name).")
_OUT = flags.DEFINE_string("out", None, "Write the extracted graph here as graph JSON (.gz = gzip).")
_COSTS = flags.DEFINE_enum(
    "costs",
    "grappler",
    ["grappler", "profile", "none"],
    "Op costs to attach: Grappler's model of each device type of --cluster, times profiled on this machine, or none.",
)
_GRAPH, _CLUSTER = cli_flags.define_flags(
    __name__,
    "graph",
    "cluster",
    notes={"graph": "No extraction, just grouping.", "cluster": "Its device types get Grappler costs."},
)
_TARGET = flags.DEFINE_integer(
    "target_groups",
    None,
    "Coarsen to at most this many groups (0 = none; default: the config's, else 256).",
    lower_bound=0,
)
_SCOPE = flags.DEFINE_integer(
    "scope_depth",
    None,
    "Ops in different name scopes at this depth never share a group (0 = names not read; default: the config's, else 0).",
    lower_bound=0,
)
_DEVICES = flags.DEFINE_integer(
    "devices",
    None,
    "Devices the groups will be placed on; sets the grouping's floor, max(8 x devices, 32) (default: --cluster's "
    "devices, k80x4: 5).",
)
_WARM_START = flags.DEFINE_string(
    "warm_start",
    "all",
    "Baselines whose fastest placement warm-started methods keep expressible (placer-train's "
    "config.placer.train.warm_start): the groups they place are printed too; '' = not printed.",
)
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --out file.")
_TOP = flags.DEFINE_integer("top_types", 10, "How many of the most common op types to print.", lower_bound=0)


def main(argv: list[str]) -> None:
    del argv
    if _OUT.value:
        inputs = {"graph": _GRAPH.value, "metagraph": _METAGRAPH.value, "cluster": _CLUSTER.value}
        inputs["config"] = cli.config_file(_CONFIG)
        inputs["model"] = cli_flags.model_file(_MODEL)
        atomic.check_output_file(_OUT.value, "out", overwrite=_OVERWRITE.value, inputs=inputs)
    from graphs import extract_lib  # noqa: PLC0415

    if _DEVICES.value is not None and _DEVICES.value <= 0:
        raise InputError(f"--devices must be positive, got {_DEVICES.value}")
    config = cli_flags.with_model(_CONFIG.value, _MODEL, _BATCH_SIZE)
    if sum(1 for s in (config is not None, _METAGRAPH.value, _GRAPH.value) if s) != 1:
        raise InputError("give exactly one of --config (or --model), --metagraph, --graph")
    spec = cli_flags.cluster_spec(_CLUSTER.value, config)
    cluster = cli.load_cluster(spec)
    if _GRAPH.value:
        if flags.FLAGS["costs"].present:
            raise InputError("--costs needs --config or --metagraph (a --graph file keeps its costs)")
        extracted = extract_lib.from_file(_GRAPH.value)
    elif config is not None:
        extracted = extract_lib.from_config(config, cluster, _COSTS.value)
    else:
        extracted = extract_lib.from_metagraph(_METAGRAPH.value, _NAME.value, cluster, _COSTS.value)
    if _SCOPE.value is not None:
        extracted.grouping_options["scope_depth"] = _SCOPE.value
    devices = _DEVICES.value or cluster.num_devices
    lines = extract_lib.summary(extracted, _TARGET.value, _TOP.value, num_devices=devices)
    if _DEVICES.value is None and _WARM_START.value:
        lines.extend(_placed_lines(extracted, config, cluster))
    if _OUT.value:
        io.save(extracted.graph, _OUT.value)
        lines.append(f"wrote {_OUT.value}")
    print("\n".join(lines))


def _placed_lines(extracted, config, cluster) -> list[str]:
    """What placer-train would place on --cluster: the groups of methods that choose their own start and
    of the warm-started ones (which keep the fastest baseline's devices apart)."""
    from configs import common  # noqa: PLC0415 (ml_collections configs)
    from graphs import pipeline  # noqa: PLC0415 (TensorFlow)
    from placer.rl import methods, starts  # noqa: PLC0415 (TensorFlow)

    graph = extracted.graph
    try:
        pipeline.require_costs(graph, cluster, graph.name)
    except InputError:
        return [f"groups placed: not known (no costs for {cluster.name}'s device types)"]
    placer = common.placer_config() if config is None or "placer" not in config else config.placer
    placer.grouping.update({k: v for k, v in extracted.grouping_options.items() if k in placer.grouping})
    if _TARGET.value is not None:
        placer.grouping.target_groups = _TARGET.value
    placer.train.warm_start = _WARM_START.value
    plain, warm_groups, warm = starts.placed_groups(graph, cluster, placer, log=lambda *_: None)
    own = [m for m in methods.names() if not methods.uses_warm_start(m)]
    warmed = [m for m in methods.names() if methods.uses_warm_start(m)]
    lines = [
        f"groups placed on {cluster.name}: {plain.num_groups} by methods that choose their own start ({', '.join(own)})"
    ]
    if warm_groups is not None:
        kept = f"{warm[1].metadata.get('method')}'s devices kept apart" if warm else "no baseline ran"
        lines.append(f"groups placed on {cluster.name}: {warm_groups.num_groups} by warm-started methods "
                     f"({', '.join(warmed)}; {kept})")  # fmt: skip
    return lines


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
