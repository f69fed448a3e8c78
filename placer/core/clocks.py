"""Timing a call on two clocks: wall time and this process's CPU time (no TensorFlow)."""

from __future__ import annotations

import statistics
import time


def median_clocks(fn, calls: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of this process) of `calls` calls of `fn()`.

    CPU time counts every thread of the process and leaves out the time other
    jobs hold the cores, which wall time on a shared machine includes.
    """
    wall, cpu = [], []
    for _ in range(calls):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return float(statistics.median(wall)), float(statistics.median(cpu))
