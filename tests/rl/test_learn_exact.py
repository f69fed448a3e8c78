"""placer-train's exact method on two chains: annealing, then a CP-SAT solve that proves the optimum."""

import json

import numpy as np
import pytest

from placer.core import io as graph_io
from tests.hand_graphs import MB, two_chains, write_gpu_cluster
from tests.inprocess import call

pytestmark = pytest.mark.slow  # placer-train loads TensorFlow and annealing before the solve (15 s on 2 cores)


def test_exact_method_proves_the_two_chains_optimum(tmp_path, capsys):
    # a0 -> a1 -> a2 and b0 -> b1 -> b2, 1 s per op, 100 MB edges at 100 MB/s (1 s each) on two GPUs:
    # one chain per GPU is the critical path, 3 s, and the bound (critical path binds; the load LP's
    # 6 GPU-seconds over two GPUs is 3 s too, a tie the path wins). The summary records the solve.
    graph_io.save(two_chains(edge_bytes=100 * MB, gpu_seconds=np.ones(6)), str(tmp_path / "g.graph.json"))
    write_gpu_cluster(tmp_path / "gpus.json", "gpus")
    code = call(
        "placer.train_main",
        "--noprogress",
        "--config=configs/nmt.py:tiny",
        f"--graph={tmp_path / 'g.graph.json'}",
        f"--cluster={tmp_path / 'gpus.json'}",
        f"--workdir={tmp_path / 'w'}",
        "--config.placer.train.method=exact",
        "--config.placer.train.exact_seconds=10",
        "--config.placer.train.warm_start=single_gpu",
        "--max_placements=8",
        "--seed=0",
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads((tmp_path / "w" / "summary.json").read_text())
    assert summary["method"] == "exact" and summary["best_step_time"] == 3.0
    assert summary["lower_bound"] == 3.0 and summary["lower_bound_binds"] == "critical path"
    assert summary["exact_status"] == "optimal" and summary["exact_proven_bound"] == 3.0
    assert summary["exact_model_makespan"] == 3.0 and summary["exact_step_time"] == 3.0
    assert summary["placements"] <= 8
    assert "1.00x the lower bound (3.000 s (critical path binds; load 3.000 s)" in out + err
