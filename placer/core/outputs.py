"""Output paths checked against a command's inputs, so that no output replaces or deletes what it reads.

A path is compared by what it resolves to (links and `..` followed) and, for
files that exist, by device and inode, so a hard link to an input counts as
the input. Inputs are given by flag name, each a path, a list of paths or
None; a value that names no file (a preset such as "k80x4") matches nothing
that exists.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Mapping, Sequence

from placer.core.errors import InputError

Inputs = Mapping[str, str | Sequence[str] | None]


def _paths(inputs: Inputs) -> Iterator[tuple[str, str]]:
    """(flag, path) for every input path given."""
    for flag, value in inputs.items():
        if not value:
            continue
        for path in [value] if isinstance(value, str) else value:
            if path:
                yield flag, path


def same_file(a: str, b: str) -> bool:
    """True when paths `a` and `b` name one file: the same resolved path, or the same device and inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samestat(os.stat(a), os.stat(b))
    except OSError:
        return False


def _inside(path: str, folder: str) -> bool:
    """True when `path` resolves to somewhere under `folder` (or to `folder` itself)."""
    p, f = os.path.realpath(path), os.path.realpath(folder)
    return p == f or p.startswith(f.rstrip(os.sep) + os.sep)


def refuse_input_file(path: str, flag: str, inputs: Inputs) -> None:
    """Raises InputError if the output file `path` is one of `inputs`, or would replace a file of an input folder.

    A new file in an input folder (a placement written beside a policy) is fine.

    Args:
      path: the output file.
      flag: the flag that named it, for the message.
      inputs: the command's inputs by flag name.
    """
    for name, src in _paths(inputs):
        if same_file(path, src):
            raise InputError(f"--{flag}: {path} is the --{name} input; writing it would destroy the input")
        if os.path.isdir(src) and os.path.lexists(path) and _inside(path, src):
            raise InputError(f"--{flag}: {path} is a file of the --{name} folder {src}; write it elsewhere")


def refuse_input_inside(folder: str, flag: str, inputs: Inputs, written: Sequence[str] | None = None) -> None:
    """Raises InputError if an input lies inside the output folder `folder` (which is replaced or written).

    A folder that is replaced as a whole (`written` None) may hold no input;
    a workdir that a run writes into may hold inputs, but not as the folder
    itself nor under a name the run writes (`written`: fnmatch patterns of
    the entries directly in `folder`, e.g. "checkpoints", "*.csv").

    Hard links need no check here: replacing the folder, or renaming a new
    file into it, removes a name, and an input linked from elsewhere keeps its own.

    Args:
      folder: the output folder.
      flag: the flag that named it, for the message.
      inputs: the command's inputs by flag name.
      written: for a workdir, the names the run writes in it; None for a folder replaced whole.
    """
    for name, src in _paths(inputs):
        if not _inside(src, folder):
            continue
        if written is not None and not same_file(src, folder):
            top = os.path.relpath(os.path.realpath(src), os.path.realpath(folder)).split(os.sep)[0]
            if not any(fnmatch.fnmatchcase(top, p) for p in written):
                continue
        raise InputError(
            f"--{flag}: the --{name} input {src} lies inside {folder}, whose files this command writes; "
            "move it out or pick another folder"
        )
