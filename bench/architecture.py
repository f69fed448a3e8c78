"""Draws docs/architecture.png: the packages, their layers and the imports between them.

The import graph is read from the source by grimp (import-linter's graph
builder), so the picture shows the code as it is, lazy imports included.
Run: .venv/bin/python -m bench.architecture
"""

from __future__ import annotations

import os

import grimp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402

from placer.core import atomic  # noqa: E402

# The layers of docs/architecture.md, top to bottom; packages in one row share a layer.
LAYERS = [
    ["placer (binaries)"],
    ["placer.sharing", "placer.rl"],
    ["placer.compare", "placer.apply", "placer.measure", "baselines"],
    ["graphs", "models", "configs"],
    ["placer.core"],
]
ROOTS = ("placer", "graphs", "models", "configs", "baselines")
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "architecture.png")


def package_of(module: str) -> str:
    """The box a module belongs to: a placer subpackage, a top-level package, or the binaries."""
    parts = module.split(".")
    if parts[0] != "placer":
        return parts[0]
    if len(parts) > 1 and f"placer.{parts[1]}" in {p for row in LAYERS for p in row}:
        return f"placer.{parts[1]}"
    return "placer (binaries)"


def package_graph() -> nx.DiGraph:
    """The import graph collapsed to packages: an edge a -> b when a module of a imports one of b."""
    g = grimp.build_graph(*ROOTS)
    out = nx.DiGraph()
    out.add_nodes_from(p for row in LAYERS for p in row)
    for importer in g.modules:
        for imported in g.find_modules_directly_imported_by(importer):
            a, b = package_of(importer), package_of(imported)
            if a != b:
                out.add_edge(a, b)
    return out


def draw(graph: nx.DiGraph, path: str) -> None:
    """Draws the layered package graph to a PNG at `path`, without the binaries' edges."""
    graph = graph.copy()
    graph.remove_edges_from(list(graph.out_edges("placer (binaries)")))
    pos = {}
    for y, row in enumerate(LAYERS):
        for x, name in enumerate(row):
            pos[name] = ((x - (len(row) - 1) / 2) * 3.0 + 0.6 * (y % 2), -y * 1.6)
    fig, ax = plt.subplots(figsize=(11, 7))
    nx.draw_networkx_edges(
        graph, pos, ax=ax, arrows=True, arrowsize=12, edge_color="#888", node_size=4200, connectionstyle="arc3,rad=0.12"
    )
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_shape="s", node_size=4200, node_color="#dfe8f5")
    nx.draw_networkx_labels(graph, pos, ax=ax, font_size=9)
    ax.set_title(
        "Packages and their imports (arrows point to the imported package;\nthe binaries import from every layer, their arrows left out)"
    )
    ax.axis("off")
    fig.tight_layout()
    with atomic.atomic_open(path, "wb") as f:
        fig.savefig(f, format="png", dpi=90)
    plt.close(fig)


def main() -> None:
    graph = package_graph()
    draw(graph, OUT)
    print(f"wrote {OUT}: {graph.number_of_nodes()} packages, {graph.number_of_edges()} package imports")


if __name__ == "__main__":
    main()
