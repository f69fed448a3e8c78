"""Stopping a long run at the end of its current step on SIGINT (Ctrl-C) or SIGTERM.

A binary wraps its work in `on_signals()`; the loops of the libraries ask
`requested()` before each step and end early when it is true, so the run
writes its checkpoint and files as at any other end. The binary then says
where it stopped and exits with the shell's status for the signal (130 for
SIGINT, 143 for SIGTERM). A second signal while the first is being honoured
exits at once, without saving.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(Exception):  # noqa: N818 (a stop, not an error)
    """Raised by a library loop that a signal stopped after it saved; the binary prints the line and exits.

    Args:
      step: the steps finished and saved.
      exit_code: the shell's status for the signal (130 SIGINT, 143 SIGTERM).
    """

    def __init__(self, step: int, exit_code: int):
        super().__init__(stopped_line(step))
        self.step = int(step)
        self.exit_code = int(exit_code)


def current() -> StopRequest | None:
    """The StopRequest of the innermost `on_signals()`, or None outside one."""
    return _current


class StopRequest:
    """The signal that asked a run to stop, if any.

    Attributes:
      signum: the first signal received (signal.SIGINT or SIGTERM), or None.
    """

    def __init__(self):
        self.signum: int | None = None

    @property
    def exit_code(self) -> int:
        """The shell's exit status for the signal: 128 + its number (130 SIGINT, 143 SIGTERM); 0 if none."""
        return 0 if self.signum is None else 128 + int(self.signum)

    def handle(self, signum, frame) -> None:  # noqa: ARG002 (signal handler signature)
        if self.signum is not None:
            sys.stderr.write("\nstopped again: exiting now, without saving\n")
            sys.stderr.flush()
            os._exit(128 + int(signum))  # noqa: SLF001 (at once: no cleanup, no traceback)
        self.signum = int(signum)


_current: StopRequest | None = None


def requested() -> bool:
    """True once SIGINT or SIGTERM arrived inside `on_signals()`: loops end before their next step."""
    return _current is not None and _current.signum is not None


@contextlib.contextmanager
def on_signals():
    """Installs the SIGINT and SIGTERM handlers for the duration; yields the StopRequest.

    Outside the main thread (where Python cannot install handlers) nothing is
    installed and `requested()` stays false.
    """
    global _current
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    previous = {s: signal.signal(s, request.handle) for s in SIGNALS}
    outer, _current = _current, request
    try:
        yield request
    finally:
        _current = outer
        for s, handler in previous.items():
            signal.signal(s, handler)


def stopped_line(step: int) -> str:
    """What a binary prints when a signal stopped it at `step` (steps finished and saved)."""
    return f"stopped at step {step}; continue with --resume"
