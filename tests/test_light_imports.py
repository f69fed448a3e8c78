"""The light modules load without TensorFlow."""

import subprocess
import sys

LIGHT = [
    "graphs.op_graph",
    "graphs.grouping",
    "graphs.features",
    "graphs.io",
    "placer.cluster",
    "placer.placement",
    "placer.measure.base",
]
OPTIONAL = ["placer.measure.simulator", "placer.slaq", "baselines"]


def test_light_modules_do_not_import_tensorflow():
    code = (
        "import importlib, importlib.util, sys\n"
        f"for m in {LIGHT!r}:\n    importlib.import_module(m)\n"
        f"for m in {OPTIONAL!r}:\n"
        "    if importlib.util.find_spec(m) is not None:\n        importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'tensorflow' or m.startswith('tensorflow.'))\n"
        "assert not bad, bad[:5]\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
