"""Atomic file writes (a temporary file in the same folder, then a rename) and output checks."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO

from placer.core.errors import InputError


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w") -> Iterator[IO]:
    """Opens a temporary file next to `path` that replaces `path` on success.

    If the body raises, the temporary file is removed and `path` is untouched,
    so a reader never sees a half-written file.

    Args:
      path: final file path.
      mode: "w" for text or "wb" for bytes.

    Yields:
      The open temporary file.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str, text: str) -> None:
    """Writes `text` to `path` atomically."""
    with atomic_open(path, "w") as f:
        f.write(text)


def write_bytes(path: str, data: bytes) -> None:
    """Writes `data` to `path` atomically."""
    with atomic_open(path, "wb") as f:
        f.write(data)


def check_output_file(path: str, flag: str, *, overwrite: bool = False) -> None:
    """Checks, before any work starts, that a file can be written at `path`.

    Args:
      path: the output file.
      flag: the flag that named it, e.g. "out", for the message.
      overwrite: allow replacing an existing file.

    Raises:
      InputError: one line naming the flag: `path` is a folder, exists (without
        `overwrite`), or its folder cannot be made or written.
    """
    if os.path.isdir(path):
        raise InputError(f"--{flag}: {path} is a folder, not a file")
    if os.path.lexists(path) and not overwrite:
        raise InputError(f"--{flag}: {path} exists (give --overwrite to replace it)")
    _check_writable(os.path.dirname(os.path.abspath(path)), flag)


def check_output_dir(
    path: str, flag: str, *, overwrite: bool = False, reuse: bool = False, owned: Sequence[str] = ()
) -> None:
    """Checks, before any work starts, that a folder of outputs can be written at `path`.

    Args:
      path: the output folder.
      flag: the flag that named it, e.g. "out", for the message.
      overwrite: allow replacing an existing non-empty folder.
      reuse: allow writing into an existing folder (a workdir to resume).
      owned: with `overwrite`, name patterns (fnmatch) of the files the
        binary writes there; a folder holding anything else is refused, so
        --overwrite never deletes a user's other files.

    Raises:
      InputError: one line naming the flag: `path` is a file, is a non-empty
        folder (without `overwrite` or `reuse`, or holding files not
        `owned`), or cannot be made or written.
    """
    if os.path.lexists(path) and not os.path.isdir(path):
        raise InputError(f"--{flag}: {path} is a file, not a folder")
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
def folder_set(path: str, *, overwrite: bool = False, flag: str = "out", owned: Sequence[str] = ()) -> Iterator[str]:
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

    Raises:
      InputError: `path` exists, is not empty, and `overwrite` is off.
    """
    check_output_dir(path, flag, overwrite=overwrite, owned=owned)
    final = os.path.abspath(path)
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(final) + ".new.", dir=parent)
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
