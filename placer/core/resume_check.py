"""What a checkpoint was made from, so that --resume continues only the same search (no TensorFlow).

A run records, in its workdir's `inputs.json` before its first checkpoint,
a hash of each input that decides its results: the graph (ops and edges),
its costs, the cluster, the trace or jobs file, the method and the config.
`--resume` compares them with this run's and refuses, in one line naming
every input that changed, to continue a search whose inputs are not the
ones its checkpoint was made from; `--resume=restart` starts over instead,
and says so. A workdir from before this record is resumed unchecked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping

import numpy as np

from placer.core import atomic
from placer.core.errors import InputError

RECORD = "inputs.json"
RESTART = "restart"  # --resume=restart


def digest(value: object) -> str:
    """A 16-hex-digit SHA-256 of bytes, an array (its dtype, shape and bytes) or JSON-serialisable data."""
    h = hashlib.sha256()
    if isinstance(value, bytes | bytearray):
        h.update(value)
    elif isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(json.dumps(value, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def file_digest(path: str) -> str:
    """digest of a file's bytes, read in chunks (the file was already read within the caps)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def spec_digest(spec: str | None) -> str | None:
    """digest of the file a path, `path:variant` spec or preset name names (its bytes and the variant);
    the name itself when it names no file (a cluster preset), None for None."""
    if spec is None:
        return None
    path, _, variant = spec.partition(":")
    if not os.path.isfile(path):
        from placer.core import configs_util  # noqa: PLC0415 (the project's own configs, from any folder)

        path = configs_util.resolve(path)
    return digest([file_digest(path), variant]) if os.path.isfile(path) else spec


def clear(workdir: str, entries) -> None:
    """Removes `entries` (names of files or folders an earlier run wrote) from `workdir`, to start over."""
    for name in entries:
        path = os.path.join(workdir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def graph_fields(graph) -> dict[str, str]:
    """{"graph": its structure's fingerprint, "costs": a hash of its compute costs and tensor sizes}."""
    costs = [digest(np.asarray(getattr(graph, f))) for f in ("compute_cost", "output_bytes", "persistent_bytes")]
    return {"graph": graph.fingerprint(), "costs": digest(costs)}


def record(workdir: str, fields: Mapping[str, str]) -> None:
    """Writes `fields` (input name -> hash) to workdir/inputs.json, atomically."""
    os.makedirs(workdir, exist_ok=True)
    atomic.write_text(os.path.join(workdir, RECORD), json.dumps(dict(fields), indent=1, sort_keys=True))


def changed(workdir: str, fields: Mapping[str, str]) -> list[str] | None:
    """The inputs whose hash (or name) differs from workdir/inputs.json, in `fields` order; None without a record.

    Raises:
      InputError: the record exists but cannot be read.
    """
    path = os.path.join(workdir, RECORD)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            saved = json.load(f)
        if not isinstance(saved, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read what the checkpoint was made from ({e})") from None
    return [_show(k, saved.get(k), v) for k, v in fields.items() if saved.get(k) != v]


def _show(key: str, old: object, new: str) -> str:
    """A changed input for the message: its name, with both values when they are names, not hashes."""
    if isinstance(old, str) and not re.fullmatch(r"[0-9a-f]{16}", new) and len(old) + len(new) < 80:
        return f"{key} ({old}, this run {new})"
    return key


def check(workdir: str, fields: Mapping[str, str], resume: bool | str, log: Callable = print) -> bool:
    """Decides whether a run resumes: True to continue the checkpoint in `workdir`, False to start over.

    Args:
      workdir: the run's folder, holding a checkpoint.
      fields: this run's inputs, name -> hash (e.g. from `graph_fields`, `digest`).
      resume: True (--resume) or RESTART (--resume=restart).
      log: where the line saying a restart goes.

    Returns:
      True when every recorded input matches (or nothing was recorded); False
      when some changed and `resume` is RESTART (the caller starts over).

    Raises:
      InputError: some input changed and `resume` is not RESTART; the one line names each.
    """
    diff = changed(workdir, fields)
    if not diff:
        return True
    what = ", ".join(diff)
    if resume == RESTART:
        log(f"--resume=restart: the {what} changed since the checkpoint in {workdir}; starting over")
        return False
    raise InputError(
        f"--resume: {workdir} was checkpointed from other inputs, changed since: {what}; continuing it would mix "
        "two searches (give --resume=restart to start over, or pick another --workdir)"
    )
