"""bench/slaq_traces.py (the trace format, the sharing simulator) and bench/slaq_synthetic.py (the synthetic workload)."""

import numpy as np
import pytest

from bench.slaq_synthetic import synthetic_curve, synthetic_workload
from bench.slaq_traces import (
    TraceJob,
    load_trace,
    save_trace,
    simulate_sharing,
)
from placer.core.errors import InputError
from placer.sharing.allocators import FairAllocator
from placer.sharing.runtime_model import fit_runtime
from placer.sharing.slaq import SlaqAllocator

HEADER = "job,arrival_s,iteration,loss,seconds_1,seconds_2\n"


def _write(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    return str(path)


def test_round_trip_keeps_every_value(tmp_path):
    jobs = synthetic_workload(3, seed=4, max_slots=3, iterations=(5, 8), noise=0.01)
    narrow = TraceJob("narrow", 99.5, np.array([3.0, 2.0, 1.5]), np.array([[np.nan], [1.0], [1.25]]))
    path = str(tmp_path / "trace.csv")
    save_trace(path, jobs + [narrow])
    back = load_trace(path)
    assert [j.job_id for j in back] == [j.job_id for j in jobs] + ["narrow"]
    for a, b in zip(jobs + [narrow], back, strict=True):
        assert a.arrival_s == b.arrival_s
        np.testing.assert_array_equal(a.losses, b.losses)
        np.testing.assert_array_equal(a.seconds[1:], b.seconds[1:])
    assert back[-1].max_slots == 1


@pytest.mark.parametrize(
    "body,needle",
    [
        ("job,arrival,iteration,loss,seconds_1\n", "header"),
        ("job,arrival_s,iteration,loss,seconds_2\n", "seconds_1"),
        (HEADER + "a,0,0,1.0,,\na,0,1,x,1,1\n", "row 3, column loss"),
        (HEADER + "a,0,0,1.0,,\na,0,1,0.5,1,-1\n", "row 3, column seconds_2"),
        (HEADER + "a,0,0,1.0,,\na,5,1,0.5,1,1\n", "row 3, column arrival_s"),
        (HEADER + "a,0,0,1.0,,\na,0,2,0.5,1,1\n", "row 3, column iteration"),
        (HEADER + "a,0,0,1.0,,\na,0,1,0.5,1\n", "row 3: 5 columns"),
        (HEADER + "a,0,0,1.0,,\na,0,1,0.5,,1\n", "row 3, column seconds_1"),
        (HEADER + "a,0,0,1.0,,\n", "no iteration after 0"),
        (HEADER + "a,0,0,inf,,\na,0,1,0.5,1,1\n", "row 2, column loss"),
        ("", "empty"),
        (HEADER + "a,0,0,1.0,,\na,0,1,0.5,1,1", "row 3: no line end after the last row; the trace looks cut short"),
        (HEADER + "a,0,0,1.0,,\na,0,1,0.5,1,1\na,0,3,0.2,1,1\n", "row 4, column iteration: job a expects iteration 2"),
    ],
)
def test_bad_trace_names_file_row_and_column(tmp_path, body, needle):
    path = _write(tmp_path, body)
    with pytest.raises(InputError, match=needle) as e:
        load_trace(path)
    assert str(path) in str(e.value)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="nope.csv"):
        load_trace(str(tmp_path / "nope.csv"))


def test_simulation_by_hand_single_job():
    # One job, 2 slots, iterations of 1 s (1 slot) / 0.5 s (2 slots); epochs of 1 s.
    job = TraceJob("a", 0.0, np.array([4.0, 3.0, 2.5, 2.0, 1.0]), np.tile([1.0, 0.5], (5, 1)))
    r = simulate_sharing([job], FairAllocator(), 2, epoch_s=1.0, horizon_s=5.0)
    times, losses = r.curves["a"]
    np.testing.assert_allclose(times, [0.0, 0.5, 1.0, 1.5, 2.0])
    np.testing.assert_allclose(losses, [4.0, 3.0, 2.5, 2.0, 1.0])
    # Total reduction 3: 80% needs loss <= 1.6 (t = 2.0), same for 90% and 95%.
    assert r.time_to[0.8][0] == r.time_to[0.95][0] == 2.0
    # Quality at the epoch starts 0, 1: 0, 1.5/3; then the job is done and the replay ends.
    np.testing.assert_allclose(r.mean_quality, [0.0, 0.5])


def test_partial_iterations_carry_over_and_late_arrivals_wait():
    # Iterations of 1.5 s on one slot; epochs of 1 s; the job arrives at 0.5 s.
    job = TraceJob("a", 0.5, np.array([2.0, 1.0, 0.0]), np.full((3, 1), 1.5))
    r = simulate_sharing([job], FairAllocator(), 1, epoch_s=1.0, horizon_s=10.0)
    np.testing.assert_allclose(r.curves["a"][0], [0.5, 2.5, 4.0])
    assert r.time_to[0.9][0] == pytest.approx(3.5)


