"""The nesting limit of JSON inputs is exact: MAX_JSON_DEPTH levels load, one more is refused, without recursion."""

import json
import tracemalloc

import pytest

from bench.testing.badinput import cases, inputs, runner
from placer.core import checks
from placer.core.errors import InputError
from tests.badinput.inprocess import run_binary

LIMIT = checks.MAX_JSON_DEPTH


def test_nesting_depth_by_hand():
    assert checks.nesting_depth(b"7") == 0
    assert checks.nesting_depth(b"[]") == 1
    assert checks.nesting_depth(b'{"a": [1, {}]}') == 3  # object 1, array 2, inner object 3
    assert checks.nesting_depth(b'["[[[", "]]"]') == 1  # brackets in strings do not count
    # An escaped quote does not end its string: the "[" after it is text; "\\" is one backslash, so the
    # quote after it does end the string and the object after it counts: array 1, object 2, array 3.
    assert checks.nesting_depth(rb'["a\"[", "b\\", {"k": []}]') == 3
    assert checks.nesting_depth(b"[" * 100_000 + b"]" * 100_000) == 100_000


def _nested(levels: int) -> bytes:
    """An object holding arrays: {"a": [[...[1]...]]}, `levels` deep in all."""
    return b'{"a": ' + b"[" * (levels - 1) + b"1" + b"]" * (levels - 1) + b"}"


def test_exactly_the_limit_loads_and_one_more_is_refused_naming_file_and_depth(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(_nested(LIMIT))
    assert checks.read_json(str(path), "placement") == json.loads(_nested(LIMIT))
    path.write_bytes(_nested(LIMIT + 1))
    with pytest.raises(InputError, match=rf"^{path}: JSON nested {LIMIT + 1} levels deep, over the limit of {LIMIT} "):
        checks.read_json(str(path), "placement")


def test_brackets_in_strings_do_not_count_toward_the_limit(tmp_path):
    text = json.dumps({"name": "[" * (2 * LIMIT) + '"{'}).encode()  # 1 level, however many brackets it names
    (tmp_path / "c.json").write_bytes(text)
    assert checks.read_json(str(tmp_path / "c.json"), "cluster spec") == json.loads(text)


def test_100000_levels_are_refused_without_recursion_and_little_memory(tmp_path):
    (tmp_path / "g.json").write_bytes(inputs.deep(100_000))  # 200 kB of brackets
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"g\.json: JSON nested 100000 levels deep") as e:
            checks.read_json(str(tmp_path / "g.json"), "graph")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.__context__ is None  # refused before parsing: no RecursionError was raised and caught
    # The 200 kB text, its copy of quotes and brackets, and a few arrays of 100,000 running counts (8 bytes each).
    assert peak < 8 << 20, peak


def test_binary_refuses_one_level_past_the_limit_in_one_line(tmp_path, capsys):
    runner.write_inputs(cases.Case("good", "none", "", None, ()), str(tmp_path))
    (tmp_path / "p.json").write_bytes(_nested(LIMIT + 1))
    argv = [f"--graph={tmp_path}/g.json", f"--cluster={tmp_path}/c.json", f"--placement={tmp_path}/p.json"]
    assert run_binary("measure_main", *argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {tmp_path}/p.json: JSON nested {LIMIT + 1} levels deep, over the limit of {LIMIT} " + (
        "(these formats need 5)"
    )
