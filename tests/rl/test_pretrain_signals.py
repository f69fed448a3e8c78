"""placer-pretrain stopped by SIGINT: the policy folder holds the stopped step, and --resume continues it."""

import json
import re

import pytest

from tests.inprocess import call
from tests.signal_run import interrupt

pytestmark = pytest.mark.slow


def _args(work, steps):
    return [
        "--noprogress",
        "--config=configs/pretrain.py:small",
        "--config.pretrain.graphs=gen:chain:16:0",
        "--config.pretrain.held_out=gen:layered:16:50",
        "--config.pretrain.clusters=k80x2",
        "--config.pretrain.samples_per_step=4",
        "--config.pretrain.checkpoint_every=3",
        "--config.placer.policy.gnn_hidden_size=16",
        "--config.placer.policy.gnn_layers=1",
        f"--workdir={work}",
        f"--steps={steps}",
    ]


def _saved_steps(work) -> int:
    try:
        return int(json.loads((work / "policy.json").read_text())["steps"])
    except (OSError, ValueError, KeyError):
        return 0


def test_sigint_saves_the_policy_at_the_stopped_step_and_resume_continues(tmp_path, capsys):
    work = tmp_path / "policy"
    status, _, err = interrupt("placer.pretrain_main", _args(work, 100000), lambda: _saved_steps(work) >= 3)
    assert status == 130, err
    assert "Traceback" not in err
    m = re.fullmatch(r"stopped at step (\d+); continue with --resume", err.strip().splitlines()[-1])
    assert m, err
    step = int(m.group(1))
    assert step >= 3 and _saved_steps(work) == step  # policy.json names the checkpoint of the stopped step
    assert call("placer.pretrain_main", *_args(work, step + 2), "--resume") == 0
    assert f"resumed at step {step}" in capsys.readouterr().out
    assert _saved_steps(work) == step + 2
