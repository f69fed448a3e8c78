"""Random mutations of the good graph and cluster files: each is refused in one line, or accepted and harmless.

A mutation sets one field of the good file (inputs.GRAPH, inputs.CLUSTER)
to a value of another kind or range, deletes a field, or repeats a list
entry; the same seed gives the same mutations. `classify` reads a mutated
file as the binaries do and says what happened: "refused" (an InputError),
"accepted" (the reader took it), or "crash: ..." (anything else). An
accepted file is harmless when the simulator measures every placement of
the chain on it to a finite step time or a named failure (tests/badinput/test_mutations.py).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import random
from collections.abc import Callable

from bench.testing.badinput import inputs

VALUES = (
    None, True, 0, -1, 0.5, 1e308, 1e-300, -0.0, math.nan, math.inf, 2**70, "", " ", "x" * 300, "\x00", "a/b",
    [], {}, [1, 2], {"x": 1},
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Mutation:
    """One mutated file: `kind` "graph" or "cluster", what was done, and the JSON data."""

    kind: str
    what: str
    data: dict


def _paths(node, prefix=()) -> list[tuple]:
    """Every field and list entry of a JSON tree, as key paths."""
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append((*prefix, k))
        out.extend(_paths(v, (*prefix, k)))
    return out


def _mutate(data: dict, rng: random.Random) -> tuple[str, dict]:
    out = copy.deepcopy(data)
    path = rng.choice(_paths(out))
    parent = out
    for k in path[:-1]:
        parent = parent[k]
    last, how = path[-1], rng.choice(("set", "set", "set", "delete", "repeat"))
    where = ".".join(map(str, path))
    if how == "delete":
        del parent[last]
        return f"delete {where}", out
    if how == "repeat" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
        return f"repeat {where}", out
    value = rng.choice(VALUES)
    parent[last] = copy.deepcopy(value)
    return f"set {where} = {value!r:.40}", out


def corpus(seed: int, n: int = 45) -> list[Mutation]:
    """`n` mutations of the graph and `n` of the cluster, drawn with `seed`."""
    rng = random.Random(seed)
    out = []
    for kind, good in (("graph", inputs.GRAPH), ("cluster", inputs.CLUSTER)):
        for _ in range(n):
            what, data = _mutate(good, rng)
            out.append(Mutation(kind, what, data))
    return out


def read(m: Mutation, check: Callable | None = None):
    """(graph, cluster) as the binaries read them: the mutated file with the other good one, then
    `check(graph, cluster, source)` (the binaries' graphs.pipeline.require_costs, which this layer cannot import)."""
    from placer.core import cluster as cluster_lib  # noqa: PLC0415
    from placer.core import io  # noqa: PLC0415

    graph = io.from_json(m.data if m.kind == "graph" else inputs.GRAPH, "g.json")
    cluster = cluster_lib.from_json(m.data if m.kind == "cluster" else inputs.CLUSTER, "c.json")
    if check is not None:
        check(graph, cluster, "g.json")
    return graph, cluster


def classify(m: Mutation, check: Callable | None = None) -> str:
    """ "refused", "accepted" or "crash: <one line>" for a mutation read as the binaries do (`read`)."""
    from placer.core.errors import InputError, one_line  # noqa: PLC0415

    try:
        read(m, check)
    except InputError:
        return "refused"
    except Exception as e:  # noqa: BLE001 (what the corpus looks for)
        return f"crash: {one_line(e)}"
    return "accepted"
