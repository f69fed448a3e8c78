"""Runs a module of the project as a command, the way a user would."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_module(module: str, *args: str, cwd: str = ROOT, timeout: float = 300, **env: str):
    """Runs `python -m module *args` with the project importable and TF's logs off.

    Args:
      module: e.g. "placer.measure_main".
      args: command-line arguments.
      cwd: working directory.
      timeout: seconds before the run fails the test.
      env: extra environment variables.

    Returns:
      The subprocess.CompletedProcess, stdout and stderr as text.
    """
    environ = dict(
        os.environ,
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        TF_CPP_MIN_LOG_LEVEL="3",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout
    )
