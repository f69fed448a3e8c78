"""A cluster of CPUs only (`local:4`): every registered baseline places there or says in one line that it
needs a GPU, and every registered method searches there, the ones that start from single_gpu starting from
the fastest baseline that runs instead. The registries are iterated, so a method added or removed is covered."""

import numpy as np
import pytest

from baselines import registry
from configs import common
from graphs import local_cluster
from placer.core import cluster as cluster_lib
from placer.core import generated
from placer.core import io as graph_io
from placer.core.errors import InputError
from placer.measure.simulator import Simulator
from placer.rl import methods, train_lib

GRAPH = ("layered", 40, 0)  # a generated 40-op DAG with CPU and GPU costs


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cpu_only") / "g.graph.json"
    graph_io.save(generated.generate(*GRAPH), str(path))
    return str(path)


def baseline_times(graph, cluster) -> dict[str, float]:
    """Step time (s) of every registered baseline that places on `cluster`, by name."""
    out = {}
    for name in registry.names():
        extra = {"measurer": Simulator(graph, cluster), "budget": 20} if name in registry.MEASURED else {}
        try:
            p = registry.place(name, graph, cluster, seed=0, **extra)
        except InputError:
            continue
        out[name] = Simulator(graph, cluster).measure([p])[0].step_time
    return out


def test_every_baseline_places_on_cpus_or_says_it_needs_a_gpu():
    graph, cpus = generated.generate(*GRAPH), local_cluster.load("local:4")
    assert cpus.num_devices == 4 and not cpus.indices_of_type("GPU")
    with_gpu = cluster_lib.load("k80x4")
    refused = []
    for name in registry.names():
        extra = {"measurer": Simulator(graph, cpus), "budget": 20} if name in registry.MEASURED else {}
        try:
            p = registry.place(name, graph, cpus, seed=0, **extra)
        except InputError as e:
            if "no expert placement" in str(e):  # rules for the paper's models only, whatever the cluster
                continue
            assert str(e) == f"{name}: cluster 'local' has no GPU, but this baseline places ops on GPUs"
            refused.append(name)
            registry.place(name, graph, with_gpu, seed=0)  # the GPU is all it lacked
            continue
        assert p.devices.shape == (graph.num_ops,) and set(p.device_names) == set(cpus.device_names)
        assert Simulator(graph, cpus).measure([p])[0].ok, name
    # The partitioners and list schedulers spread over the CPUs: only the single-GPU placements refuse.
    assert set(refused) <= {"single_gpu", "tf_default"}


@pytest.mark.parametrize(
    "method", [pytest.param(m, marks=pytest.mark.slow) if m == "seq2seq" else m for m in methods.names()]
)
def test_every_method_searches_on_cpus(graph_file, tmp_path, method):
    c = common.get_config()
    c.cluster = "local:4"
    c.placer.train.method = method
    c.placer.policy.hidden_size = 8
    c.placer.train.warm_start_steps = 5
    lines = []
    s = train_lib.run(
        c, workdir=str(tmp_path), steps=0, graph_path=graph_file, progress=False, log=lines.append, max_placements=48
    )
    assert s["placements"] == 48 and np.isfinite(s["best_step_time"])
    skipped = [x for x in lines if "skipping" in x]
    measures_baselines = methods.uses_warm_start(method) or methods.uses_start(method)
    # The baselines that need a GPU are skipped with one line each, where the method measures baselines.
    assert len([x for x in skipped if "has no GPU" in x]) == (2 if measures_baselines else 0), lines
    if methods.uses_start(method) and not methods.uses_warm_start(method):
        graph, cpus = graph_io.load(graph_file), local_cluster.load("local:4")
        times = baseline_times(graph, cpus)
        fastest = min((t, n) for n, t in times.items() if n not in registry.MEASURED)
        (line,) = [x for x in lines if x.startswith("start: ") and "fastest of the baselines" in x]
        assert line.startswith(f"start: {fastest[1]}, ")
