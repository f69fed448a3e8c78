"""placer-search: jobs files, slot assignment, fault handling, metrics, and end-to-end runs."""

import csv
import json
import os
import threading
import time

import numpy as np
import pytest

from bench.testing.workloads import write_workload
from placer.core.errors import InputError
from placer.core.measurement import ERROR, TIMEOUT, Measurement
from placer.measure.pool import InProcessEngine, spread
from placer.sharing import jobs as search_jobs
from placer.sharing import report as search_report
from tests import binaries
from tests.cli import ROOT


def read_curve(path):
    with open(path) as f:
        return list(csv.DictReader(f))


# ----- pure pieces, by hand ------------------------------------------------------


def test_spread_and_assign_slots_by_hand():
    from placer.sharing.search import assign_slots

    assert spread(5, 2) == [[0, 2, 4], [1, 3]]
    assert spread(2, 4) == [[0], [1]]
    assert spread(0, 3) == []
    # a keeps its lowest slot, b keeps 2 and takes the lowest free one (1); 3 stays free.
    assert assign_slots({"a": [0, 1], "b": [2]}, {"a": 1, "b": 2}, [0, 1, 2, 3]) == {"a": [0], "b": [1, 2]}
    # A new job c takes what is free; a slot no longer in the pool (5) is dropped.
    assert assign_slots({"a": [5, 0]}, {"a": 2, "c": 2}, [0, 1, 2, 3]) == {"a": [0, 1], "c": [2, 3]}
    assert assign_slots({"a": [0]}, {"a": 0}, [0, 1]) == {"a": []}


def test_metrics_by_hand():
    # Losses 10, 8, 6, 4, 2 at 1..5 s after a start at 0.5 s; no smoothing (window 1).
    c = search_report.JobCurve("j", "done", 0.5, 5.5, [1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 8.0, 6.0, 4.0, 2.0])
    # Total reduction 8: 80% = 6.4 is reached at loss 2 (5 s, 4.5 s after the start); 50% at loss 6.
    assert search_report.time_to(c, 0.8, window=1) == pytest.approx(4.5)
    assert search_report.time_to(c, 0.5, window=1) == pytest.approx(2.5)
    assert search_report.quality_at(c, 3.5, window=1) == pytest.approx(0.5)
    assert search_report.quality_at(c, 0.9, window=1) == 0.0
    # Window 2: smoothed 10, 9, 7, 5, 3; total 7: 50% (3.5) first reached at 5 (4 s, 3.5 s after the
    # start), 80% (5.6) only at 3 (5 s).
    np.testing.assert_allclose(search_report.smooth(c.losses, 2), [10, 9, 7, 5, 3])
    assert search_report.time_to(c, 0.5, window=2) == pytest.approx(3.5)
    assert search_report.time_to(c, 0.8, window=2) == pytest.approx(4.5)
    flat = search_report.JobCurve("f", "done", 0.0, 2.0, [1.0, 2.0], [3.0, 3.0])
    assert np.isnan(search_report.time_to(flat, 0.8))
    # Mean quality of the running jobs: at 1.5 s c has only its first loss (0) and flat, whose loss
    # never fell, counts as 1; at 3.5 s flat has ended and c is at (10 - 6) / 8.
    np.testing.assert_allclose(search_report.mean_quality([c, flat], [1.5, 3.5], window=1), [0.5, 0.5])


# ----- engine faults ---------------------------------------------------------------


class _Cluster:
    num_devices = 2


class FaultyMeasurer:
    """Step time = the placement (a number); raises or sleeps on the calls named."""

    calls = 0
    lock = threading.Lock()

    def __init__(self, raise_on=(), hang_on=(), hang_s=1.5):
        self.raise_on, self.hang_on, self.hang_s = set(raise_on), set(hang_on), hang_s

    def measure(self, placements):
        with FaultyMeasurer.lock:
            FaultyMeasurer.calls += 1
            call = FaultyMeasurer.calls
        if call in self.raise_on:
            raise RuntimeError("device lost")
        if call in self.hang_on:
            time.sleep(self.hang_s)
        return [Measurement(float(p)) for p in placements]


def engine_with(**faults):
    FaultyMeasurer.calls = 0
    eng = InProcessEngine(2, measure_timeout_s=0.5, max_retries=1, factory=lambda g, c: FaultyMeasurer(**faults))
    eng.add_job("j", None, _Cluster())
    return eng


def test_worker_that_raises_is_retried_on_another_slot():
    with engine_with(raise_on={1}) as eng:
        res = eng.measure("j", [1.0, 2.0, 3.0, 4.0], [0, 1])
        assert [m.step_time for m in res] == [1.0, 2.0, 3.0, 4.0]
        assert eng.retried == 1


def test_worker_that_always_raises_counts_as_error():
    with engine_with(raise_on={1, 2, 3}) as eng:
        res = eng.measure("j", [1.0], [0, 1])
        assert res[0].failure == ERROR and "device lost" in res[0].message
        assert eng.measure("j", [5.0], [0])[0].step_time == 5.0  # the worker serves again


