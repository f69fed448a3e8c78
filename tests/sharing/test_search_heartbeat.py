"""placer-search on the clock of epochs still prints progress by wall time while a long epoch runs."""

import threading
import time
from types import SimpleNamespace

from placer.sharing import search


def test_a_long_lockstep_epoch_ticks_while_its_iterations_run():
    lock = threading.Condition()
    # One search holding a slot, whose iteration takes 1 s of wall time.
    s = SimpleNamespace(slots=[0], turns=0, status="running")

    def iterate():
        with lock:
            while s.turns <= 0:  # until the epoch grants its turn
                lock.wait()
        time.sleep(1.0)
        with lock:
            s.turns -= 1
            lock.notify_all()

    ticks = []
    clock = [0.0]
    worker = threading.Thread(target=iterate)
    worker.start()
    assert not search._take_turns([s], lock, clock, 5.0, lambda: ticks.append(time.monotonic()))
    worker.join()
    assert clock == [5.0]  # the epoch ends at 5 s of the run's clock, however long it took
    # The wait wakes every 0.2 s and ticks each time, so a heartbeat of 30 s (or 10 epochs) can print
    # during an epoch: 1 s of waiting gives about 5 ticks.
    assert len(ticks) >= 3, ticks
