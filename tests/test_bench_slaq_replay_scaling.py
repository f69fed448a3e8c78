"""bench/slaq_traces.py replays like a run: a job's slot cap follows its recorded scaling at each iteration."""

import numpy as np

from bench.slaq_traces import TraceJob, simulate_sharing
from placer.sharing.allocators import FairAllocator


def test_a_job_whose_batch_grows_takes_more_slots_from_then_on():
    # Iterations 1-3 take 1 s on any slot count (the batch fills one slot); from iteration 4 the
    # batch is 4x larger and an iteration takes 1 / s s on s = 1..4 slots. Alone on 4 slots with
    # 1 s epochs: one slot for iterations 1-3 (done at 1, 2, 3 s), then all four: 0.25 s each
    # (3.25, 3.5, 3.75 s). Capped by the first iteration's scaling it would run on one slot to 6 s.
    secs = np.array([[1.0] * 4] * 4 + [[1.0, 0.5, 1 / 3, 0.25]] * 3)
    job = TraceJob("grows", 0.0, np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0]), secs)
    r = simulate_sharing([job], FairAllocator(), 4, epoch_s=1.0, horizon_s=20.0)
    np.testing.assert_allclose(r.curves["grows"][0], [0.0, 1.0, 2.0, 3.0, 3.25, 3.5, 3.75])
    assert [s for _, _, s in r.allocations] == [1, 1, 1, 4]
