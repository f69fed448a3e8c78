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

import functools
import json
import math
import os
import re
import stat
import sys
import zlib
from typing import IO

import numpy as np

from placer.core.errors import InputError

# Nesting levels of arrays and objects: the formats need 5. Counted before parsing, without recursion; the
# parser then recurses once per level, and this many levels stay well inside Python's recursion limit (1000).
MAX_JSON_DEPTH = 500
DEFAULT_MAX_INPUT_MIB = 1024  # one input file's JSON text, decompressed (MiB); a 200k-op graph is well under 100.
_READ_CHUNK = 1 << 20  # bytes of the file read at a time
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')  # bytes that neither delimit nor nest
_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # a backslash and the character it escapes
_LEVEL_STEP = np.zeros(256, np.int8)
_LEVEL_STEP[list(b"[{")] = 1
_LEVEL_STEP[list(b"]}")] = -1
_DEPTH_CHUNK = 1 << 22  # quotes and brackets counted at a time (32 MiB per array of running counts)

# Counts an input may hold, each a flag of every binary (placer/cli.py, --max_<kind>): a graph's ops, a
# cluster's devices (the simulator keeps device x device tables: 10,000 devices took 24 s and 3.7 GB before),
# a trace CSV's rows and a jobs file's or trace's jobs.
DEFAULT_CAPS = {"ops": 1_000_000, "devices": 1024, "rows": 5_000_000, "jobs": 10_000}
_cap = {"bytes": DEFAULT_MAX_INPUT_MIB << 20, **DEFAULT_CAPS}  # the binaries' --max_* flags set them

MAX_BYTES = 2**44  # 16 TiB: one op's or edge's bytes; 10^5 ops of it still sum inside int64.
MAX_MEMORY = 2**60  # bytes of one device.
MAX_SECONDS = 1e9  # one op's cost or one transfer's latency (about 30 years).
MAX_RATE = 1e18  # speeds, flop/s and bytes/s.
MAX_ITEMS = 10**8  # list lengths and group ids.


def set_max_input_bytes(n: int) -> None:
    """Sets the largest JSON text (bytes, after gzip) `read_json` accepts; the default is 1 GiB."""
    if n < 1:
        raise InputError(f"--max_input_mib: must be positive, got {n / 2**20:g}")
    _cap["bytes"] = int(n)


def set_cap(kind: str, n: int) -> None:
    """Sets the most `kind` ("ops", "devices", "rows", "jobs") an input may hold (--max_<kind>)."""
    if kind not in DEFAULT_CAPS:
        raise ValueError(f"unknown cap {kind!r} (valid: {', '.join(DEFAULT_CAPS)})")
    if n < 1:
        raise InputError(f"--max_{kind}: must be positive, got {n}")
    _cap[kind] = int(n)


def reset_caps() -> None:
    """Puts every cap back to its default (a binary run in process leaves none of its --max_* behind)."""
    _cap.update(bytes=DEFAULT_MAX_INPUT_MIB << 20, **DEFAULT_CAPS)


def cap(kind: str) -> int:
    """The most `kind` an input may hold (DEFAULT_CAPS unless a --max_<kind> flag said otherwise)."""
    return _cap[kind]


def within_cap(n: int, kind: str, where: str) -> int:
    """Returns `n` if it is at most cap(kind); else the one-line error naming `where` and the flag.

    Call it before anything sized by `n` is allocated or parsed.
    """
    if n > _cap[kind]:
        raise InputError(f"{where}: {n} {kind}, over the cap of {_cap[kind]}; if it is genuine, raise --max_{kind}")
    return n


