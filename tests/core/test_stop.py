"""placer.core.stop: the first SIGINT/SIGTERM is recorded for the loops, a second one exits at once."""

import os
import signal
import subprocess
import sys

import pytest

from placer.core import stop
from tests.cli import ROOT


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_first_signal_is_recorded_not_raised(sig, code):
    before = signal.getsignal(sig)
    assert not stop.requested()
    with stop.on_signals() as request:
        os.kill(os.getpid(), sig)  # no KeyboardInterrupt, no exit: the handler only records it
        assert stop.requested() and request.signum == sig and request.exit_code == code
    assert not stop.requested()  # outside the block, nothing asks the loops to stop
    assert signal.getsignal(sig) is before


def test_stopped_carries_the_line_and_the_status():
    e = stop.Stopped(7, 143)
    assert str(e) == "stopped at step 7; continue with --resume" and e.exit_code == 143


def test_second_signal_exits_at_once_without_the_work_after_it():
    # The loop below would print "saved" after its step; the second SIGINT ends the process before.
    code = (
        "import os, signal\n"
        "from placer.core import stop\n"
        "with stop.on_signals():\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    print('saved')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True
    )
    assert r.returncode == 130
    assert "saved" not in r.stdout and "Traceback" not in r.stderr
    assert r.stderr.strip() == "stopped again: exiting now, without saving"
