"""Inputs and runners shared by the test suite and the rest of bench/ (no TensorFlow; not part of the library).

- `workloads`: small generated graphs and placer-search jobs files;
- `badinput`: the corpus of hostile files, flag values and output paths,
  each with the one-line error a binary must give;
- `run_module`: runs one of the project's modules as a command, in a fresh
  process, the way a user does.
"""

from __future__ import annotations

import os
import subprocess
import sys

# The repository's root: the folder holding bench/ and the placer, configs and graphs packages.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_module(module: str, *args: str, cwd: str = ROOT, timeout: float = 300, **env: str):
    """Runs `python -m module *args` in a fresh process, the project importable and TF's logs off.

    Args:
      module: e.g. "placer.measure_main".
      args: command-line arguments.
      cwd: working directory.
      timeout: seconds before the run is stopped (subprocess.TimeoutExpired).
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