class BuggyMeasurer:
    """A measurer with a programming error: indexes a float."""

    def measure(self, placements):
        return [Measurement(p[0]) for p in placements]


def test_measurer_bug_fails_loudly_instead_of_as_a_failed_measurement():
    from placer.measure.pool import MeasurerBug

    with InProcessEngine(2, max_retries=3, factory=lambda g, c: BuggyMeasurer()) as eng:
        eng.add_job("j", None, _Cluster())
        with pytest.raises(MeasurerBug, match="TypeError"):
            eng.measure("j", [1.0, 2.0], [0, 1])
        assert eng.retried == 0  # a bug is not a dead worker: nothing measured again


def test_hung_worker_times_out_and_is_replaced():
    with engine_with(hang_on={1}, hang_s=2.0) as eng:
        res = eng.measure("j", [1.0, 2.0], [0])  # one chunk on slot 0; its first call hangs
        assert [m.failure for m in res] == [TIMEOUT, TIMEOUT]
        assert eng.timed_out == 1
        t = time.monotonic()
        assert eng.measure("j", [7.0], [0])[0].step_time == 7.0  # a fresh worker on slot 0
        assert time.monotonic() - t < 1.5


# ----- jobs files ---------------------------------------------------------------


@pytest.mark.parametrize(
    "fields,message",
    [
        (", learning_rte=0.1", "unknown field 'learning_rte'"),
        (", samples_per_step=8", "unknown field 'samples_per_step'"),
        (", hidden_size='big'", "hidden_size: must be an integer"),
        (", max_slots=0", "max_slots: must be >= 1"),
        (", config='configs/rnnlm.py:tiny'", "give exactly one of 'config' and 'graph'"),
        (", cluster='no_such_cluster'", "job 's0': cluster"),
        (", cluster='local:0'", "job 's0': cluster: cluster 'local:0': a local cluster is 'local' or 'local:N'"),
    ],
)
def test_bad_jobs_file_names_job_and_field(tmp_path, fields, message):
    path = write_workload(tmp_path, job_fields=fields)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        search_jobs.load_workload(path)


def test_bad_graph_steps_and_top_level_fields(tmp_path):
    with pytest.raises(InputError, match="job 's0': steps: must be >= 1"):
        search_jobs.load_workload(write_workload(tmp_path, steps=0))
    path = write_workload(tmp_path)
    os.remove(os.path.join(tmp_path, "g1.graph.json"))
    with pytest.raises(InputError, match="job 's1': graph"):
        search_jobs.load_workload(path)
    path = write_workload(tmp_path, top_fields="c.slots = 4")
    with pytest.raises(InputError, match="unknown field 'slots'"):
        search_jobs.load_workload(path)


def test_jobs_file_overrides_and_order(tmp_path):
    path = write_workload(tmp_path, arrivals=(2.0, 0.0, 1.0), top_fields="c.measure_seconds = 0.5")
    work = search_jobs.load_workload(path)
    assert [j.name for j in work.jobs] == ["s1", "s2", "s0"]
    j = work.jobs[0]
    assert j.config.placer.policy.hidden_size == 8 and j.config.placer.train.learning_rate == 0.05
    assert (
        j.max_slots == j.config.placer.train.samples_per_step
        and j.config.cluster == "k80x2"
        and work.measure_seconds == 0.5
    )


def test_cli_bad_jobs_file_is_one_line_exit_2(tmp_path):
    path = write_workload(tmp_path, job_fields=", colour='red'")
    p = binaries.run("placer.search_main", f"--jobs={path}", f"--workdir={tmp_path / 'out'}")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [p.stderr.strip()]
    assert p.stderr.startswith("error: ") and "unknown field 'colour'" in p.stderr
    assert not os.path.exists(tmp_path / "out")


def _run_search(work, workdir, policy, **kwargs):
    """placer.sharing.search.run_search on 4 in-process slots, epochs of 0.2 s, quietly."""
    from placer.sharing import search

    return search.run_search(
        work,
        slots=4,
        epoch_s=0.2,
        policy=policy,
        workdir=str(workdir),
        engine_factory=lambda n: InProcessEngine(n),
        log=lambda *a: None,
        **kwargs,
    )


def test_unknown_normaliser_is_refused_before_anything_starts(tmp_path):
    work = search_jobs.load_workload(write_workload(tmp_path, steps=5))
    with pytest.raises(InputError, match="unknown normaliser 'span'"):
        _run_search(work, tmp_path / "out", "both", normalise="span")
    assert not os.path.exists(tmp_path / "out")


