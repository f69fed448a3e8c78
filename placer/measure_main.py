"""placer-measure: the step time of one placement, by simulation, Grappler or a real session.

  placer-measure --graph=nmt.graph.json.gz --cluster=k80x4 --placement=best.placement.json
  placer-measure --config=configs/nmt.py:tiny --cluster=k80x4 --baseline=single_gpu --trace=step.trace.json
  placer-measure --config=configs/nmt.py:tiny --cluster=k80x4 --placement=p.json --measure=grappler

Prints the step time (or the failure), the busy time and peak memory of each
device, the bytes moved between devices, and the ratio of the step time to
the lower bound of placer/measure/bounds.py (with the term that binds), for a
placement of the exact placer its model makespan and proven bound (and a line
when the step time is more than 5% from the makespan), and a FLAGGED line when the
backend costed some op under this placement over 10% below its unplaced
cost (placer/measure/cost_guard.py). Bad input (a bad cluster spec,
a placement for another graph or naming a device missing from the cluster)
is one line "error: ..." on stderr and exit status 2.
"""

from __future__ import annotations

from absl import flags
from ml_collections import config_flags

from placer import cli, cli_flags
from placer.core import atomic
from placer.core.errors import InputError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_MODEL, _BATCH_SIZE = cli_flags.define_model_flags(__name__)
_GRAPH, _CLUSTER, _MEASURE = cli_flags.define_flags(__name__, "graph", "cluster", "measure")
_PLACEMENT = flags.DEFINE_string("placement", None, "Placement JSON file (docs/formats.md).")
_BASELINE = flags.DEFINE_string("baseline", None, "Instead of --placement: a baseline method (baselines/registry).")
_TRACE = flags.DEFINE_string("trace", None, "Write a Chrome trace of the simulated step here (--measure=sim).")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --trace file.")


def main(argv: list[str]) -> None:
    del argv
    from graphs import pipeline  # noqa: PLC0415
    from placer.measure import measure_lib, registry  # noqa: PLC0415

    measure_lib.check_flags(_MEASURE.value, _TRACE.value is not None, _PLACEMENT.value, _BASELINE.value)
    config = cli_flags.with_model(_CONFIG.value, _MODEL, _BATCH_SIZE)
    if (config is None) == (_GRAPH.value is None):
        raise InputError("give exactly one of --config (or --model) and --graph")
    if _TRACE.value:
        inputs = {"graph": _GRAPH.value, "placement": _PLACEMENT.value, "cluster": _CLUSTER.value}
        inputs["config"] = cli.config_file(_CONFIG)
        inputs["model"] = cli_flags.model_file(_MODEL)
        atomic.check_output_file(_TRACE.value, "trace", overwrite=_OVERWRITE.value, inputs=inputs)
    cluster = cli.load_cluster(cli_flags.cluster_spec(_CLUSTER.value, config))
    loaded = pipeline.load_graph(cluster, config=config, graph_path=_GRAPH.value, need_model=_MEASURE.value != "sim")
    graph = loaded.graph
    if _PLACEMENT.value:
        placement = measure_lib.load_placement(graph, cluster, _PLACEMENT.value)
    else:
        from baselines import registry as baselines  # noqa: PLC0415

        placement = baselines.get(_BASELINE.value)(graph, cluster)
    measurer = registry.make_measurer(_MEASURE.value, graph, cluster, model=loaded.model)
    m = measurer.measure([placement])[0]
    level = registry.level_of(measurer, placement)
    print("\n".join(measure_lib.report_lines(m, graph, cluster, _MEASURE.value, level)))
    for line in measure_lib.exact_lines(placement, m):
        print(line)
    if _TRACE.value:
        measure_lib.write_trace(_TRACE.value, measurer, placement, graph, cluster)
        print(f"wrote {_TRACE.value}")


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
