"""Field checks shared by the readers of the three file formats (no TensorFlow).

Each format (op graph, cluster, placement) validates every field in one
function built from these checks, before anything sized by a field is
allocated. A failed check is an `InputError` whose one-line message names the
file and the field, e.g. `g.json: ops[3].output_bytes: ...`.

The checks are plain Python rather than a JSON-schema validator: a graph of
100k ops and 175k edges is checked in about a second this way, against about
half a minute with `jsonschema`.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib

from placer.core.errors import InputError

MAX_BYTES = 2**44  # 16 TiB: one op's or edge's bytes; 10^5 ops of it still sum inside int64.
MAX_MEMORY = 2**60  # bytes of one device.
MAX_SECONDS = 1e9  # one op's cost or one transfer's latency (about 30 years).
MAX_RATE = 1e18  # speeds, flop/s and bytes/s.
MAX_ITEMS = 10**8  # list lengths and group ids.


def read_json(path: str, what: str) -> object:
    """Reads a UTF-8 JSON file, gzip-compressed or not (by its magic bytes).

    Args:
      path: the file.
      what: what the file should hold ("graph", "cluster spec"), for messages.

    Raises:
      InputError: one line naming `path`: missing, a folder, unreadable,
        truncated gzip, not UTF-8, or bad JSON.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a {what} file") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what} file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read {what} file ({e.strerror})") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"{path}: corrupt gzip {what} file ({' '.join(str(e).split())})") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a UTF-8 {what} file (byte {e.start} is not UTF-8)") from None
    try:  # NaN and Infinity parse; the field checks refuse them, naming the field.
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: bad JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def obj(v: object, where: str) -> dict:
    """Returns `v` if it is a JSON object."""
    if not isinstance(v, dict):
        raise InputError(f"{where}: must be a JSON object, got {_show(v)}")
    return v


def arr(v: object, where: str, *, min_len: int = 0) -> list:
    """Returns `v` if it is a JSON array of at least `min_len` items."""
    if not isinstance(v, list):
        raise InputError(f"{where}: must be a JSON array, got {_show(v)}")
    if len(v) < min_len:
        raise InputError(
            f"{where}: needs at least {min_len} {'entry' if min_len == 1 else 'entries'}, got none"
            if not v
            else f"{where}: needs at least {min_len} entries, got {len(v)}"
        )
    return v


def text(v: object, where: str, *, empty: bool = False) -> str:
    """Returns `v` if it is a string (non-empty unless `empty`) that UTF-8 can encode."""
    if not isinstance(v, str):
        raise InputError(f"{where}: must be a string, got {_show(v)}")
    if not v and not empty:
        raise InputError(f"{where}: must not be empty")
    if not v.isascii():
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"{where}: {v!r} holds a lone surrogate, not a Unicode character") from None
    return v


def integer(v: object, where: str, lo: int = 0, hi: int = MAX_BYTES) -> int:
    """Returns `v` as an int if it is a whole number in [lo, hi] (1e3 counts)."""
    n = int(v) if isinstance(v, float) and math.isfinite(v) and v.is_integer() else v
    if not isinstance(n, int) or isinstance(n, bool) or not lo <= n <= hi:
        raise InputError(f"{where}: must be a whole number in [{lo}, {_big(hi)}], got {_show(v)}")
    return n


def number(v: object, where: str, lo: float = 0.0, hi: float = MAX_SECONDS, *, lo_open: bool = False) -> float:
    """Returns `v` as a float if it is a finite number in [lo, hi] ((lo, hi] with `lo_open`)."""
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ok = ok and (lo < v if lo_open else lo <= v) and v <= hi
    if not ok:
        low = "(" if lo_open else "["
        raise InputError(f"{where}: must be a finite number in {low}{lo:g}, {hi:g}], got {_show(v)}")
    return float(v)


def boolean(v: object, where: str) -> bool:
    """Returns `v` if it is true or false."""
    if not isinstance(v, bool):
        raise InputError(f"{where}: must be true or false, got {_show(v)}")
    return v


def get(o: dict, key: str, where: str, default=None, *, required: bool = False):
    """Returns o[key], or `default` when the key is absent (null is a value, checked by the caller).

    Args:
      o: the JSON object.
      key: the field.
      where: the field's full name for messages, e.g. "g.json: ops[3].type".
      default: the value of an absent optional field.
      required: refuse an absent field.

    Raises:
      InputError: a `required` key is absent.
    """
    if key in o:
        return o[key]
    if required:
        raise InputError(f"{where}: missing")
    return default


def _big(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 10**6 and n & (n - 1) == 0 else str(n)


def _show(v: object) -> str:
    s = "null" if v is None else repr(v)
    return s if len(s) <= 40 else s[:37] + "..."
