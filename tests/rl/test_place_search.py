"""placer-place's default: a search of --max_placements measured placements started from the pretrained policy,
whose placement file records that budget; and the refusals of methods that do not start from a policy."""

import pytest

from baselines import single
from placer.core import cluster as cluster_lib
from placer.core import generated
from placer.core import io as graph_io
from placer.core.errors import InputError
from placer.core.placement import Placement
from placer.measure.simulator import Simulator
from placer.rl import pretrain_lib, train_lib
from tests.inprocess import call
from tests.rl.test_transfer import tiny_config


@pytest.mark.slow
def test_place_searches_from_the_policy_and_records_its_budget(tmp_path, capsys):
    policy = tmp_path / "policy"
    pretrain_lib.run(tiny_config("gen:chain:16:0"), workdir=str(policy), steps=2, seed=0, progress=False, log=print)
    graph, k80x4 = generated.generate("layered", 30, 5), cluster_lib.load("k80x4")
    graph_io.save(graph, str(tmp_path / "g.graph.json"))
    argv = [f"--policy={policy}", f"--graph={tmp_path / 'g.graph.json'}", "--cluster=k80x4"]
    capsys.readouterr()
    assert call("placer.place_main", *argv, "--max_placements=48", "--noprogress", f"--out={tmp_path / 'p.json'}") == 0
    out, err = capsys.readouterr()
    assert "pl/s" not in err and "48/48" not in err  # no progress bar
    placement = Placement.load(str(tmp_path / "p.json"))
    assert placement.metadata["method"] == "ce_or_annealing"  # the method by its own name
    # ce_or_annealing measured 48 placements, the file says so (placer-compare gives its searches as many), and
    # the step time it records is the simulator's for that placement.
    assert placement.metadata["learner"] == "ce_or_annealing" and placement.metadata["samples"] == 48
    sim = Simulator(graph, k80x4)
    assert sim.measure([placement])[0].step_time == pytest.approx(placement.metadata["step_time"])
    # Its first round measures single_gpu, so the search is never slower than that baseline.
    assert placement.metadata["step_time"] <= sim.measure([single.place_single_gpu(graph, k80x4)])[0].step_time
    assert "pretrained + ce_or_annealing (48 placements)" in out and "single_gpu" in out
    # Methods that do not start from the policy, and zero-shot's --samples with a search, are refused.
    for bad, word in (("--method=annealing", "--method"), ("--samples=8", "--samples")):
        assert call("placer.place_main", *argv, bad, f"--out={tmp_path / 'q.json'}") == 2
        err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
        assert len(err) == 1 and word in err[0]
        assert not (tmp_path / "q.json").exists()


def test_train_refuses_a_policy_for_a_method_that_ignores_it(tmp_path):
    from configs import common  # noqa: PLC0415

    config = common.get_config()
    config.placer.train.method = "annealing"
    with pytest.raises(InputError, match="--init_from: method annealing starts from nothing learned"):
        train_lib.run(config, workdir=str(tmp_path), steps=1, init_from=str(tmp_path), progress=False)
