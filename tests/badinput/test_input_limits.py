"""Inputs are read within limits (size after gzip, nesting, duplicate keys), and names print escaped."""

import gzip
import io as std_io
import json
import tracemalloc

import pytest

from bench.testing.badinput import cases, inputs, runner
from placer.core import checks, io, printable
from placer.core.errors import InputError
from placer.sharing import jobs
from tests.badinput.inprocess import run_binary

MIB = 1 << 20


@pytest.fixture
def input_cap():
    """Sets the input cap (bytes) for one test; the default comes back after it."""
    yield checks.set_max_input_bytes
    checks.set_max_input_bytes(checks.DEFAULT_MAX_INPUT_MIB * MIB)


@pytest.fixture
def cap_1_mib(input_cap):
    input_cap(MIB)


def test_a_jobs_file_over_a_cap_under_one_mib_names_the_cap(tmp_path, input_cap):
    path = tmp_path / "jobs.py"
    path.write_text("x = 1\n" + "#" * 2000 + "\n")
    input_cap(MIB // 1024)  # --max_input_mib=0.0009765625
    with pytest.raises(InputError, match=r"jobs\.py: 2007 bytes, over the cap of 0\.000976562 MiB; .*--max_input_mib"):
        jobs.load_workload(str(path), load_models=False)


@pytest.mark.parametrize("filler", [b" ", b"7"])  # spaces were refused late, digits crashed the reader
def test_gzip_bomb_stops_at_the_cap_with_memory_bounded_by_it(tmp_path, cap_1_mib, filler):
    path = tmp_path / "g.json.gz"
    path.write_bytes(gzip.compress(filler * (64 * MIB), compresslevel=1))  # about 300 KiB, 64x the cap inside
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"g\.json\.gz: the graph file holds over 1 MiB .*--max_input_mib"):
            io.load(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MIB, peak  # the cap (1 MiB) plus one chunk of compressed input, not 64 MiB


def test_plain_file_over_the_cap_is_refused_before_it_is_read(tmp_path, cap_1_mib):
    path = tmp_path / "c.json"
    path.write_bytes(b" " * (2 * MIB))
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="over 1 MiB"):
            checks.read_json(str(path), "cluster spec")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MIB // 4, peak


def test_files_within_the_cap_read_as_before_including_gzip_of_two_members(tmp_path, cap_1_mib):
    text = json.dumps(cases.GRAPH).encode()
    half = len(text) // 2
    (tmp_path / "two.json.gz").write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    assert io.load(str(tmp_path / "two.json.gz")) == io.from_json(cases.GRAPH)
    (tmp_path / "exact.json").write_bytes(text + b" " * (MIB - len(text)))  # exactly 1 MiB: at the cap, not over
    assert io.load(str(tmp_path / "exact.json")).num_ops == 3
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(text)[:-12])
    with pytest.raises(InputError, match="corrupt gzip"):
        io.load(str(tmp_path / "cut.json.gz"))


def test_the_cap_flag_is_read_by_every_binary(tmp_path, capsys):
    runner.write_inputs(cases.Case("good", "none", "", None, ()), str(tmp_path))
    (tmp_path / "g.json").write_bytes(json.dumps(cases.GRAPH).encode() + b" " * (2 * MIB))  # 2 MiB of JSON text
    argv = [f"--graph={tmp_path}/g.json", f"--cluster={tmp_path}/c.json", f"--placement={tmp_path}/p.json"]
    assert run_binary("measure_main", *argv, "--max_input_mib=1") == 2
    assert "over 1 MiB" in capsys.readouterr().err
    assert run_binary("measure_main", *argv, "--max_input_mib=3") == 0
    assert "step time: 6.0" in capsys.readouterr().out  # 1 + 2 + 3 s, the chain on its GPU


def test_a_number_of_a_million_digits_is_one_line(tmp_path):
    (tmp_path / "c.json").write_bytes(b'{"name": ' + b"7" * 10**6 + b"}")
    with pytest.raises(InputError, match=r"c\.json: bad JSON: a number of more than 4300 digits"):
        checks.read_json(str(tmp_path / "c.json"), "cluster spec")


@pytest.mark.parametrize("levels", [1000, 100_000])
def test_deep_nesting_is_one_line(tmp_path, levels):
    (tmp_path / "p.json").write_bytes(inputs.deep(levels))
    with pytest.raises(InputError, match=r"p\.json: JSON nested \d+ levels deep, over the limit of 500 "):
        checks.read_json(str(tmp_path / "p.json"), "placement")


def test_nesting_the_formats_use_is_read(tmp_path):
    (tmp_path / "n.json").write_bytes(inputs.deep(100))
    assert checks.read_json(str(tmp_path / "n.json"), "graph") == json.loads(inputs.deep(100))


def test_duplicate_keys_are_refused_naming_the_key_at_any_depth(tmp_path):
    good = json.dumps(cases.GRAPH)
    second_ops = good[:-1] + ', "ops": [{"name": "x", "type": "T"}]}'  # a last "ops" would leave one op
    inner = good.replace('"name": "b", "type": "T"', '"name": "b", "type": "T", "type": "U"')
    for text, key in ((second_ops, "'ops'"), (inner, "'type'")):
        (tmp_path / "g.json").write_text(text)
        with pytest.raises(InputError, match=f"g.json: key {key} appears twice"):
            io.load(str(tmp_path / "g.json"))


def test_control_characters_are_escaped_by_the_one_helper():
    title = "\x1b]0;owned\x07"  # ESC ] 0 ; ... BEL: sets the terminal's title
    assert printable.escape_controls(f"graph: {title}\n") == "graph: \\x1b]0;owned\\x07\n"
    assert printable.escape_controls("\rstep 3/10\t\x9b2J") == "\rstep 3/10\t\\x9b2J"  # C1 CSI escaped
    assert printable.escape_controls("a\rb\r\n") == "a\\x0db\r\n"  # a bare CR mid-line could hide text
    out = std_io.StringIO()
    print("név\x00", file=printable.EscapingStream(out))
    assert out.getvalue() == "név\\x00\n"


def test_names_print_escaped_in_a_binary(tmp_path, capsys):
    g = cases.graph_with("name", "chain\x1b]0;owned\x07")
    c = inputs.cluster_with("name", "two\x1b[2J")
    c["devices"][1]["name"] = "/device:GPU:0\x1b[31m"
    (tmp_path / "g.json").write_bytes(cases.as_json(g))
    (tmp_path / "c.json").write_bytes(cases.as_json(c))
    assert (
        run_binary(
            "measure_main", f"--graph={tmp_path}/g.json", f"--cluster={tmp_path}/c.json", "--baseline=single_gpu"
        )
        == 0
    )
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
    assert "chain\\x1b]0;owned\\x07" in out.out and "two\\x1b[2J" in out.out and "GPU:0\\x1b[31m" in out.out
