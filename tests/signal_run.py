"""Runs a binary in its own process and sends it a signal once a condition on its files holds."""

import os
import signal
import subprocess
import sys
import time

from tests.cli import ROOT


def interrupt(module: str, args: list[str], ready, *, sig=signal.SIGINT, timeout: float = 180, cwd: str = ROOT):
    """Starts `python -m module args`, sends `sig` once `ready()` is true, and waits for the exit.

    Args:
      module: e.g. "placer.train_main".
      args: its command line.
      ready: a function of no arguments, polled every 50 ms, true once the
        run has done what the test needs before the signal.
      sig: the signal to send.
      timeout: seconds to wait for `ready` and then for the exit.
      cwd: working directory.

    Returns:
      (exit status, stdout, stderr), the outputs as text.
    """
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    try:
        while not ready() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"exited before the signal: {proc.communicate()}"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err
