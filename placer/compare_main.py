"""placer-compare: baselines and saved placements side by side, as in the paper's Table 1.

  placer-compare --config=configs/nmt.py:tiny --cluster=k80x4 --out=cmp/
  placer-compare --graph=nmt.graph.json.gz --cluster=k80x2 --methods=single_gpu,expert,scotch \
      --placements=runs/nmt/best_placement.json --out=cmp/ --timeline=rl

Prints the table (step time or failure such as OOM, speedup over the
reference placement (--reference, default the expert's) and the single-GPU
one, ratio to the lower bound, place time, peak memory per device), and why
a speedup column is n/a. With --out it writes table.md, table.csv,
step_times.png, timeline_<method>.png (the simulated schedule of --timeline,
default the fastest placement) and placement_<method>.json for each baseline
that placed the graph. Bad input (an unknown method, a placement file made for
another graph, a GPU baseline on a cluster without GPU) is one line
"error: ..." on stderr and exit status 2.
"""

from __future__ import annotations

import os
import re

from absl import flags
from ml_collections import config_flags

from placer import cli
from placer.core.errors import InputError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_GRAPH = flags.DEFINE_string("graph", None, "Graph JSON file with costs (docs/formats.md) instead of --config.")
_CLUSTER = flags.DEFINE_string(
    "cluster",
    None,
    "Cluster preset (configs/clusters), JSON file, or 'local'; default: the config's cluster, else k80x4.",
)
_MEASURE = flags.DEFINE_string("measure", "sim", "Backend: sim | grappler | session.")
_METHODS = flags.DEFINE_string("methods", "all", "'all' or comma-separated baseline names (baselines/registry).")
_PLACEMENTS = flags.DEFINE_list("placements", [], "Placement JSON files to compare too (e.g. the RL result).")
_OUT = flags.DEFINE_string("out", None, "Folder for table.md, table.csv, step_times.png, timeline_<method>.png.")
_TIMELINE = flags.DEFINE_string("timeline", None, "Row whose simulated schedule is drawn (default: the fastest).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed passed to every baseline.")
_REFERENCE = flags.DEFINE_string(
    "reference",
    None,
    "Placement the 'vs' speedup column compares with: a baseline name (added to --methods if missing), "
    "a row of --placements, or a placement JSON file (compared too); default: expert, when among --methods.",
)


def parse_methods(spec: str) -> tuple[list[str], bool]:
    """Returns (method names, strict) for --methods: 'all' is every registered baseline, not strict.

    Raises:
      InputError: an unknown name (the message lists the valid ones) or an empty list.
    """
    from baselines import registry  # noqa: PLC0415

    if spec.strip() == "all":
        return registry.names(), False
    names = [m.strip() for m in spec.split(",") if m.strip()]
    if not names and not _PLACEMENTS.value:
        raise InputError(f"--methods: no method given (valid: all, {', '.join(registry.names())})")
    for m in names:
        if m not in registry.METHODS:
            raise InputError(f"--methods: unknown method {m!r} (valid: all, {', '.join(registry.names())})")
    return names, True


