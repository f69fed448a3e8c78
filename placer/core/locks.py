"""A lock on a workdir in use, so that two runs never write one folder (no TensorFlow).

The lock is an OS file lock (`fcntl.flock`) on WORKDIR/.lock, which also
records the holder's process id. The OS drops it when the process exits, by
any means, so a killed run never leaves its workdir locked; the stale file
that stays behind is harmless.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from typing import IO

from placer.core import atomic
from placer.core.errors import InputError
from placer.core.outputs import Inputs

LOCK_FILE = ".lock"

_held: dict[str, tuple[IO, bool]] = {}  # resolved workdir -> (its open lock file, whether the lock made it)


def lock_workdir(path: str, flag: str = "workdir") -> None:
    """Locks the folder `path` (made if missing) for this process until it exits or `release_all` runs.

    Locking a folder this process already holds does nothing.

    Args:
      path: the workdir.
      flag: the flag that named it, for the message.

    Raises:
      InputError: another process holds the lock; the message names its pid.
    """
    key = os.path.realpath(path)
    if key in _held:
        return
    made = not os.path.isdir(path)
    os.makedirs(path, exist_ok=True)
    f = open(os.path.join(path, LOCK_FILE), "a+")  # noqa: SIM115 (held open for the whole run)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip()
        f.close()
        who = f"process {holder}" if holder.isdigit() else "another process"
        raise InputError(
            f"--{flag}: {path} is in use by {who}; wait for that run to end or pick another --{flag}"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    _held[key] = (f, made)


def release_all() -> None:
    """Releases every workdir lock this process holds (the OS does so at exit in any case).

    A workdir that the lock made and that holds nothing else (a run refused
    before it wrote anything) is removed, so a refused run leaves nothing behind.
    """
    while _held:
        key, (f, made) = _held.popitem()
        if made and os.listdir(key) == [LOCK_FILE]:
            os.unlink(os.path.join(key, LOCK_FILE))
            os.rmdir(key)
        f.close()


def claim_workdir(path: str, flag: str = "workdir", *, inputs: Inputs | None = None, owned: Sequence[str] = ()) -> None:
    """Checks an output folder that a run reuses (`atomic.check_output_dir`) and locks it.

    Args:
      path: the workdir.
      flag: the flag that named it.
      inputs: the command's inputs by flag name; none may lie inside `path`.
      owned: passed to `atomic.check_output_dir`.

    Raises:
      InputError: as `atomic.check_output_dir` and `lock_workdir`.
    """
    atomic.check_output_dir(path, flag, reuse=True, owned=owned, inputs=inputs)
    lock_workdir(path, flag)