def read_text(path: str, what: str) -> str:
    """Reads a UTF-8 text file (gzip or not) of at most `max_input_bytes()` bytes; a device node is refused.

    Reading stops at the cap, so /dev/zero or an endless pipe costs at most the cap's memory; a
    character or block device is refused before any read.

    Raises:
      InputError: one line naming `path`: missing, unreadable, a device, over the cap, or not UTF-8.
    """
    try:
        with open(path, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                raise InputError(f"{path}: a device, not a {what} file")
            raw = _read_capped(f, path, what, _cap["bytes"], kind="text")
    except (OSError, EOFError, zlib.error) as e:
        if isinstance(e, OSError) and e.errno is not None:
            raise _open_error(path, what, e) from None
        raise InputError(f"{path}: corrupt gzip {what} file ({' '.join(str(e).split())})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a UTF-8 {what} file (byte {e.start} is not UTF-8)") from None


def max_input_bytes() -> int:
    """The largest JSON text (bytes, after gzip) `read_json` accepts."""
    return _cap["bytes"]


def _read_capped(f: IO[bytes], path: str, what: str, cap: int, kind: str = "JSON text") -> bytearray:
    """Reads `f` whole, gunzipping it (by its magic bytes) in chunks; stops as soon as the text passes `cap` bytes.

    Memory stays within about `cap` however far the file would expand.
    """
    out = bytearray(f.read(2))
    if out != b"\x1f\x8b":
        if os.fstat(f.fileno()).st_size > cap:  # a plain file over the cap is refused before it is read
            raise _too_big(path, what, cap)
        while len(out) <= cap:  # in chunks: one read of cap + 1 bytes would reserve the whole cap
            chunk = f.read(min(_READ_CHUNK, cap + 1 - len(out)))
            if not chunk:
                break
            out += chunk
    else:
        inflate, pending, out = zlib.decompressobj(31), bytes(out), bytearray()
        while len(out) <= cap:
            if not pending:
                pending = f.read(_READ_CHUNK)
                if not pending:
                    if inflate.eof:
                        break
                    raise zlib.error("the file ends before the end of the compressed data")
                if inflate.eof:  # another gzip member follows, as gzip.decompress allows
                    inflate = zlib.decompressobj(31)
            # At most one chunk of text at a time: 1 MiB of gzip can hold 1 GiB of spaces.
            out += inflate.decompress(pending, min(_READ_CHUNK, cap + 1 - len(out)))
            pending = inflate.unconsumed_tail
            if inflate.eof and inflate.unused_data:
                pending, inflate = inflate.unused_data, zlib.decompressobj(31)
    if len(out) > cap:
        raise _too_big(path, what, cap, kind)
    return out


def _too_big(path: str, what: str, cap: int, kind: str = "JSON text") -> InputError:
    return InputError(
        f"{path}: the {what} file holds over {cap / 2**20:g} MiB of {kind} (after gzip); "
        "if it is genuine, raise --max_input_mib"
    )


def nesting_depth(text: bytes | bytearray) -> int:
    """How deep JSON text nests arrays and objects, counted in linear time without recursion.

    A scalar is 0 levels deep, `[]` 1 and `{"a": [1]}` 2; brackets inside
    strings do not count. Memory: a copy of the text where it holds
    backslashes, one byte per quote and bracket, and 32 MiB arrays of
    running counts.

    Args:
      text: UTF-8 JSON text (no ASCII byte occurs inside a multi-byte character).

    Returns:
      The deepest level reached (for text that is not JSON, some count: the
      parser's own error then says what is wrong).
    """
    if b"\\" in text:
        text = _ESCAPE.sub(b"", text)  # with the escapes gone, every quote opens or closes a string
    marks = np.frombuffer(text.translate(None, _NOT_STRUCTURE), np.uint8)  # quotes and brackets, in order
    quotes = level = deepest = 0
    for start in range(0, len(marks), _DEPTH_CHUNK):
        chunk = marks[start : start + _DEPTH_CHUNK]
        quotes_so_far = np.cumsum(chunk == ord('"'), dtype=np.int64) + quotes
        steps = np.where(quotes_so_far % 2 == 1, 0, _LEVEL_STEP[chunk])  # inside a string after an odd count
        levels = np.cumsum(steps, dtype=np.int64) + level
        quotes, level = int(quotes_so_far[-1]) % 2, int(levels[-1])
        deepest = max(deepest, int(levels.max()))
    return deepest


def _unique_keys(path: str, pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's dict; a key given twice is refused (json.loads would keep the last silently)."""
    d = dict(pairs)
    if len(d) < len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise InputError(f"{path}: key {k!r} appears twice in one JSON object")
            seen.add(k)
    return d


def read_json(path: str, what: str) -> object:
    """Reads a UTF-8 JSON file, gzip-compressed or not (by its magic bytes), within limits.

    The JSON text may hold at most `max_input_bytes()` bytes after gzip
    (1 GiB unless --max_input_mib says otherwise; the file is read in chunks
    and reading stops at the cap), nest arrays and objects at most
    MAX_JSON_DEPTH (500) levels deep (counted before parsing, without
    recursion; 500 levels load, 501 do not), and give each key of an object once.

    Args:
      path: the file.
      what: what the file should hold ("graph", "cluster spec"), for messages.

    Raises:
      InputError: one line naming `path`: missing, a folder, unreadable,
        truncated gzip, over the size cap, not UTF-8, bad JSON, nested too
        deep, or a key given twice in one object (naming the key).
    """
    try:
        with open(path, "rb") as f:
            raw = _read_capped(f, path, what, _cap["bytes"])
    except (OSError, EOFError, zlib.error) as e:
        if isinstance(e, OSError) and e.errno is not None:
            raise _open_error(path, what, e) from None
        raise InputError(f"{path}: corrupt gzip {what} file ({' '.join(str(e).split())})") from None
    depth = nesting_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise InputError(
            f"{path}: JSON nested {depth} levels deep, over the limit of {MAX_JSON_DEPTH} (these formats need 5)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a UTF-8 {what} file (byte {e.start} is not UTF-8)") from None
    del raw
    try:  # NaN and Infinity parse; the field checks refuse them, naming the field.
        return json.loads(text, object_pairs_hook=functools.partial(_unique_keys, path))
    except InputError:
        raise
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: bad JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError:  # the only other ValueError of json.loads: an integer longer than Python converts
        raise InputError(f"{path}: bad JSON: a number of more than {sys.get_int_max_str_digits()} digits") from None


def _open_error(path: str, what: str, e: OSError) -> InputError:
    """The one-line error for a file that cannot be opened or read."""
    if isinstance(e, IsADirectoryError):
        return InputError(f"{path}: is a folder, not a {what} file")
    if isinstance(e, FileNotFoundError):
        return InputError(f"{path}: no such {what} file")
    return InputError(f"{path}: cannot read {what} file ({e.strerror})")


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
