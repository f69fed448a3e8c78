"""placer-search --jobs with default flags (in-process engine): the same seeds give the same result."""

import json
import textwrap

import pytest

from bench.testing.workloads import chains_graph
from placer.core import io as graph_io
from tests.binaries import call

# Each run builds and traces a policy: about 8 s per run on a loaded 2-core machine.
pytestmark = pytest.mark.slow


def _jobs_file(folder) -> str:
    """Two searches of 2 iterations, up to 2 slots each: `a` (seq2seq, 2 chains of 2 ops) at 0 s, `b` (annealing,
    a chain of 3) at 0.1 s."""
    graph_io.save(chains_graph("a", 2, 2, 0.01), str(folder / "a.graph.json"))
    graph_io.save(chains_graph("b", 1, 3, 0.02), str(folder / "b.graph.json"))
    path = folder / "jobs.py"
    path.write_text(
        textwrap.dedent(f"""\
        import ml_collections


        def job(**kw):
            d = dict(cluster="k80x2", steps=2, max_slots=2, hidden_size=8, type_embedding_size=4,
                     device_embedding_size=4, merge_single_consumer=False)
            d.update(kw)
            return ml_collections.ConfigDict(d)


        def get_config():
            c = ml_collections.ConfigDict()
            c.jobs = [
                job(name="a", graph={str(folder / "a.graph.json")!r}, arrival_s=0.0, seed=0),
                job(name="b", graph={str(folder / "b.graph.json")!r}, arrival_s=0.1, seed=1, method="annealing_warm"),
            ]
            return c
        """)
    )
    return str(path)


def test_two_default_runs_write_the_same_summary(tmp_path, capsys):
    jobs = _jobs_file(tmp_path)
    outputs = []
    for k in range(2):
        workdir = tmp_path / f"run{k}"
        flags = [f"--jobs={jobs}", "--slots=3", "--epoch_s=0.2", f"--workdir={workdir}"]
        assert call("placer.search_main", *flags) == 0
        policy_dir = workdir / "slaq-safe"  # the default allocator
        outputs.append(((policy_dir / "summary.json").read_text(), (policy_dir / "allocations.csv").read_text()))
    capsys.readouterr()
    assert outputs[0] == outputs[1]  # every field, the run's seconds and every allocation included
    summary = json.loads(outputs[0][0])
    # The clock counts epochs of 0.2 s: `a` runs its iterations in [0, 0.2] and [0.2, 0.4]; `b`, arriving at
    # 0.1 s, starts at the next epoch (0.2 s) and runs in [0.2, 0.4] and [0.4, 0.6], so the run ends at 0.6 s.
    # On wall time none of these would be round multiples of the epoch.
    jobs_out = {j["name"]: j for j in summary["jobs"]}
    assert summary["wall_s"] == pytest.approx(0.6)
    assert jobs_out["b"]["start_s"] == pytest.approx(0.2)
    assert [(j["status"], j["iterations"]) for j in summary["jobs"]] == [("done", 2), ("done", 2)]
