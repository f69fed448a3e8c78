"""placer-compare: baselines and saved placements side by side, as in the paper's Table 1.

  placer-compare --config=configs/nmt.py:tiny --cluster=k80x4 --out=cmp/
  placer-compare --graph=nmt.graph.json.gz --cluster=k80x2 --methods=single_gpu,expert,scotch \
      --placements=runs/nmt/best_placement.json --out=cmp/ --timeline=runs/nmt/best_placement.json

Prints the table (step time or failure such as OOM, speedup over the
reference placement (--reference, default the expert's, or the fastest
baseline where the expert has no placement, as the header says) and the
single-GPU one, ratio to the lower bound, place time, peak memory per device),
a "bound" row (the lower bound in seconds, and which of its terms binds), and
why a speedup column is n/a. `--methods=...,exact` adds the CP-SAT placer,
started from the rows before it (docs/exact.md): its row's line gives its
model makespan and the bound it proved. With --out it writes table.md, table.csv,
step_times.png, timeline_<method>.png (the simulated schedule of --timeline,
default the fastest placement) and placement_<method>.json for each baseline
that placed the graph. The same-budget searches (random_search, local_search)
measure as many placements as the longest search behind --placements did
(--search_budget overrides). Bad input (an unknown method, a placement file made for
another graph, a GPU baseline on a cluster without GPU) is one line
"error: ..." on stderr and exit status 2.
"""

from __future__ import annotations

import os
import sys

from absl import flags
from ml_collections import config_flags

from placer import cli, cli_flags
from placer.core import atomic
from placer.core.errors import InputError
from placer.core.placement import Placement

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_MODEL, _BATCH_SIZE = cli_flags.define_model_flags(__name__)
_GRAPH, _CLUSTER, _MEASURE, _SEED = cli_flags.define_flags(
    __name__, "graph", "cluster", "measure", "seed", notes={"seed": "Passed to every baseline."}
)
_METHODS = flags.DEFINE_string("methods", "all", "'all' or comma-separated baseline names (baselines/registry).")
_PLACEMENTS = flags.DEFINE_list(
    "placements", [], "Placement JSON files to compare too (e.g. a search's result); rows 'METHOD (FILE)'."
)
_OUT = flags.DEFINE_string("out", None, "Folder for table.md, table.csv, step_times.png, timeline_<method>.png.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --out folder.")
_TIMELINE = flags.DEFINE_string(
    "timeline", None, "Row (or --placements file) whose simulated schedule is drawn (default: the fastest)."
)
_EXACT_SECONDS = flags.DEFINE_float(
    "exact_seconds", 60.0, "Seconds the exact row's CP-SAT solve may search (docs/exact.md).", lower_bound=0.1
)
_EXACT_WORKERS = flags.DEFINE_integer("exact_workers", 1, "CP-SAT threads of the exact row.", lower_bound=1)
_EXACT_LEVEL = flags.DEFINE_enum("exact_level", "group", ["group", "op"], "Units the exact row places.")
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
    from placer.compare import compare_lib, exact_row, tables  # noqa: PLC0415
    from placer.compare import reference as reference_lib  # noqa: PLC0415
    from placer.measure import (
        bounds,  # noqa: PLC0415
        registry,  # noqa: PLC0415
    )

    methods, strict = compare_lib.parse_methods(_METHODS.value, bool(_PLACEMENTS.value or _REFERENCE.value))
    if _TIMELINE.value and not _OUT.value:
        raise InputError("--timeline needs --out")
    inputs = {"graph": _GRAPH.value, "cluster": _CLUSTER.value, "placements": _PLACEMENTS.value}
    inputs.update(reference=_REFERENCE.value, config=cli.config_file(_CONFIG), model=cli_flags.model_file(_MODEL))
    if _OUT.value:
        atomic.check_output_dir(_OUT.value, "out", overwrite=_OVERWRITE.value, owned=OUTPUTS, inputs=inputs)
    config = cli_flags.with_model(_CONFIG.value, _MODEL, _BATCH_SIZE)
    if (config is None) == (_GRAPH.value is None):
        raise InputError("give exactly one of --config (or --model) and --graph")
    spec = cli_flags.cluster_spec(_CLUSTER.value, config)
    cluster = cli.load_cluster(spec)
    paths, methods = reference_lib.with_reference(_PLACEMENTS.value, methods, _REFERENCE.value)
    given = [Placement.load(p) for p in paths]  # before any graph is built, so a bad file fails first
    budget = compare_lib.search_budget(_SEARCH_BUDGET.value, given)
    loaded = pipeline.load_graph(cluster, config=config, graph_path=_GRAPH.value, need_model=_MEASURE.value != "sim")
    graph = loaded.graph
    labels, reference = compare_lib.given_rows(paths, given, graph, cluster, methods, _REFERENCE.value)
    measurer = registry.make_measurer(_MEASURE.value, graph, cluster, model=loaded.model)
    bound = bounds.bound(graph, cluster)
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
        exact=exact_row.Options(_EXACT_SECONDS.value, _EXACT_WORKERS.value, _EXACT_LEVEL.value),
        lower_bound=bound.value,
    )
    if _REFERENCE.value is None:  # the expert's, unless it has no placement here: then the fastest baseline
        reference, said = reference_lib.choose_reference(rows, reference)
        rows = reference_lib.relative_to(rows, reference)
    else:
        said = f"reference: {reference} (--reference)"
    print(
        f"graph: {graph.name} ({graph.num_ops} ops), cluster: {cluster.name} ({cluster.num_devices} devices), "
        f"measure: {_MEASURE.value}"
    )
    print(said)
    if any(m in compare_lib.SEARCHES for m in methods):
        why = compare_lib.budget_reason(_SEARCH_BUDGET.value, given, paths)
        print(f"same-budget searches: {budget} measured placements each ({why})")
    print(tables.terminal_text(rows, cluster.device_names, reference, bound), end="")
    if _OUT.value:
        with atomic.folder_set(_OUT.value, overwrite=_OVERWRITE.value, owned=OUTPUTS, inputs=inputs) as folder:
            timeline = dict(zip(paths, labels, strict=True)).get(
                _TIMELINE.value, _TIMELINE.value
            )  # a file names its row
            written = compare_lib.write_outputs(folder, rows, graph, cluster, measurer, timeline, reference, bound)
        print(f"wrote {', '.join(os.path.join(_OUT.value, os.path.basename(w)) for w in written)}")


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
