"""The light modules load, and the baselines run, without TensorFlow; `models` imports it only when building.

One fresh process checks all four (TensorFlow is already loaded in the test
process): the light modules of docs/architecture.md, `import models`, every
baseline that needs no model graph and no measurer, run on a 3-op graph, and
bench/slaq_replay.py replaying a trace (tests/test_bench_slaq_replay.py checks
what it writes).
"""

import os
import subprocess
import sys

from tests.cli import ROOT
from tests.test_bench_slaq_replay import _trace

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
    "placer.sharing.runtime_model",
    "placer.sharing.report",
    "baselines.registry",
]

CODE = f"""
import importlib, sys

def tf_modules():
    return sorted(m for m in sys.modules if m == 'tensorflow' or m.startswith('tensorflow.'))

for m in {LIGHT!r}:
    importlib.import_module(m)
assert not tf_modules(), ('light modules', tf_modules()[:5])

import baselines, baselines.common, baselines.registry
from tests.baselines.helpers import make_cluster, make_graph
g = make_graph('abc', [('a', 'b', 5), ('b', 'c', 5)])
for n in baselines.registry.names():
    if n != 'expert' and n not in baselines.registry.MEASURED:
        baselines.registry.get(n)(g, make_cluster(2))
assert not tf_modules(), ('baselines', tf_modules()[:5])

import models
assert not tf_modules(), ('import models', tf_modules()[:5])
print(models.MODEL_NAMES)

from absl import flags
from bench import slaq_replay
trace, out = sys.argv[1:]
flags.FLAGS(['slaq_replay', f'--trace={{trace}}', '--slots=4', '--epoch_s=1', '--policy=all', f'--workdir={{out}}'])
slaq_replay.main([])
assert not [m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras', 'tf_keras')], 'bench.slaq_replay'
"""


def test_light_modules_baselines_models_import_and_trace_replay_do_not_load_tensorflow(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    argv = [sys.executable, "-c", CODE, _trace(tmp_path), str(tmp_path / "out")]
    r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "nmt" in r.stdout
    assert "fair-static: mean time to 90%" in r.stdout  # the replay ran to its end
