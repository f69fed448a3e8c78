"""Names from input made into file names: data, never paths (no TensorFlow).

A job, graph or method name read from a user's file becomes part of an
output file's name only through `slug`: letters, digits and `_.-` kept,
anything else (a `/`, a `..`, a leading dot or dash, a character a file
system may refuse) replaced, and the name cut to `LIMIT` characters. A
name that had to change, or was cut, gets a short hash of the original
appended, so two names that differ only in what was replaced still give two
files. `inside` then checks that a path built from a slug stays within its
run's folder (links followed), and `refuse_foreign` that the run does not
replace a file it did not write.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable

from placer.core.errors import InputError

LIMIT = 64  # characters of a slug at most (file systems allow 255 bytes; an extension still fits)
_HASH = 8  # hex digits of the hash appended to a changed or cut name
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def slug(name: str, limit: int = LIMIT) -> str:
    """A file name part for `name`: itself when already safe and short, else a safe stem plus a hash.

    Args:
      name: any string (a job name from a trace, a method name).
      limit: most characters of the result (at least 16).

    Returns:
      A non-empty name of letters, digits and `_.-` that does not start with
      `.` or `-`, at most `limit` characters; `name` itself when it already is one.

    >>> slug("resnet-1"), slug("../../../x"), len(slug("a" * 300))
    ('resnet-1', 'x-0274b718', 64)
    """
    safe = _UNSAFE.sub("_", name).lstrip(".-_")
    if safe == name and 0 < len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    stem = safe[: max(limit, 16) - _HASH - 1].rstrip(".")
    return f"{stem}-{digest}" if stem else f"n-{digest}"


def slugs(names: Iterable[str], what: str = "name") -> dict[str, str]:
    """name -> slug for every name, refusing two names that would share one file.

    Raises:
      InputError: two different names give the same slug (e.g. a name chosen to equal another's slug).
    """
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        s = slug(name)
        if seen.get(s, name) != name:
            raise InputError(f"{what}s {seen[s]!r} and {name!r} would share the file name {s!r}; rename one")
        seen[s] = name
        out[name] = s
    return out


def inside(folder: str, *parts: str) -> str:
    """os.path.join(folder, *parts), refused unless it resolves to somewhere under `folder`.

    Raises:
      InputError: the path leaves `folder` (a `..`, an absolute part, or a link pointing out).
    """
    path = os.path.join(folder, *parts)
    top = os.path.realpath(folder)
    if not os.path.realpath(path).startswith(top.rstrip(os.sep) + os.sep):
        raise InputError(f"{path}: lies outside {folder}; outputs stay within their folder")
    return path


def refuse_foreign(paths: Iterable[str], flag: str = "overwrite") -> None:
    """Raises InputError if any of `paths` exists: the run would replace a file it did not write.

    Call it before any work, for the files a fresh (not resumed) run is about to write.
    """
    for path in paths:
        if os.path.lexists(path):
            raise InputError(f"{path}: exists and this run did not write it (give --{flag} to replace it)")
