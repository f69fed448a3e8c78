"""What placer-train prints: times with units on small graphs, the warm start, a pretrained policy's origin."""

import pytest

from placer.rl import search_loop, train_lib, transfer_lib


def test_status_line_keeps_microseconds():
    # configs/nmt.py:tiny on k80x4 (sim): its best of 3.27 us was printed as 0.0000s.
    line = search_loop.status_line(40, 640, 3.27e-6)
    assert line == "round 40: 640 placements, best step time 3.270 us"


@pytest.mark.parametrize(
    ("warm", "resume", "init_from", "says"),
    [
        ("", False, None, "warm start: off (uniform policy)"),
        ("expert,scotch", False, None, "warm start: on, imitating the fastest of expert,scotch"),
        ("expert", True, None, "warm start: off (resumed from the checkpoint)"),
        ("expert", False, "/p", "warm start: off (policy from --init_from=/p)"),
    ],
)
def test_start_line_says_whether_a_warm_start_is_on(warm, resume, init_from, says):
    assert train_lib.start_line(warm, resume, init_from) == says


def test_trained_on_names_graphs_clusters_and_held_out():
    info = {"steps": 600, "train": [f"g{i}" for i in range(6)], "clusters": ["k80x2", "k80x4"], "held_out": ["nmt"]}
    assert transfer_lib.trained_on(info) == (
        "pretrained 600 steps on 6 graphs (g0, g1, g2, g3, ... (2 more)) x 2 clusters (k80x2, k80x4); held out: nmt"
    )
