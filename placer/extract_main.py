"""placer-extract: build or load a training graph, group it, print a summary.

  placer-extract --config=configs/nmt.py:tiny --out=nmt.graph.json.gz
  placer-extract --metagraph=model.meta --name=mymodel
  placer-extract --graph=nmt.graph.json.gz

Prints the number of ops, edges (data / control), groups, op types (and the
most common ones), and the extraction and grouping wall times. Bad input
(unknown model, missing or corrupt config, metagraph or graph file) is one
line "error: ..." on stderr and exit status 2, and nothing is written.
"""

from __future__ import annotations

import collections
import os
import time

from absl import flags
from ml_collections import config_flags

from placer import cli
from placer.core import atomic, grouping, io
from placer.core.errors import InputError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Model config file, e.g. configs/nmt.py:tiny.")
_METAGRAPH = flags.DEFINE_string("metagraph", None, "MetaGraphDef file (binary or text) instead of --config.")
_NAME = flags.DEFINE_string("name", None, "Graph name for --metagraph (default: the file name).")
_GRAPH = flags.DEFINE_string("graph", None, "Graph JSON file (graphs/io format): no extraction, just grouping.")
_OUT = flags.DEFINE_string("out", None, "Write the extracted graph here as graph JSON (.gz = gzip).")
_TARGET = flags.DEFINE_integer(
    "target_groups",
    None,
    "Coarsen to at most this many groups (0 = none; default: the config's, else 256).",
    lower_bound=0,
)
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace an existing --out file.")
_TOP = flags.DEFINE_integer("top_types", 10, "How many of the most common op types to print.", lower_bound=0)


def _load_graph():
    """Returns (OpGraph, grouping options, extraction seconds) from the flags."""
    sources = [s for s in (_CONFIG.value is not None, _METAGRAPH.value, _GRAPH.value) if s]
    if len(sources) != 1:
        raise InputError("give exactly one of --config, --metagraph, --graph")
    options = {}
    start = time.perf_counter()
    if _GRAPH.value:
        graph = io.load(_GRAPH.value)
        return graph, options, None
    from graphs import extract  # noqa: PLC0415  (TensorFlow only when extracting)

    if _METAGRAPH.value:
        meta = extract.load_metagraph(_METAGRAPH.value)
        name = _NAME.value or os.path.basename(_METAGRAPH.value).split(".")[0]
        graph = extract.extract(meta, name=name)
    else:
        import models  # noqa: PLC0415

        config = _CONFIG.value
        try:
            "model" in config  # noqa: B015  (a config that failed to load raises here)
        except OSError as e:
            raise InputError(f"--config: {' '.join(str(e).split())}") from None
        built = models.build(config)
        graph = extract.extract(built.graph, name=built.name)
        g = config.get("placer", {}).get("grouping", {})
        options = {k: g[k] for k in ("merge_single_consumer", "max_group_ops", "target_groups") if k in g}
    return graph, options, time.perf_counter() - start


def main(argv: list[str]) -> None:
    del argv
    if _OUT.value:
        atomic.check_output_file(_OUT.value, "out", overwrite=_OVERWRITE.value)
    graph, options, extract_s = _load_graph()
    start = time.perf_counter()
    options.setdefault("target_groups", 256)
    if _TARGET.value is not None:
        options["target_groups"] = _TARGET.value
    groups = grouping.group(graph, **options)
    group_s = time.perf_counter() - start
    if _OUT.value:
        io.save(graph, _OUT.value)

    n_control = int(graph.edge_control.sum())
    types = collections.Counter(graph.types.tolist())
    sizes = groups.sizes()
    print(f"graph: {graph.name}")
    print(f"ops: {graph.num_ops}")
    print(f"edges: {graph.num_edges} ({graph.num_edges - n_control} data, {n_control} control)")
    print(
        f"groups: {groups.num_groups} (largest {int(sizes.max()) if len(sizes) else 0} ops, "
        f"{groups.num_leaders} tie classes)"
    )
    print(f"op types: {len(types)}")
    print("top op types: " + ", ".join(f"{t} {c}" for t, c in types.most_common(_TOP.value)))
    if extract_s is not None:
        print(f"extraction time: {extract_s:.2f} s")
    print(f"grouping time: {group_s:.2f} s")
    if _OUT.value:
        print(f"wrote {_OUT.value}")


def run() -> None:
    cli.run_main(main)


if __name__ == "__main__":
    run()
