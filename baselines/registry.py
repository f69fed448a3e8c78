"""The registry of baseline placers: name -> `place(graph, cluster, *, seed=None, **options)`.

Every entry returns a `Placement` whose metadata["method"] is its name. The
entries in MEASURED search by measuring placements, and take a `measurer`. The
expert placement lives in a module that may be absent; it is imported on
first use so the other baselines work without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from baselines import list_scheduling, metis, mincut, scotch, sct, search, single
from placer.core.cluster import Cluster
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.core.placement import Placement


def _lazy(module: str, attr: str = "place") -> Callable[..., Placement]:
    """Returns a placer that imports `module` when first called."""

    def place(graph: OpGraph, cluster: Cluster, *, seed=None, **options) -> Placement:
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            raise InputError(f"baseline module {module!r} is not available ({e})") from None
        return getattr(mod, attr)(graph, cluster, seed=seed, **options)

    place.__name__ = f"{module}.{attr}"
    place.__doc__ = f"Imports {module} on first use and calls its `{attr}`."
    return place


METHODS: dict[str, Callable[..., Placement]] = {
    "single_cpu": single.place_single_cpu,
    "single_gpu": single.place_single_gpu,
    "tf_default": single.place_tf_default,
    "scotch": scotch.place,
    "mincut": mincut.place,
    "metis": metis.place,
    "expert": _lazy("baselines.expert"),
    "m_topo": list_scheduling.place_m_topo,
    "m_etf": list_scheduling.place_m_etf,
    "m_sct": sct.place,
    "random_search": search.place_random_search,
    "local_search": search.place_local_search,
}

# The searches that measure candidates: callers pass them `measurer=` (and
# `budget=`, the number of placements they may measure).
MEASURED = frozenset({"random_search", "local_search"})

# The list-scheduling baselines (Baechi's m_topo, m_etf and m_sct): they schedule the graph op by
# op, the slowest of the others by 3-20x on large graphs (BENCHMARKS.md, "Baseline placement time").
LIST_SCHEDULING = frozenset({"m_topo", "m_etf", "m_sct"})


def names() -> list[str]:
    """Returns the registered baseline names, in registry order."""
    return list(METHODS)


def get(name: str) -> Callable[..., Placement]:
    """Returns the placer registered as `name`.

    Raises:
      InputError: unknown name (the message lists the valid ones).
    """
    try:
        return METHODS[name]
    except KeyError:
        raise InputError(f"unknown baseline {name!r} (valid: {', '.join(METHODS)})") from None


def place(name: str, graph: OpGraph, cluster: Cluster, *, seed=None, **options) -> Placement:
    """Runs the baseline `name` on `graph` and `cluster`."""
    return get(name)(graph, cluster, seed=seed, **options)
