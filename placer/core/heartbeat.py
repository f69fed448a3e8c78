"""A line at least every so many seconds from a long loop that draws no progress bar."""

from __future__ import annotations

import time
from collections.abc import Callable

EVERY_S = 30.0  # the longest a run without a progress bar stays silent


class Heartbeat:
    """Prints a status line when `every_s` seconds passed since the last one.

    Args:
      every_s: seconds between lines.
      enabled: False draws nothing (a progress bar is shown instead).
      log: where the line goes.
      clock: seconds, monotonic (time.monotonic; tests give their own).
    """

    def __init__(
        self,
        every_s: float = EVERY_S,
        *,
        enabled: bool = True,
        log: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.every_s = float(every_s)
        self.enabled = enabled
        self.log = log
        self.clock = clock
        self.last = clock()

    def __call__(self, line: Callable[[], str]) -> bool:
        """Prints `line()` if the time has come (the text is built only then); returns whether it printed."""
        now = self.clock()
        if not self.enabled or now - self.last < self.every_s:
            return False
        self.last = now
        self.log(line())
        return True
