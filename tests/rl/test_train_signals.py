"""placer-train stopped by SIGINT in its own process: it saves at the end of its step, says so, and --resume
continues. (SIGTERM goes through the same handler, placer.core.stop: tests/core/test_stop.py.)
"""

import json
import re
import signal

import pytest

from placer.core import io as graph_io
from tests.hand_graphs import MB, two_chains, write_gpu_cluster
from tests.inprocess import call
from tests.signal_run import interrupt

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two chains of three ops with uneven costs, and a cluster of two GPUs."""
    d = tmp_path_factory.mktemp("signals")
    graph_io.save(two_chains(edge_bytes=10 * MB, gpu_seconds=[1.0, 2.0, 3.0, 3.0, 1.0, 2.0]), str(d / "g.graph.json"))
    write_gpu_cluster(d / "gpus.json", "gpus")
    return d


def _args(files, work, steps):
    return [
        "--noprogress",
        "--config=configs/nmt.py:tiny",
        "--config.placer.train.method=seq2seq",
        "--config.placer.policy.hidden_size=16",
        "--config.placer.train.warm_start=",
        "--config.placer.train.checkpoint_every=5",
        f"--graph={files / 'g.graph.json'}",
        f"--cluster={files / 'gpus.json'}",
        f"--workdir={work}",
        f"--steps={steps}",
        "--seed=3",
    ]


def _checkpoint_step(work) -> int:
    try:
        text = (work / "checkpoints" / "checkpoint").read_text()
    except OSError:
        return 0
    return int(re.search(r'model_checkpoint_path: "ckpt-(\d+)"', text).group(1))


def test_sigint_saves_the_current_step_and_resume_continues(files, tmp_path, capsys):
    work = tmp_path / "w"
    # Signalled once the first checkpoint (step 5) is on disk, long before step 100000.
    ready = lambda: _checkpoint_step(work) >= 5  # noqa: E731
    status, _, err = interrupt("placer.train_main", _args(files, work, 100000), ready, sig=signal.SIGINT)
    assert status == 130, err
    assert "Traceback" not in err
    m = re.fullmatch(r"stopped at step (\d+); continue with --resume", err.strip().splitlines()[-1])
    assert m, err
    step = int(m.group(1))
    # Everything up to the stopped step was saved: the checkpoint, the history and the summary.
    assert _checkpoint_step(work) == step >= 5
    assert [h["step"] for h in json.loads((work / "history.json").read_text())] == list(range(1, step + 1))
    assert json.loads((work / "summary.json").read_text())["steps"] == step
    assert (work / "best_placement.json").exists()
    # --resume runs the three steps left to step + 3, in process.
    assert call("placer.train_main", *_args(files, work, step + 3), "--resume") == 0
    assert f"resumed at step {step}" in capsys.readouterr().out
    assert json.loads((work / "summary.json").read_text())["steps"] == step + 3
    assert [h["step"] for h in json.loads((work / "history.json").read_text())] == list(range(1, step + 4))
