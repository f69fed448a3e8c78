"""Counts an input may hold (ops, devices, trace rows, jobs) and devices read as files: refused at once, one line."""

import json
import os
import time

import pytest

from placer.core import checks, cluster, io
from placer.core.errors import InputError
from tests import binaries


@pytest.fixture(autouse=True)
def _default_caps():
    yield
    checks.reset_caps()


def _cluster(n: int) -> dict:
    return {"name": "many", "devices": [{"name": f"gpu{i}", "type": "GPU", "memory_bytes": 1 << 30} for i in range(n)]}


def test_cluster_of_30000_devices_is_refused_within_a_second(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_cluster(30_000)))
    t0 = time.monotonic()
    with pytest.raises(InputError) as e:
        cluster.load(str(path))
    assert time.monotonic() - t0 < 1.0  # it took 6.7 GiB and a traceback before
    assert (
        str(e.value) == f"{path}: devices: 30000 devices, over the cap of 1024; if it is genuine, raise --max_devices"
    )


def test_device_cap_is_a_flag_and_the_default_is_restored(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_cluster(3)))
    assert cluster.load(str(path)).num_devices == 3
    checks.set_cap("devices", 2)
    with pytest.raises(InputError, match=r"c\.json: devices: 3 devices, over the cap of 2; .* --max_devices"):
        cluster.load(str(path))
    checks.reset_caps()
    assert checks.cap("devices") == checks.DEFAULT_CAPS["devices"]


def test_graph_over_the_op_cap_is_refused(tmp_path):
    from bench.testing.badinput import inputs

    path = tmp_path / "g.json"
    path.write_text(json.dumps(inputs.GRAPH))  # 3 ops
    checks.set_cap("ops", 2)
    with pytest.raises(InputError, match=r"g\.json: ops: 3 ops, over the cap of 2; if it is genuine, raise --max_ops"):
        io.load(str(path))
    checks.set_cap("ops", 3)
    assert io.load(str(path)).num_ops == 3  # at the cap, not over


def test_trace_from_dev_zero_is_refused_within_a_second(tmp_path):
    from bench import slaq_traces

    t0 = time.monotonic()
    with pytest.raises(InputError, match="a device, not a trace file"):
        slaq_traces.load_trace("/dev/zero")  # it read until the kernel killed it at 24 GB before
    assert time.monotonic() - t0 < 1.0
    r = binaries.run("bench.slaq_replay", "--trace=/dev/zero", f"--workdir={tmp_path / 'out'}")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["error: cannot read trace: /dev/zero: a device, not a trace file"]
    assert not (tmp_path / "out").exists()


def test_trace_over_the_row_and_job_caps_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    rows = ["job,arrival_s,iteration,loss,seconds_1"]
    for j in range(4):
        rows += [f"j{j},0,0,4,", f"j{j},0,1,2,1"]
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    r = binaries.run("bench.slaq_replay", f"--trace={path}", "--max_rows=8", f"--workdir={out}")
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {path}: 9 rows, over the cap of 8; if it is genuine, raise --max_rows"
    r = binaries.run("bench.slaq_replay", f"--trace={path}", "--max_jobs=3", f"--workdir={out}")
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {path}: 4 jobs, over the cap of 3; if it is genuine, raise --max_jobs"
    r = binaries.run("bench.slaq_replay", f"--trace={path}", "--max_jobs=4", "--policy=fair", f"--workdir={out}")
    assert r.returncode == 0, r.stderr
    assert checks.cap("jobs") == checks.DEFAULT_CAPS["jobs"]  # the flag's value did not outlive the run


def test_jobs_file_over_the_job_cap_or_a_device_is_refused(tmp_path):
    from bench.testing.workloads import write_workload
    from placer.sharing import jobs as search_jobs

    path = write_workload(tmp_path)
    checks.set_cap("jobs", 2)
    with pytest.raises(InputError, match=r"jobs: 3 jobs, over the cap of 2; if it is genuine, raise --max_jobs"):
        search_jobs.load_workload(path)
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)  # reading it would wait for a writer forever
    with pytest.raises(InputError, match=r"fifo\.py: not a regular file"):
        search_jobs.load_workload(str(fifo))
