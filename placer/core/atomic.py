"""Atomic file writes: a temporary file in the same folder, then a rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO


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
