"""placer-train and placer-pretrain with --engine=ray: a step's placements measured by Ray actors on a
real local Ray cluster, in sample order, surviving a killed actor, stopping with a checkpoint when every
actor is lost, and refused with the install command when Ray is missing."""

import json
import os
import sys

import numpy as np
import pytest
from absl import logging as _absl_logging  # noqa: F401 (defines absl's logging flags now, outside any call)

from placer.measure import registry
from placer.measure.ray_pool import RayEngine
from tests.inprocess import call

# One worker runs every test of a Ray cluster (tests/conftest.py, local_ray): the cluster starts once.
pytestmark = pytest.mark.xdist_group("ray")

# The tiny NMT (815 ops) grouped into few groups with a small policy, so a step is quick; no warm start,
# so the first placements measured are the first step's samples.
TINY = [
    "--config=configs/nmt.py:tiny",
    "--config.placer.train.method=seq2seq",
    "--config.placer.policy.hidden_size=16",
    "--config.placer.grouping.target_groups=16",
    "--config.placer.train.warm_start=",
    "--config.placer.train.samples_per_step=4",
    "--noprogress",
    "--seed=3",
]


class Recorder:
    """A measurer that records the placements it was given and what came back, in call order."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def measure(self, placements):
        results = self.inner.measure(placements)
        self.calls.append((list(placements), results))
        return results

    def close(self):
        getattr(self.inner, "close", lambda: None)()


def recording(monkeypatch) -> list[Recorder]:
    """Wraps every measurer placer-train makes from now on in a Recorder; returns the list of them."""
    made = []
    make = registry.make_measurer

    def wrapped(*args, **kwargs):
        made.append(Recorder(make(*args, **kwargs)))
        return made[-1]

    monkeypatch.setattr(registry, "make_measurer", wrapped)
    return made


def killing(monkeypatch, first_call: int, every: bool) -> list:
    """Makes RayEngine kill the actor of its `first_call`-th chunk (1-based) and then send the chunk to it
    (with `every`: so for every chunk from then on); returns the list of engines that submitted.

    The actor is known dead before the chunk is sent: a chunk sent first could finish before the kill lands.
    """
    import ray  # noqa: PLC0415 (an optional extra; the tests that kill actors start it first)

    submit = RayEngine._submit
    state = {"calls": 0, "engines": []}

    def wrapped(self, slot, job_id, placements):
        state["calls"] += 1
        if self not in state["engines"]:
            state["engines"].append(self)
        if state["calls"] == first_call or (every and state["calls"] > first_call):
            actor = self.actors[slot]
            ray.kill(actor)
            for _ in range(100):  # until a call to it fails (the kill is asynchronous)
                try:
                    ray.get(actor.__ray_ready__.remote(), timeout=60)
                except ray.exceptions.RayActorError:
                    break
            else:
                raise AssertionError("the killed actor still answers")
        return submit(self, slot, job_id, placements)

    monkeypatch.setattr(RayEngine, "_submit", wrapped)
    return state["engines"]


def history(workdir) -> list[dict]:
    """The per-step statistics, without the wall-clock fields."""
    with open(os.path.join(workdir, "history.json")) as f:
        return [{k: v for k, v in h.items() if "wall" not in k} for h in json.load(f)]


def best(workdir) -> dict:
    with open(os.path.join(workdir, "best_placement.json")) as f:
        placement = json.load(f)
    placement["metadata"].pop("created", None)
    return placement


# A cluster whose second device is a GPU, which this CPU-only machine lacks: a sample that puts any op there
# fails (UNSUPPORTED for an op without a GPU kernel, an error when the session cannot place it), so only the
# all-CPU samples get a step time. The samples' outcomes then differ by more than any timing noise.
CPU_AND_MISSING_GPU = {
    "name": "cpu_and_missing_gpu",
    "devices": [
        {"name": "/device:CPU:0", "type": "CPU", "memory_bytes": 8 << 30},
        {"name": "/device:GPU:0", "type": "GPU", "memory_bytes": 8 << 30},
    ],
    "links": {"default": {"bandwidth": 1e10, "latency": 0.0}},
}


@pytest.mark.slow
def test_session_samples_on_two_actors_one_killed_come_back_in_order_and_keep_the_same_best(
    local_ray, tmp_path, monkeypatch
):
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(CPU_AND_MISSING_GPU))
    made = recording(monkeypatch)
    args = [*TINY, "--config.placer.grouping.target_groups=2", "--config.placer.train.samples_per_step=8"]
    args += [f"--cluster={cluster}", "--measure=session", "--steps=1"]
    assert call("placer.train_main", *args, f"--workdir={tmp_path / 'here'}") == 0
    engines = killing(monkeypatch, first_call=1, every=False)  # the first actor dies measuring its chunk
    assert call("placer.train_main", *args, f"--workdir={tmp_path / 'ray'}", "--engine=ray", "--workers=2") == 0
    (engine,) = engines
    assert engine.retried == 1  # its chunk was measured again on the other actor
    here, there = made
    assert type(there.inner).__name__ == "RayMeasurer"
    # One call with the step's 8 samples each (one step: no update before they are drawn); the same seed
    # sampled the same placements.
    assert len(here.calls) == len(there.calls) == 1
    (sent_here, got_here), (sent_there, got_there) = here.calls[0], there.calls[0]
    assert len(sent_there) == 8
    assert [list(p.devices) for p in sent_there] == [list(p.devices) for p in sent_here]
    # Each came back with its own outcome, in sample order: a step time exactly for the samples with every op
    # on the CPU, measured in a real session of an actor (seconds at most, even on a loaded machine).
    on_cpu = [all(p.device_names[d] == "/device:CPU:0" for d in p.devices) for p in sent_here]
    assert any(on_cpu) and not all(on_cpu)  # both kinds drawn, so the order of results matters
    assert [m.ok for m in got_here] == [m.ok for m in got_there] == on_cpu
    assert all(0 < m.step_time < 10 for m in got_there if m.ok)
    # Both runs keep the one all-CPU placement (two groups, both on the CPU) as their best.
    assert best(tmp_path / "ray")["ops"] == best(tmp_path / "here")["ops"]
    assert set(best(tmp_path / "here")["ops"].values()) == {"/device:CPU:0"}


@pytest.mark.slow
def test_simulated_search_on_ray_equals_in_process_through_lost_workers_and_resume(
    local_ray, tmp_path, monkeypatch, capfd
):
    # The simulator measures exactly, so the search on Ray must equal the in-process one bit for bit.
    args = [*TINY, "--steps=2"]
    assert call("placer.train_main", *args, f"--workdir={tmp_path / 'here'}") == 0
    ray_args = [*args, f"--workdir={tmp_path / 'ray'}", "--engine=ray", "--workers=2"]
    killing(monkeypatch, first_call=3, every=True)  # step 1 sends chunks 1 and 2; then every actor dies
    capfd.readouterr()
    assert call("placer.train_main", *ray_args) == 1
    err = capfd.readouterr().err.strip().splitlines()
    # Three tries of a chunk (the first and --workers=2 more), each on a fresh actor, then the search stops.
    assert err[-1].startswith("error: 3 measurement workers in a row died (")
    assert err[-1].endswith("; stopped at step 1, checkpoint written; continue with --resume")
    assert "Traceback" not in "\n".join(err)
    assert not os.path.exists(tmp_path / "ray" / "summary.json")
    assert history(tmp_path / "ray") == history(tmp_path / "here")[:1]
    # The checkpoint continues on fresh actors to the same end as in process.
    monkeypatch.undo()
    assert call("placer.train_main", *ray_args, "--resume") == 0
    assert history(tmp_path / "ray") == history(tmp_path / "here")
    assert best(tmp_path / "ray") == best(tmp_path / "here")


@pytest.mark.slow
def test_pretraining_on_ray_equals_pretraining_in_process(local_ray, tmp_path):
    import tensorflow as tf  # noqa: PLC0415

    args = [
        "--config=configs/pretrain.py:small",
        "--config.pretrain.graphs=gen:layered:30:0,gen:layered:30:1",
        "--config.pretrain.clusters=k80x2",
        "--config.pretrain.samples_per_step=4",
        "--steps=3",
        "--noprogress",
    ]
    assert call("placer.pretrain_main", *args, f"--workdir={tmp_path / 'here'}") == 0
    assert call("placer.pretrain_main", *args, f"--workdir={tmp_path / 'ray'}", "--engine=ray", "--workers=2") == 0
    here = tf.train.load_checkpoint(str(tmp_path / "here" / "checkpoints"))
    there = tf.train.load_checkpoint(str(tmp_path / "ray" / "checkpoints"))
    # The variables' values (the object graph beside them names Keras layers by creation order).
    names = sorted(n for n in here.get_variable_to_shape_map() if n.endswith("VARIABLE_VALUE"))
    assert names == sorted(n for n in there.get_variable_to_shape_map() if n.endswith("VARIABLE_VALUE"))
    assert sum(n.startswith("policy/") for n in names) > 10
    # Same samples, same simulated step times, same updates: the same weights.
    for name in names:
        np.testing.assert_array_equal(here.get_tensor(name), there.get_tensor(name), err_msg=name)


@pytest.mark.parametrize("module", ["placer.train_main", "placer.pretrain_main"])
def test_engine_ray_without_ray_is_refused_with_the_install_command(module, tmp_path, monkeypatch, capfd):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    config = "configs/nmt.py:tiny" if module == "placer.train_main" else "configs/pretrain.py:small"
    capfd.readouterr()
    code = call(module, f"--config={config}", f"--workdir={tmp_path / 'w'}", "--engine=ray", "--workers=2")
    err = capfd.readouterr().err.strip()
    assert code == 2
    assert err == (
        "error: --engine=ray needs Ray, an optional extra: pip install 'placer-toolkit[ray]' "
        "(in a checkout: pip install -e '.[ray]')"
    )
    assert not os.path.exists(tmp_path / "w")


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--workers=2", "error: --workers=2 needs --engine=ray (in process, placements are measured one by one)"),
        ("--ray_address=head:6379", "error: --ray_address=head:6379 needs --engine=ray"),
    ],
)
def test_ray_flags_without_the_ray_engine_are_refused(flag, message, tmp_path, capfd):
    capfd.readouterr()
    code = call("placer.train_main", "--config=configs/nmt.py:tiny", f"--workdir={tmp_path / 'w'}", flag)
    assert code == 2
    assert capfd.readouterr().err.strip() == message
    assert not os.path.exists(tmp_path / "w")
