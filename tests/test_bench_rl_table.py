"""Tests of the RL bench's table (bench/rl.py): medians over seeds, their range, and RL against annealing per seed."""

from bench import rl


def _run(fixed, anneal, placements, expert=1.0):
    return {
        "graph": "g",
        "ops": 10,
        "groups": 4,
        "baselines": {"expert": expert, "single_gpu": 0.9},
        "rl_fixed": {"best": fixed, "samples": placements, "curve": []},
        "local_search": {"best": anneal, "samples": placements, "curve": []},
    }


def test_three_seeds_give_medians_ranges_and_signed_gaps():
    # Seeds: RL 0.5 / 0.3 / 0.45 against annealing 0.4 / 0.4 / 0.5: medians 0.45 and 0.4; RL is
    # 0.5 / 0.4 - 1 = +25% (slower), 0.3 / 0.4 - 1 = -25% (faster) and 0.45 / 0.5 - 1 = -10%.
    head, rule, row = rl._table([[_run(0.5, 0.4, 100), _run(0.3, 0.4, 300), _run(0.45, 0.5, 200)]])
    assert head.count("|") == rule.count("|") == row.count("|")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == "single_gpu 0.9000"
    assert cells[5] == "0.4500 (0.3000-0.5000)"
    assert cells[6] == "0.4000 (0.4000-0.5000)"
    assert cells[7] == "200"
    assert cells[8] == "+25.0%, -25.0%, -10.0%"


def test_one_seed_has_no_range_and_targets_use_medians():
    (row,) = rl._table([[_run(0.3, 0.4, 50)]])[2:]
    assert "0.3000 |" in row and "(" not in row
    # RL under the expert and the best baseline, and under annealing: every from-scratch target met.
    verdicts = dict(rl._targets([[_run(0.3, 0.4, 50)]]))
    assert all(ok for name, ok in verdicts.items() if "from scratch" in name)
    verdicts = dict(rl._targets([[_run(0.5, 0.4, 50), _run(0.45, 0.5, 50), _run(0.6, 0.55, 50)]]))
    # Medians 0.5 (RL) and 0.5 (annealing): not better than annealing; 0.5 is under the expert.
    assert not verdicts["from scratch better than same-budget annealing on at least 1 of 1"]
    assert verdicts["from scratch at or under the expert on every graph"]
