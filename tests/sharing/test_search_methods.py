"""placer-search jobs name their method: SLAQ shares the slots among seq2seq, annealing and random search."""

import csv

import pytest

from bench.testing.workloads import write_workload
from placer.core import cluster as cluster_lib
from placer.core import io as graph_io
from placer.core.errors import InputError
from placer.core.placement import Placement
from placer.measure.pool import InProcessEngine
from placer.measure.simulator import Simulator
from placer.sharing import jobs as search_jobs

METHODS = {"s0": "seq2seq", "s1": "annealing_warm", "s2": "random_search"}


def write_jobs(folder) -> str:
    """bench.testing.workloads' three searches of 4 steps, one per method, all arriving at once."""
    return write_workload(folder, steps=4, arrivals=(0.0, 0.0, 0.0), methods=tuple(METHODS.values()))


def run(work, workdir):
    from placer.sharing import search  # noqa: PLC0415 (TensorFlow)

    return search.run_search(
        work, slots=4, epoch_s=0.2, policy="slaq", workdir=str(workdir), lockstep=True,
        engine_factory=lambda n: InProcessEngine(n), log=lambda *a: None,
    )["slaq"]  # fmt: skip


@pytest.mark.slow
def test_slaq_shares_the_slots_among_three_methods(tmp_path):
    work = search_jobs.load_workload(write_jobs(tmp_path))
    assert [j.config.placer.train.method for j in work.jobs] == list(METHODS.values())
    summary = run(work, tmp_path / "out")
    assert {j["name"]: (j["status"], j["iterations"]) for j in summary["jobs"]} == {n: ("done", 4) for n in METHODS}
    for i, (name, method) in enumerate(METHODS.items()):
        sim = Simulator(graph_io.load(str(tmp_path / f"g{i}.graph.json")), cluster_lib.load("k80x2"))
        with open(tmp_path / "out" / "slaq" / "curves" / f"{name}.csv") as f:
            rows = list(csv.DictReader(f))
        best = [float(r["best_step_time"]) for r in rows]
        assert best == sorted(best, reverse=True)  # the best so far never gets worse
        # No placement beats the longest chain on a GPU (s0: 3 ops of 10 ms, s1: 2 of 20, s2: 2 of 30).
        assert best[-1] >= {"s0": 0.03, "s1": 0.04, "s2": 0.06}[name] - 1e-9
        placement = Placement.load(str(tmp_path / "out" / "slaq" / "jobs" / name / "best_placement.json"))
        assert placement.metadata["learner"] == method
        assert sim.measure([placement])[0].step_time == pytest.approx(best[-1])
    # Without a warm start (jobs have none) annealing measures single_gpu alone first (all six ops of 20 ms on
    # one GPU, 120 ms), then its neighbours.
    with open(tmp_path / "out" / "slaq" / "curves" / "s1.csv") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[0]["best_step_time"]) == pytest.approx(0.12, rel=1e-3)
    assert float(rows[-1]["best_step_time"]) <= float(rows[0]["best_step_time"])
    # SLAQ gave every search slots, and never more than the pool's 4 in an epoch.
    with open(tmp_path / "out" / "slaq" / "allocations.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["job"] for r in rows if int(r["slots"]) > 0} == set(METHODS)
    per_epoch = {}
    for r in rows:
        per_epoch[r["time_s"]] = per_epoch.get(r["time_s"], 0) + int(r["slots"])
    assert max(per_epoch.values()) <= 4


def test_a_job_names_a_known_method_as_a_string(tmp_path):
    path = write_jobs(tmp_path)
    (tmp_path / "bad").mkdir()
    with pytest.raises(InputError, match="job 's0': method: must be a string"):
        search_jobs.load_workload(write_workload(tmp_path / "bad", methods=(3, "seq2seq", "seq2seq")))
    work = search_jobs.load_workload(path)
    work.jobs[1].config.placer.train.method = "annealing_hot"
    with pytest.raises(InputError, match="job 's1': --config.placer.train.method: unknown method 'annealing_hot'"):
        run(work, tmp_path / "out")
    work.jobs[1].config.placer.train.method = "annealing_warm"
    work.jobs[1].config.placer.train.learning = False
    with pytest.raises(InputError, match="job 's1': .*annealing_warm learns nothing"):
        run(work, tmp_path / "out")
    assert not (tmp_path / "out" / "slaq" / "jobs").exists()
