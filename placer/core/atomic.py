"""Atomic file writes (a temporary file in the same folder, then a rename) and output checks.

Files are written with the permissions the umask leaves of 0666 (0644
under umask 022) and folders of 0777, as `open` and `mkdir` would; a full
disk or quota is one line naming the file, and the previous file stays.
Before any work, an output is refused if it is a special file (a device
node, a FIFO) or would replace or delete an input of the same command
(placer/core/outputs.py).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import IO

from placer.core import outputs
from placer.core.errors import InputError

_FULL = (errno.ENOSPC, errno.EDQUOT)  # a full disk or an exhausted quota


def umask() -> int:
    """The process's umask, read without changing it where Linux tells it (/proc/self/status)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def full_disk_error(path: str, e: OSError, need: int | None = None) -> InputError | None:
    """The one-line error for a write of `need` bytes to `path` that failed for want of space or quota, else None."""
    if e.errno not in _FULL:
        return None
    size = f" {need} bytes" if need is not None else ""
    return InputError(
        f"{path}: cannot write{size} ({os.strerror(e.errno)}); an earlier file there is unchanged: free space, "
        "then run again (with --resume, a run continues from its last checkpoint)"
    )


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", need: int | None = None) -> Iterator[IO]:
    """Opens a temporary file next to `path` that replaces `path` on success.

    If the body raises, the temporary file is removed and `path` is untouched,
    so a reader never sees a half-written file.

    Args:
      path: final file path.
      mode: "w" for text or "wb" for bytes.
      need: the bytes to be written, for the message of a full disk (None: unknown).

    Yields:
      The open temporary file.

    Raises:
      InputError: `path` is a special file, or the disk or quota is full
        (one line naming `path`; it keeps its earlier content).
    """
    refuse_special(path, "")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    except OSError as e:
        raise full_disk_error(path, e, need) or e from None
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~umask())  # mkstemp makes 0600; the umask decides, as for open()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        full = full_disk_error(path, e, need) if isinstance(e, OSError) else None
        if full is not None:
            raise full from None
        raise


def write_text(path: str, text: str) -> None:
    """Writes `text` to `path` atomically."""
    with atomic_open(path, "w", len(text.encode("utf-8", "surrogateescape"))) as f:
        f.write(text)


def write_bytes(path: str, data: bytes) -> None:
    """Writes `data` to `path` atomically."""
    with atomic_open(path, "wb", len(data)) as f:
        f.write(data)


