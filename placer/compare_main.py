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
that placed the graph. The same-budget searches (random_search, local_search)
measure as many placements as the RL search behind --placements did
(--search_budget overrides). Bad input (an unknown method, a placement file made for
another graph, a GPU baseline on a cluster without GPU) is one line
"error: ..." on stderr and exit status 2.
"""

from __future__ import annotations

import os
import sys

from absl import flags
from ml_collections import config_flags

from placer import cli
from placer.core import atomic
from placer.core.errors import InputError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_MODEL, _BATCH_SIZE = cli.define_model_flags(__name__)
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
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --out folder.")
_TIMELINE = flags.DEFINE_string("timeline", None, "Row whose simulated schedule is drawn (default: the fastest).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed passed to every baseline.")
_SEARCH_BUDGET = flags.DEFINE_integer(
    "search_budget",
    0,
    "Placements random_search and local_search may each measure; 0 = as many as the RL search behind "
    "a --placements file measured (its metadata 'samples'), else 256.",
)
_REFERENCE = flags.DEFINE_string(
    "reference",
    None,
    "Placement the 'vs' speedup column compares with: a baseline name (added to --methods if missing), "
    "a row of --placements, or a placement JSON file (compared too); default: expert, when among --methods.",
)

OUTPUTS = ("table.md", "table.csv", "step_times.png", "timeline_*.png", "placement_*.json")  # what --out holds


def main(argv: list[str]) -> None:
    del argv
    from graphs import pipeline  # noqa: PLC0415
    from placer.compare import compare_lib  # noqa: PLC0415
    from placer.measure import registry  # noqa: PLC0415

    methods, strict = compare_lib.parse_methods(_METHODS.value, bool(_PLACEMENTS.value or _REFERENCE.value))
    if _TIMELINE.value and not _OUT.value:
        raise InputError("--timeline needs --out")
    inputs = {"graph": _GRAPH.value, "cluster": _CLUSTER.value, "placements": _PLACEMENTS.value}
    inputs.update(reference=_REFERENCE.value, config=cli.config_file(_CONFIG), model=cli.model_file(_MODEL))
    if _OUT.value:
        atomic.check_output_dir(_OUT.value, "out", overwrite=_OVERWRITE.value, owned=OUTPUTS, inputs=inputs)
    if _MEASURE.value not in registry.KINDS:
        raise InputError(f"--measure: unknown kind {_MEASURE.value!r} (valid: {', '.join(registry.KINDS)})")
    config = cli.with_model(_CONFIG.value, _MODEL, _BATCH_SIZE)
    if (config is None) == (_GRAPH.value is None):
        raise InputError("give exactly one of --config (or --model) and --graph")
    spec = _CLUSTER.value or (config.get("cluster") if config is not None else None) or "k80x4"
    cluster = cli.load_cluster(spec)
    paths, methods = compare_lib.with_reference(_PLACEMENTS.value, methods, _REFERENCE.value)
    given = compare_lib.load_placements(paths)
    budget = compare_lib.search_budget(_SEARCH_BUDGET.value, given)
    loaded = pipeline.load_graph(cluster, config=config, graph_path=_GRAPH.value, need_model=_MEASURE.value != "sim")
    graph = loaded.graph
    labels, reference = compare_lib.given_rows(paths, given, graph, cluster, methods, _REFERENCE.value)
    measurer = registry.make_measurer(_MEASURE.value, graph, cluster, model=loaded.model)
    print(f"placing and measuring {len(methods) + len(given)} placements of {graph.name}", file=sys.stderr, flush=True)
    rows = compare_lib.compare(
        graph,
        cluster,
        measurer,
        methods,
        given,
        seed=_SEED.value,
        strict=strict,
        labels=labels,
        reference=reference,
        search_budget=budget,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(
        f"graph: {graph.name} ({graph.num_ops} ops), cluster: {cluster.name} ({cluster.num_devices} devices), "
        f"measure: {_MEASURE.value}"
    )
    if any(m in compare_lib.SEARCHES for m in methods):
        why = compare_lib.budget_reason(_SEARCH_BUDGET.value, given, paths)
        print(f"same-budget searches: {budget} measured placements each ({why})")
    print(compare_lib.terminal_text(rows, cluster.device_names, reference), end="")
    if _OUT.value:
        with atomic.folder_set(_OUT.value, overwrite=_OVERWRITE.value, owned=OUTPUTS, inputs=inputs) as folder:
            written = compare_lib.write_outputs(folder, rows, graph, cluster, measurer, _TIMELINE.value, reference)
        print(f"wrote {', '.join(os.path.join(_OUT.value, os.path.basename(w)) for w in written)}")


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
