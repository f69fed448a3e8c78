"""slaq.greedy_slots: SLAQ's greedy over any keys (the allocator's, or a benchmark oracle's)."""

import math

import numpy as np

from placer.sharing.slaq import greedy_slots


def _table(rows):
    """keys_of over a hand-written [J, C] table whose column s - 1 is the key of slot s."""
    table = np.array(rows, dtype=float)

    def keys_of(jobs, slots):
        cols = np.clip(slots.astype(int) - 1, 0, table.shape[1] - 1)
        return table[jobs][:, cols]

    return keys_of


def test_each_job_gets_one_slot_then_the_largest_keys_win():
    # Slot keys a: 9, 5, 4, 1; b: 8, 6, 3, 2. With 6 slots: one each, then the 4 largest of
    # a's 5, 4, 1 and b's 6, 3, 2: 6 (b), 5 (a), 4 (a), 3 (b): a 3, b 3. With 4: 6 and 5: 2 + 2.
    keys = _table([[9, 5, 4, 1], [8, 6, 3, 2]])
    inf = np.array([math.inf, math.inf])
    assert greedy_slots(keys, inf, 6).tolist() == [3, 3]
    assert greedy_slots(keys, inf, 4).tolist() == [2, 2]
    # One slot for two jobs: the larger first-slot key (9).
    assert greedy_slots(keys, inf, 1).tolist() == [1, 0]


def test_a_capped_job_gets_no_slot_past_its_cap():
    # a's keys are the largest, but a can use 2 slots: the rest go to b.
    keys = _table([[9, 9, -math.inf, -math.inf], [1, 1, 1, 1]])
    assert greedy_slots(keys, np.array([2.0, math.inf]), 6).tolist() == [2, 4]