def refuse_special(path: str, flag: str) -> None:
    """Raises InputError if `path` (a link followed) is a device node, FIFO or socket: outputs are regular files.

    The atomic rename would otherwise put a regular file in place of, say, /dev/null.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        where = f"--{flag}: " if flag else ""
        raise InputError(f"{where}{path} is a special file (device, FIFO or socket); outputs go only to regular files")


def check_output_file(
    path: str, flag: str, *, overwrite: bool = False, inputs: Mapping[str, str | Sequence[str] | None] | None = None
) -> None:
    """Checks, before any work starts, that a file can be written at `path`.

    Args:
      path: the output file.
      flag: the flag that named it, e.g. "out", for the message.
      overwrite: allow replacing an existing file.
      inputs: the command's input paths by flag name ({"graph": "g.json"}):
        none may be `path` (by name, link or hard link) or hold it.

    Raises:
      InputError: one line naming the flag: `path` is a folder or a special
        file, is an input (or inside an input folder), exists (without
        `overwrite`), or its folder cannot be made or written.
    """
    if os.path.isdir(path):
        raise InputError(f"--{flag}: {path} is a folder, not a file")
    refuse_special(path, flag)
    outputs.refuse_input_file(path, flag, inputs or {})
    if os.path.lexists(path) and not overwrite:
        raise InputError(f"--{flag}: {path} exists (give --overwrite to replace it)")
    _check_writable(os.path.dirname(os.path.abspath(path)), flag)


def check_output_dir(
    path: str,
    flag: str,
    *,
    overwrite: bool = False,
    reuse: bool = False,
    owned: Sequence[str] = (),
    inputs: Mapping[str, str | Sequence[str] | None] | None = None,
) -> None:
    """Checks, before any work starts, that a folder of outputs can be written at `path`.

    Args:
      path: the output folder.
      flag: the flag that named it, e.g. "out", for the message.
      overwrite: allow replacing an existing non-empty folder.
      reuse: allow writing into an existing folder (a workdir to resume).
      owned: name patterns (fnmatch) of the files the binary writes there;
        with `overwrite`, a folder holding anything else is refused, so
        --overwrite never deletes a user's other files; with `reuse`, an
        input under one of these names is refused.
      inputs: the command's input paths by flag name: none may lie inside
        `path` (the folder is replaced, or its files written) or be `path`.

    Raises:
      InputError: one line naming the flag: `path` is a file, is a non-empty
        folder (without `overwrite` or `reuse`, or holding files not
        `owned`), holds an input, or cannot be made or written.
    """
    if os.path.lexists(path) and not os.path.isdir(path):
        raise InputError(f"--{flag}: {path} is a file, not a folder")
    outputs.refuse_input_inside(path, flag, inputs or {}, owned if reuse and not overwrite else None)
    held = sorted(os.listdir(path)) if os.path.isdir(path) else []
    if held and not (overwrite or reuse):
        raise InputError(f"--{flag}: {path} exists and is not empty (give --overwrite to replace it)")
    if held and overwrite and owned:
        other = [n for n in held if not any(fnmatch.fnmatchcase(n, p) for p in owned)]
        if other:
            raise InputError(
                f"--{flag}: {path} holds {other[0]!r}, not an output of this command; --overwrite replaces "
                "only a folder of its own outputs"
            )
    _check_writable(os.path.abspath(path), flag)


def _check_writable(folder: str, flag: str) -> None:
    """Raises InputError unless a file can be created in `folder` or in the nearest folder above it that exists."""
    probe = folder
    while not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise InputError(f"--{flag}: {probe} is a file, not a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".write-check.", dir=probe)
    except OSError as e:
        raise InputError(f"--{flag}: cannot write in {probe} ({e.strerror})") from None
    os.close(fd)
    os.unlink(tmp)


@contextlib.contextmanager
def folder_set(
    path: str,
    *,
    overwrite: bool = False,
    flag: str = "out",
    owned: Sequence[str] = (),
    inputs: Mapping[str, str | Sequence[str] | None] | None = None,
) -> Iterator[str]:
    """Yields a temporary folder whose files replace `path` as one set on success.

    The new folder is renamed into place only after the body returns, so a
    reader sees either the old set of files or the new one, never a mix (an
    old timeline beside a new table); if the body raises, `path` is untouched
    and the temporary folder is removed.

    Args:
      path: the final folder.
      overwrite: replace an existing folder; otherwise one that exists and
        is not empty is refused.
      flag: the flag that named `path`, for the message.
      owned: name patterns of the files a folder to replace may hold (see
        `check_output_dir`).
      inputs: the command's inputs, none of which may lie inside `path`.

    Raises:
      InputError: `path` exists, is not empty, and `overwrite` is off; it
        holds an input; or the disk is full.
    """
    check_output_dir(path, flag, overwrite=overwrite, owned=owned, inputs=inputs)
    final = os.path.abspath(path)
    parent = os.path.dirname(final)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="." + os.path.basename(final) + ".new.", dir=parent)
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes 0700; the umask decides, as for mkdir
    except OSError as e:
        raise full_disk_error(path, e) or e from None
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if os.path.lexists(final):
        old = tempfile.mkdtemp(prefix="." + os.path.basename(final) + ".old.", dir=parent)
        os.replace(final, os.path.join(old, "set"))
    os.replace(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
