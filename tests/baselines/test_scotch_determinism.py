"""Scotch and MinCut give the same placement for the same graph and seed, in a fresh process and in this one."""

import contextlib
import io
import os
import subprocess
import sys

import pytest

from tests.cli import ROOT

SCRIPT = """
import numpy as np
from baselines import registry
from placer.core import cluster
from placer.core.op_graph import OpGraph

# A random DAG of 1000 ops, two inputs each: large enough for Scotch's threaded coarsening.
rng = np.random.default_rng(0)
n = 1000
edges = [
    (f"op{j}", f"op{i}", int(rng.integers(1, 10**6)))
    for i in range(1, n)
    for j in rng.choice(i, size=min(i, 2), replace=False)
]
g = OpGraph.create(
    "random", [f"op{i}" for i in range(n)], ["MatMul"] * n, edges, output_bytes=[1000] * n,
    device_types=["CPU", "GPU"], compute_cost=rng.uniform(1e-4, 1e-2, size=(n, 2)),
)
c = cluster.load("k80x4")
for method in ("scotch", "mincut"):
    for _ in range(2):
        print(method, "".join(map(str, registry.place(method, g, c, seed=3).devices)))
"""


@pytest.mark.slow
def test_same_placement_in_a_fresh_process_and_in_this_one():
    # Two placements per method in a fresh process and six in this one (which has run other tests).
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    outputs = [r.stdout]
    for _ in range(3):
        here = io.StringIO()
        with contextlib.redirect_stdout(here):
            exec(SCRIPT, {})  # noqa: S102
        outputs.append(here.getvalue())
    lines = {ln for out in outputs for ln in out.splitlines()}
    assert sorted(ln.split()[0] for ln in lines) == ["mincut", "scotch"], "one placement per method"
    assert all(len(set(ln.split()[1])) > 1 for ln in lines), "the graph is spread over several devices"
