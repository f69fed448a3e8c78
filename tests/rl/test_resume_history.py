"""Resuming a search refuses a corrupt or missing history.json instead of dropping it."""

import json
import shutil

import numpy as np
import pytest

from configs.common import placer_config
from placer.core import cluster as cluster_lib
from placer.core.errors import InputError
from placer.core.op_graph import OpGraph
from placer.measure.simulator import Simulator
from placer.rl import learn_seq2seq
from placer.rl import problem as problem_lib
from placer.rl.reinforce import Trainer
from placer.rl.search_loop import Limits

pytestmark = pytest.mark.slow  # the module's fixture trains and saves a run


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A 3-op chain searched for 2 steps and saved; returns a function making a fresh trainer in a copy."""
    graph = OpGraph.create(
        "chain", ["a", "b", "c"], ["MatMul"] * 3, [("a", "b", 1 << 20), ("b", "c", 1 << 20)],
        device_types=["GPU"], compute_cost=np.ones((3, 1)),
    )  # fmt: skip
    cluster = cluster_lib.make("two", [cluster_lib.Device(f"/device:GPU:{i}", "GPU", 1 << 30) for i in range(2)])
    c = placer_config()
    c.policy.hidden_size = 8
    c.train.samples_per_step = 2
    problem, _ = problem_lib.make_problem(graph, cluster, c)

    work = tmp_path_factory.mktemp("saved")
    learn_seq2seq.loop_for(problem, cluster, Simulator(graph, cluster), c, str(work), seed=0).run(Limits(rounds=2))

    def trainer(workdir):
        shutil.copytree(work, workdir)
        return Trainer(problem, Simulator(graph, cluster), c, str(workdir), seed=0)

    return trainer


@pytest.mark.parametrize("content", ["[{", "[1, 2]", None])
def test_bad_history_is_refused_in_one_line(saved, tmp_path, content):
    trainer = saved(tmp_path / "w")
    path = tmp_path / "w" / "history.json"
    assert len(trainer.history) == 0 and path.exists()
    if content is None:
        path.unlink()
    else:
        path.write_text(content)
    with pytest.raises(InputError, match="history.json: cannot resume") as e:
        trainer.restore()
    assert "\n" not in str(e.value)


def test_history_past_the_checkpoint_is_dropped(saved, tmp_path):
    # A kill between history.json and its checkpoint leaves a step the checkpoint does not hold:
    # it is run again after the resume, so it must not stay in the history (or curve.csv) twice.
    trainer = saved(tmp_path / "w")
    path = tmp_path / "w" / "history.json"
    history = json.loads(path.read_text())
    path.write_text(json.dumps([*history, dict(history[-1], step=3)]))
    assert trainer.restore() == 2
    assert [h["step"] for h in trainer.history] == [1, 2]
