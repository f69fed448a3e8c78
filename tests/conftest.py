"""Session fixtures: what many test files build from TensorFlow, built once per test run.

Each fixture returns a cached function of a model config spec (e.g.
"configs/nmt.py:tiny"); TensorFlow is imported on first use, so test files
that never ask for one keep loading in milliseconds. The models and graphs
are shared: tests read them and never change them (OpGraph is immutable).
"""

import functools
import os
import sys

import pytest

from tests.cli import ROOT

pytest_plugins = ["tests.subprocess_count"]  # PLACER_COUNT_SUBPROCESSES=path counts the processes tests start

# Binaries run in this process (tests/binaries.py) share its TensorFlow, whose C++ log level is fixed when
# TF loads: keep it at errors-off, as tests.cli.run_module does for a fresh process, so that a native
# line such as "failed call to cuInit" does not reach a binary's captured stderr.
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

# The exact placer's OR-Tools must load before TensorFlow in a process (placer/measure/exact.py says why);
# binaries and tests share this one, so it loads first.
import placer.measure.exact  # noqa: E402, F401


@pytest.fixture(scope="session")
def tiny_model():
    """tiny_model(spec) -> models.Model: the model of a config spec, built once per session."""
    import models  # noqa: PLC0415 (TensorFlow)
    from placer.core.configs_util import load_config  # noqa: PLC0415

    @functools.cache
    def build(spec: str):
        return models.build(load_config(os.path.join(ROOT, spec)).model)  # relative to the project, whatever the cwd

    return build


@pytest.fixture(scope="session")
def extracted_graph(tiny_model):
    """extracted_graph(spec) -> OpGraph: the spec's model extracted (no costs), named after the model."""
    from graphs import extract  # noqa: PLC0415

    @functools.cache
    def get(spec: str):
        model = tiny_model(spec)
        return extract.extract(model.metagraph, name=model.name)

    return get


@pytest.fixture(autouse=True)
def _op_determinism_off_after_each_test():
    """A binary called in process turns TF's op determinism on (placer.rl.reinforce.seed_everything);
    it is process-wide, and unseeded random ops of later tests' graphs would then be refused."""
    yield
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        from tensorflow.python.framework import config as tf_config  # noqa: PLC0415 (no public switch off)

        tf_config.disable_op_determinism()


@pytest.fixture(scope="session")
def local_ray():
    """One real local Ray cluster for the whole run: 2 CPUs and 4 measurement slots ("placer_slot").

    Every Ray test shares it (starting one takes seconds); a RayEngine made
    while it runs uses it rather than starting its own, and removes its actors
    when it closes, so tests leave no actor behind for the next one.
    """
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e .[ray]")
    from placer.measure.ray_pool import RESOURCE  # noqa: PLC0415

    ray.init(num_cpus=2, resources={RESOURCE: 4}, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Under `--dist loadgroup` (make test) a test file runs on one worker, as `loadfile` would do, so its
    module fixtures are built once; the files that share a Ray cluster name one group and run together.

    The groups holding slow tests go first, the Ray group before all: the long ones start while the other
    worker works through the many short ones, so neither waits for the other at the end.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    group = {id(item): item.get_closest_marker("xdist_group").args[0] for item in items}
    slow = {group[id(item)] for item in items if item.get_closest_marker("slow")}
    rank = {id(item): (group[id(item)] != "ray", group[id(item)] not in slow, i) for i, item in enumerate(items)}
    items.sort(key=lambda item: rank[id(item)])