def test_slaq_reaches_90_percent_no_later_than_fair():
    # A long job arrives first and has passed 90% of its reduction before two fast
    # jobs arrive at 40 s; SLAQ moves its slots to the new ones, fair keeps a third.
    secs = lambda n: np.tile(4.0 / np.arange(1, 9) + 0.05, (n + 1, 1))  # noqa: E731
    jobs = [
        TraceJob("long", 0.0, 5.0 * synthetic_curve("inv_linear", (0.3, 1.0, 0.0), 400), secs(400)),
        TraceJob("b", 40.0, 2.0 * synthetic_curve("exp", (0.9, 0.0, 1.0), 60), secs(60)),
        TraceJob("c", 40.0, 50.0 * synthetic_curve("exp", (0.92, 0.0, 0.0), 60), secs(60)),
    ]
    fair = simulate_sharing(jobs, FairAllocator(), 12, epoch_s=2.0, horizon_s=200.0)
    slaq = simulate_sharing(jobs, SlaqAllocator(epoch_s=2.0), 12, epoch_s=2.0, horizon_s=200.0)
    assert np.all(np.isfinite(slaq.time_to[0.9]))
    assert slaq.mean_time_to(0.9) <= fair.mean_time_to(0.9)
    assert slaq.time_to[0.9][1] < fair.time_to[0.9][1] and slaq.time_to[0.9][2] < fair.time_to[0.9][2]


def test_synthetic_workload_serial_fraction_is_what_the_runtime_fit_recovers():
    for lo, hi in ((0.05, 0.05), (0.1, 0.3)):
        for j in synthetic_workload(20, seed=3, max_slots=8, iterations=(5, 6), serial=(lo, hi)):
            rt = fit_runtime(np.arange(1, 9), j.seconds[1])
            assert lo - 1e-9 <= rt.b / rt.a <= hi + 1e-9
            assert 1.0 <= rt.a <= 10.0


def test_synthetic_workload_shape_and_poisson_arrivals():
    jobs = synthetic_workload(200, seed=0, max_slots=4, iterations=(10, 20))
    arrivals = np.array([j.arrival_s for j in jobs])
    assert arrivals[0] == 0.0 and np.all(np.diff(arrivals) >= 0)
    assert np.mean(np.diff(arrivals)) == pytest.approx(15.0, rel=0.2)
    for j in jobs[:10]:
        assert 10 <= j.iterations <= 20 and j.seconds.shape == (j.iterations + 1, 4)
        assert np.all(np.diff(j.losses) <= 0)  # noiseless curves fall
        assert np.all(np.diff(j.seconds[1]) < 0)  # more slots, shorter iterations


class _LargestLastLoss:
    """The one slot to the running job whose last reported loss is largest (first on ties)."""

    def allocate(self, states, num_slots):
        top = max(range(len(states)), key=lambda i: (states[i].losses[-1], -i))
        return {st.job_id: int(i == top) for i, st in enumerate(states)}


def test_allocation_on_losses_progress_on_the_evaluation_curve():
    # 1 slot, iterations of 1 s, epochs of 1 s. The allocator sees a: 4, 3, 2 and b: 5, 1, 0.5:
    # t=0 b (5 > 4), t=1 a (4 > 1), t=2 a (3 > 1), t=3 b (a is done). Had it seen a's evaluation
    # curve (4, 0.2, 0), t=2 would have gone to b (0.2 < 1).
    ones = np.ones((3, 1))
    a = TraceJob("a", 0.0, np.array([4.0, 3.0, 2.0]), ones, eval_losses=np.array([4.0, 0.2, 0.0]))
    b = TraceJob("b", 0.0, np.array([5.0, 1.0, 0.5]), ones)
    r = simulate_sharing([a, b], _LargestLastLoss(), 1, epoch_s=1.0, horizon_s=5.0)
    np.testing.assert_allclose(r.curves["a"][0], [0.0, 2.0, 3.0])
    np.testing.assert_allclose(r.curves["a"][1], [4.0, 0.2, 0.0])
    np.testing.assert_allclose(r.curves["b"][0], [0.0, 1.0, 4.0])
    # a on its evaluation curve: total 4, 90% needs <= 0.4, at t = 2 (on its losses it would be t = 3).
    # b on its losses: total 4.5, 80% needs <= 1.4 (t = 1), 90% <= 0.95 (t = 4).
    assert r.time_to[0.9].tolist() == [2.0, 4.0]
    assert r.time_to[0.8].tolist() == [2.0, 1.0]
    assert r.mean_time_to(0.9) == 3.0
    # Quality at t = 2: a (4 - 0.2) / 4 = 0.95, b (5 - 1) / 4.5.
    assert r.mean_quality[2] == pytest.approx((0.95 + 4.0 / 4.5) / 2)


def test_a_job_without_reduction_has_no_time_to_and_is_left_out_of_the_mean():
    # Two slots, one each (fair); x's evaluation curve is flat, y's falls 2 -> 0 in two 1 s iterations.
    ones = np.ones((3, 1))
    x = TraceJob("x", 0.0, np.array([3.0, 2.0, 1.0]), ones, eval_losses=np.full(3, 7.0))
    y = TraceJob("y", 0.0, np.array([2.0, 1.0, 0.0]), ones)
    r = simulate_sharing([x, y], FairAllocator(), 2, epoch_s=1.0, horizon_s=4.0)
    assert np.isnan(r.time_to[0.9][0]) and r.time_to[0.9][1] == 2.0
    assert r.mean_time_to(0.9) == 2.0