def test_demo_jobs_file_is_valid():
    work = search_jobs.load_workload(os.path.join(ROOT, "configs/searches/demo.py"))
    assert len(work.jobs) == 5 and len({j.name for j in work.jobs}) == 5
    session = search_jobs.load_workload(os.path.join(ROOT, "configs/searches/demo.py:session"))
    assert [j.cluster for j in session.jobs] == ["local:2", "local:2"]
    assert (session.session_warmup, session.session_steps) == (1, 3)
    assert search_jobs.local_cpu_count(session) == 2 and search_jobs.local_cpu_count(work) is None
    search_jobs.check_measure(session, "session")


def test_tf_measure_needs_a_model_config(tmp_path):
    work = search_jobs.load_workload(write_workload(tmp_path))
    search_jobs.check_measure(work, "sim")
    for kind in ("grappler", "session"):
        with pytest.raises(InputError, match=f"job 's0': --measure={kind} runs the job's TF model"):
            search_jobs.check_measure(work, kind)
    with pytest.raises(InputError, match="session_steps: must be >= 1"):
        search_jobs.load_workload(write_workload(tmp_path, top_fields="c.session_steps = 0"))


# ----- end to end ---------------------------------------------------------------


@pytest.mark.slow
def test_three_searches_on_four_slots_under_both_policies(tmp_path):
    work = search_jobs.load_workload(write_workload(tmp_path, steps=5))
    out = _run_search(work, tmp_path / "out", "both", normalise="fitted_total")
    assert set(out) == {"slaq", "fair"}
    assert out["slaq"]["normalise"] == "fitted_total" and out["fair"]["normalise"] is None
    for policy in ("slaq", "fair"):
        folder = tmp_path / "out" / policy
        summary = json.loads((folder / "summary.json").read_text())
        assert [j["status"] for j in summary["jobs"]] == ["done"] * 3
        for name in ("s0", "s1", "s2"):
            rows = read_curve(folder / "curves" / f"{name}.csv")
            assert [int(r["iteration"]) for r in rows] == list(range(5))
            assert all(1 <= int(r["slots"]) <= 4 for r in rows)
            best = [float(r["best_step_time"]) for r in rows]
            assert best == sorted(best, reverse=True)  # best so far never gets worse
            # The best placement on k80x2 is at least the longest chain on a GPU.
            assert best[-1] >= {"s0": 0.03, "s1": 0.04, "s2": 0.06}[name] - 1e-9
            assert (folder / "jobs" / name / "best_placement.json").exists()
        with open(folder / "allocations.csv") as f:
            rows = list(csv.DictReader(f))
        per_epoch = {}
        for r in rows:
            per_epoch[r["time_s"]] = per_epoch.get(r["time_s"], 0) + int(r["slots"])
        assert max(per_epoch.values()) <= 4
    with pytest.raises(InputError, match="holds an earlier run"):
        _run_search(work, tmp_path / "out", "fair")


class FailingJobEngine(InProcessEngine):
    """Measuring for job s1 raises in the search itself (not in a worker)."""

    def measure(self, job_id, placements, slots):
        if job_id == "s1":
            raise RuntimeError("search s1 broke")
        return super().measure(job_id, placements, slots)


@pytest.mark.slow
def test_failed_search_gives_its_slots_back_and_faulty_workers_lose_nothing(tmp_path):
    from placer.sharing import search

    work = search_jobs.load_workload(write_workload(tmp_path, steps=3, arrivals=(0.0, 0.0, 0.0)))
    prepared = search.prepare(work, log=lambda *a: None)
    FaultyMeasurer.calls = 0

    def factory(graph, cluster):
        sim = __import__("placer.measure.simulator", fromlist=["Simulator"]).Simulator(graph, cluster)
        faulty = FaultyMeasurer(raise_on={2, 5})

        class Both:
            def measure(self, placements):
                faulty.measure([0.0])  # raises on the calls named
                return sim.measure(placements)

        return Both()

    with FailingJobEngine(4, factory=factory, max_retries=2) as eng:
        summary = search.run_policy(
            prepared, eng, "fair", epoch_s=0.2, workdir=str(tmp_path / "fair"), log=lambda *a: None
        )
        assert eng.retried >= 1
    status = {j["name"]: (j["status"], j["iterations"]) for j in summary["jobs"]}
    assert status == {"s0": ("done", 3), "s1": ("failed", 0), "s2": ("done", 3)}
    assert "search s1 broke" in summary["jobs"][1]["error"]
    with open(tmp_path / "fair" / "allocations.csv") as f:
        rows = list(csv.DictReader(f))
    # Once s1 failed, s0 and s2 share all 4 slots: 2 each under fair share.
    failed_at = json.loads((tmp_path / "fair" / "curves.json").read_text())["s1"]["end_s"]
    after = [r for r in rows if float(r["time_s"]) > failed_at]
    assert after and all(r["job"] != "s1" for r in after)
    epochs = {}
    for r in after:
        epochs.setdefault(r["time_s"], {})[r["job"]] = int(r["slots"])
    both = [e for e in epochs.values() if len(e) == 2]
    assert both and all(e == {"s0": 2, "s2": 2} for e in both)
