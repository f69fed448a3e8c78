"""placer-train --engine=ray --workers=2 with --measure=session keeps the same best placement as in process.

Session step times vary from run to run, so two placements of nearly equal
time may swap places between runs. The cluster here makes the candidates
differ by more than any noise: its second device is a GPU, which this
CPU-only machine lacks, so a sample that puts any op there fails (UNSUPPORTED
for an op without a GPU kernel, an error when the session cannot place it)
and only the all-CPU samples get a step time. One step (no update before the
samples are drawn) with the same seed samples the same placements in both
runs; if the Ray engine returned results out of sample order, a failure would
land on an all-CPU sample or a time on a GPU one, and the best would differ.
"""

import json
import os

import pytest

from placer.measure import registry
from tests.binaries import call

CLUSTER = {
    "name": "cpu_and_missing_gpu",
    "devices": [
        {"name": "/device:CPU:0", "type": "CPU", "memory_bytes": 8 << 30},
        {"name": "/device:GPU:0", "type": "GPU", "memory_bytes": 8 << 30},
    ],
    "links": {"default": {"bandwidth": 1e10, "latency": 0.0}},
}

ARGS = [
    "--config=configs/nmt.py:tiny",
    "--config.placer.policy.hidden_size=16",
    "--config.placer.grouping.target_groups=2",
    "--config.placer.train.warm_start=",
    "--config.placer.train.samples_per_step=8",
    "--measure=session",
    "--steps=1",
    "--noprogress",
    "--seed=3",
]


def recorded(monkeypatch) -> list[list]:
    """Records, per measurer placer-train makes, the (placement, measurement) pairs it returned, in order."""
    made: list[list] = []
    make = registry.make_measurer

    def wrapped(*args, **kwargs):
        inner, calls = make(*args, **kwargs), []
        made.append(calls)

        class Recording:
            def measure(self, placements):
                results = inner.measure(placements)
                calls.extend(zip(placements, results, strict=True))
                return results

            def close(self):
                getattr(inner, "close", lambda: None)()

            def __getattr__(self, name):
                return getattr(inner, name)

        return Recording()

    monkeypatch.setattr(registry, "make_measurer", wrapped)
    return made


def best_ops(workdir) -> dict:
    with open(os.path.join(workdir, "best_placement.json")) as f:
        return json.load(f)["ops"]


@pytest.mark.slow
def test_session_search_on_two_ray_workers_keeps_the_in_process_best(local_ray, tmp_path, monkeypatch):
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(CLUSTER))
    made = recorded(monkeypatch)
    args = [*ARGS, f"--cluster={cluster}"]
    assert call("placer.train_main", *args, f"--workdir={tmp_path / 'here'}") == 0
    assert call("placer.train_main", *args, f"--workdir={tmp_path / 'ray'}", "--engine=ray", "--workers=2") == 0
    here, there = made
    assert len(here) == len(there) == 8
    # The same seed drew the same 8 placements, and each came back with its own outcome: a step time
    # exactly for the samples with every op on the CPU.
    assert [list(p.devices) for p, _ in there] == [list(p.devices) for p, _ in here]
    on_cpu = [all(p.device_names[d] == "/device:CPU:0" for d in p.devices) for p, _ in here]
    assert [m.ok for _, m in here] == on_cpu
    assert [m.ok for _, m in there] == on_cpu
    assert any(on_cpu) and not all(on_cpu)  # both kinds drawn, so the order of results matters
    # Both runs keep an all-CPU placement as their best: the same placement.
    assert best_ops(tmp_path / "ray") == best_ops(tmp_path / "here")
    assert set(best_ops(tmp_path / "here").values()) == {"/device:CPU:0"}
