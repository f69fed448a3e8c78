"""The light modules load without TensorFlow."""

import subprocess
import sys

LIGHT = [
    "placer.core.op_graph",
    "placer.core.grouping",
    "placer.core.features",
    "placer.core.io",
    "placer.core.cluster",
    "placer.core.placement",
    "placer.core.measurement",
    "placer.measure.simulator",
    "placer.measure.bounds",
    "placer.sharing.slaq",
    "placer.sharing.slaq_state",
    "placer.sharing.slaq_regimes",
    "placer.sharing.slaq_curves",
    "placer.sharing.allocators",
    "placer.sharing.replay",
    "baselines.registry",
]


def test_light_modules_do_not_import_tensorflow():
    code = (
        "import importlib, sys\n"
        f"for m in {LIGHT!r}:\n    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'tensorflow' or m.startswith('tensorflow.'))\n"
        "assert not bad, bad[:5]\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