def file_safe(name: str) -> str:
    """A row name made safe for a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def main(argv: list[str]) -> None:
    del argv
    from graphs import pipeline  # noqa: PLC0415
    from placer.compare import compare_lib  # noqa: PLC0415
    from placer.core.placement import Placement  # noqa: PLC0415
    from placer.measure import registry  # noqa: PLC0415

    methods, strict = parse_methods(_METHODS.value)
    if _TIMELINE.value and not _OUT.value:
        raise InputError("--timeline needs --out")
    if _MEASURE.value not in registry.KINDS:
        raise InputError(f"--measure: unknown kind {_MEASURE.value!r} (valid: {', '.join(registry.KINDS)})")
    config = _CONFIG.value
    if (config is None) == (_GRAPH.value is None):
        raise InputError("give exactly one of --config and --graph")
    spec = _CLUSTER.value or (config.get("cluster") if config is not None else None) or "k80x4"
    cluster = cli.load_cluster(spec)
    paths = list(_PLACEMENTS.value)
    reference = _REFERENCE.value or compare_lib.EXPERT
    from_file = reference.endswith((".json", ".json.gz")) or os.path.sep in reference
    if from_file and reference not in paths:
        paths.append(reference)
    elif _REFERENCE.value is not None and not from_file and reference in registry_names() and reference not in methods:
        methods.append(reference)
    given = [Placement.load(p) for p in paths]
    loaded = pipeline.load_graph(cluster, config=config, graph_path=_GRAPH.value, need_model=_MEASURE.value != "sim")
    graph = loaded.graph
    for path, p in zip(paths, given, strict=True):
        compare_lib.on_cluster(p, graph, cluster, path)  # fail on a wrong file before placing anything
    taken = set(methods)
    labels = []
    for i, (path, p) in enumerate(zip(paths, given, strict=True)):
        base = p.metadata.get("method") or os.path.basename(path).split(".")[0]
        labels.append(compare_lib.label(p.with_metadata(method=base), i, taken))
        taken.add(labels[-1])
    if from_file:
        reference = labels[paths.index(reference)]
    elif _REFERENCE.value is not None and reference not in taken:
        raise InputError(
            f"--reference: {reference!r} is neither a baseline, a row of --placements ({', '.join(labels) or 'none'}) "
            "nor a placement file"
        )
    measurer = registry.make_measurer(_MEASURE.value, graph, cluster, model=loaded.model)
    rows = compare_lib.compare(
        graph, cluster, measurer, methods, given, seed=_SEED.value, strict=strict, labels=labels, reference=reference
    )
    print(
        f"graph: {graph.name} ({graph.num_ops} ops), cluster: {cluster.name} ({cluster.num_devices} devices), "
        f"measure: {_MEASURE.value}"
    )
    print(compare_lib.terminal_text(rows, cluster.device_names, reference), end="")
    if _OUT.value:
        write_outputs(_OUT.value, rows, graph, cluster, measurer, _TIMELINE.value, reference)


def registry_names() -> list[str]:
    """The registered baseline names."""
    from baselines import registry  # noqa: PLC0415

    return registry.names()


def write_outputs(out: str, rows, graph, cluster, measurer, timeline: str | None, reference: str) -> None:
    """Writes table.md, table.csv, step_times.png, timeline_<method>.png and the baselines' placements into `out`.

    Raises:
      InputError: --timeline names no row, or a row that has no placement.
    """
    from placer.compare import (
        compare_lib,  # noqa: PLC0415
        plots,  # noqa: PLC0415
    )
    from placer.measure.simulator import Simulator  # noqa: PLC0415

    by_name = {r.method: r for r in rows}
    if timeline is not None and timeline not in by_name:
        raise InputError(f"--timeline: no row named {timeline!r} (rows: {', '.join(by_name)})")
    row = by_name[timeline] if timeline is not None else compare_lib.best(rows)
    if row is not None and row.placement is None:
        raise InputError(f"--timeline: {row.method!r} has no placement ({row.message})")
    os.makedirs(out, exist_ok=True)
    title = f"{graph.name} on {cluster.name}"
    compare_lib.write_markdown(os.path.join(out, "table.md"), rows, cluster.device_names, title, reference)
    compare_lib.write_csv(os.path.join(out, "table.csv"), rows, cluster.device_names, reference)
    plots.plot_step_times(rows, os.path.join(out, "step_times.png"), title=title)
    written = ["table.md", "table.csv", "step_times.png"]
    for r in rows:
        if r.placement is not None and r.place_seconds is not None:  # a baseline's, not a given file
            name = f"placement_{file_safe(r.method)}.json"
            r.placement.save(os.path.join(out, name))
            written.append(name)
    if row is not None:
        sim = measurer if isinstance(measurer, Simulator) else Simulator(graph, cluster)
        result = sim.simulate(row.placement.devices, op_group=row.placement.groups, trace=True)
        name = f"timeline_{file_safe(row.method)}.png"
        plots.plot_timeline(result, graph, cluster, os.path.join(out, name), title=f"{row.method}: {title}")
        written.append(name)
    print(f"wrote {', '.join(os.path.join(out, w) for w in written)}")


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
