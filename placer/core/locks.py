"""A lock on a workdir in use, so that two runs never write one folder (no TensorFlow).

The lock is an OS file lock (`fcntl.flock`) on the workdir folder itself, so
locking writes nothing there (a refused or finished run leaves the folder as
it was). The OS drops it when the process exits, by any means, so a killed
run never leaves its workdir locked. A run refused because of the lock
names the holder's process id, read from the kernel's table of locks
(/proc/locks).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence

from placer.core import atomic
from placer.core.errors import InputError
from placer.core.outputs import Inputs

_held: dict[str, tuple[int, bool]] = {}  # resolved workdir -> (its open descriptor, whether the lock made it)


def holder(path: str) -> int | None:
    """The id of the process holding a flock on `path`, from /proc/locks (Linux); None if not found."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            table = f.read().splitlines()
    except OSError:
        return None
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table:  # "1: FLOCK  ADVISORY  WRITE 2931 fe:00:2156567 0 EOF"
        parts = line.split()
        if "FLOCK" in parts and "->" not in parts:
            i = parts.index("FLOCK")
            if len(parts) > i + 4 and parts[i + 4] == key and parts[i + 3].isdigit():
                return int(parts[i + 3])
    return None


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
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        pid = holder(path)
        who = f"process {pid}" if pid is not None else "another process"
        raise InputError(
            f"--{flag}: {path} is in use by {who}; wait for that run to end or pick another --{flag}"
        ) from None
    _held[key] = (fd, made)


def release_all() -> None:
    """Releases every workdir lock this process holds (the OS does so at exit in any case).

    A workdir that the lock made and that is still empty (a run refused
    before it wrote anything) is removed, so a refused run leaves nothing behind.
    """
    while _held:
        key, (fd, made) = _held.popitem()
        if made and os.path.isdir(key) and not os.listdir(key):
            os.rmdir(key)
        os.close(fd)


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
