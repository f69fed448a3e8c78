"""No import cycles among the library's modules, counting every import the interpreter can make.

The module graph is read from the source with `ast`: module-level and
function-level `import` and `from ... import` statements (relative ones
included), and `importlib.import_module("...")` or `__import__("...")` calls
with a literal name. An import goes to the most specific module that exists
(`from placer.measure import registry` is an edge to placer.measure.registry).
A cycle is a strongly connected component of more than one module.
"""

import ast
import os

import networkx as nx

from tests.cli import ROOT

PACKAGES = ("placer", "graphs", "models", "baselines", "configs")


def find_modules(root: str, packages) -> dict[str, str]:
    """{dotted module name: file path} of every .py file under `root`/`packages`."""
    found = {}
    for package in packages:
        for folder, _, files in os.walk(os.path.join(root, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    parts = os.path.relpath(path, root)[: -len(".py")].split(os.sep)
                    found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported_names(module: str, path: str) -> set[str]:
    """The dotted names `path` (the module `module`) imports, at any depth of its code."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def module_graph(root: str, packages) -> nx.DiGraph:
    """The import graph of the modules of `packages` under `root` (edges only between them)."""
    modules = find_modules(root, packages)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for name in imported_names(module, path):
            while name and name not in modules:  # a name inside a module: the module
                name = name.rpartition(".")[0]
            if name and name != module:
                graph.add_edge(module, name)
    return graph


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted."""
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def test_the_library_has_no_import_cycles():
    graph = module_graph(ROOT, PACKAGES)
    assert graph.number_of_nodes() > 100  # the packages were found
    # The backends loaded on first use are imported through plain statements, so they are edges too.
    assert graph.has_edge("placer.measure.registry", "placer.measure.ray_pool")
    assert graph.has_edge("placer.measure.registry", "graphs.tf_session")
    assert cycles(graph) == []


def _write(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_planted_cycle_through_a_function_import_and_an_importlib_string_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg import b  # only when called\n    return b\n",
            "pkg/b.py": "import importlib\n\nfrom . import c\n",
            "pkg/c.py": "import importlib\n\nA = lambda: importlib.import_module('pkg.a')\n",
            "pkg/d.py": "from pkg.a import f\n",  # imports into the cycle, is not in it
        },
    )
    graph = module_graph(str(tmp_path), ["pkg"])
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    # Without the importlib string there is no cycle.
    (tmp_path / "pkg" / "c.py").write_text("A = 1\n")
    assert cycles(module_graph(str(tmp_path), ["pkg"])) == []
