"""placer-measure: the step time of one placement, by simulation, Grappler or a real session.

  placer-measure --graph=nmt.graph.json.gz --cluster=k80x4 --placement=best.placement.json
  placer-measure --config=configs/nmt.py:tiny --cluster=k80x4 --baseline=single_gpu --trace=step.trace.json
  placer-measure --config=configs/nmt.py:tiny --cluster=k80x4 --placement=p.json --measure=grappler

Prints the step time (or the failure), the busy time and peak memory of each
device, the bytes moved between devices, and the ratio of the step time to
the lower bound of placer/measure/bounds.py, and a FLAGGED line when the
backend costed some op under this placement over 10% below its unplaced
cost (placer/measure/cost_guard.py). Bad input (a bad cluster spec,
a placement for another graph or naming a device missing from the cluster)
is one line "error: ..." on stderr and exit status 2.
"""

from __future__ import annotations

import numpy as np
from absl import flags
from ml_collections import config_flags

from placer import cli
from placer.core.errors import InputError
from placer.core.placement import Placement, on_cluster

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_GRAPH = flags.DEFINE_string("graph", None, "Graph JSON file with costs (docs/formats.md) instead of --config.")
_CLUSTER = flags.DEFINE_string("cluster", "k80x4", "Cluster preset (configs/clusters), JSON file, or 'local'.")
_PLACEMENT = flags.DEFINE_string("placement", None, "Placement JSON file (docs/formats.md).")
_BASELINE = flags.DEFINE_string("baseline", None, "Instead of --placement: a baseline method (baselines/registry).")
_MEASURE = flags.DEFINE_string("measure", "sim", "Backend: sim | grappler | session.")
_TRACE = flags.DEFINE_string("trace", None, "Write a Chrome trace of the simulated step here (--measure=sim).")


def _load_graph(cluster, need_model: bool):
    from graphs import pipeline  # noqa: PLC0415

    config = _CONFIG.value
    if (config is None) == (_GRAPH.value is None):
        raise InputError("give exactly one of --config and --graph")
    return pipeline.load_graph(cluster, config=config, graph_path=_GRAPH.value, need_model=need_model)


def main(argv: list[str]) -> None:
    del argv
    from placer.measure import bounds, registry  # noqa: PLC0415

    if (_PLACEMENT.value is None) == (_BASELINE.value is None):
        raise InputError("give exactly one of --placement and --baseline")
    if _MEASURE.value not in registry.KINDS:
        raise InputError(f"--measure: unknown kind {_MEASURE.value!r} (valid: {', '.join(registry.KINDS)})")
    if _TRACE.value and _MEASURE.value != "sim":
        raise InputError("--trace needs --measure=sim")
    cluster = cli.load_cluster(_CLUSTER.value)
    loaded = _load_graph(cluster, need_model=_MEASURE.value != "sim")
    graph = loaded.graph
    if _PLACEMENT.value:
        placement = on_cluster(Placement.load(_PLACEMENT.value), graph, cluster, _PLACEMENT.value)
    else:
        from baselines import registry as baselines  # noqa: PLC0415

        placement = baselines.get(_BASELINE.value)(graph, cluster)
    devices = np.asarray(placement.devices, dtype=np.int64)
    measurer = registry.make_measurer(_MEASURE.value, graph, cluster, model=loaded.model)
    m = measurer.measure([placement])[0]
    print(
        f"graph: {graph.name} ({graph.num_ops} ops), cluster: {cluster.name} ({cluster.num_devices} devices), "
        f"measure: {_MEASURE.value}"
    )
    if m.ok:
        print(f"step time: {m.step_time:.6f} s")
    else:
        print(f"failed ({m.failure}): {m.message}")
    if m.flagged:
        print(f"FLAGGED, step time not to be trusted: {m.flag}")
    for d, dev in enumerate(cluster.devices):
        busy = m.busy_time[d] if len(m.busy_time) > d else 0.0
        peak = m.peak_memory[d] if len(m.peak_memory) > d else 0.0
        print(
            f"  {dev.name:<16} busy {busy:.6f} s  peak memory {peak / 2**20:.1f} MiB "
            f"of {dev.memory_bytes / 2**20:.0f} MiB"
        )
    print(f"bytes moved: {m.bytes_moved:.0f}")
    lb = bounds.lower_bound(graph, cluster)
    if m.ok and lb > 0:
        print(f"lower bound: {lb:.6f} s (step time / lower bound = {m.step_time / lb:.2f})")
    else:
        print(f"lower bound: {lb:.6f} s")
    if _TRACE.value:
        from placer.measure import trace  # noqa: PLC0415

        result = measurer.simulate(devices, op_group=placement.groups, trace=True)
        trace.write_chrome_trace(_TRACE.value, result, graph, cluster)
        print(f"wrote {_TRACE.value}")


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
