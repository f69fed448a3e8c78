"""Every binary: --help, --helpfull and -h exit 0; configs named `configs/...` resolve from any folder."""

import os
import sys

import pytest
from absl import flags

from placer.core import configs_util
from tests.inprocess import call, own_flags

BINARIES = [
    "placer.extract_main",
    "placer.measure_main",
    "placer.train_main",
    "placer.compare_main",
    "placer.apply_main",
    "placer.search_main",
    "placer.pretrain_main",
    "placer.place_main",
    "placer.demo",
]


@pytest.mark.parametrize("binary", BINARIES)
@pytest.mark.parametrize("asked", ["--help", "-h", "--helpfull", "--helpshort"])
def test_help_exits_0_and_lists_the_flags(binary, asked, capsys):
    own = own_flags(binary)
    assert call(binary, asked) == 0
    out = capsys.readouterr().out
    assert own and all(f"{name}:" in out for name in own), out


def test_an_unknown_short_flag_is_still_an_error(capsys):
    assert call("placer.train_main", "-x") == 2
    assert "Unknown command line flag 'x'" in capsys.readouterr().err


def test_configs_resolve_to_the_installed_ones_outside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert configs_util.resolve("configs/nmt.py") == os.path.join(configs_util.ROOT, "configs/nmt.py")
    assert (
        configs_util.resolve_spec("configs/pretrain.py:small")
        == os.path.join(configs_util.ROOT, "configs/pretrain.py") + ":small"
    )
    # A file of that name in the current folder wins.
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "nmt.py").write_text("def get_config():\n    return None\n")
    assert configs_util.resolve("configs/nmt.py") == "configs/nmt.py"
    # Neither here nor installed: left as given, for the reader's own error.
    assert configs_util.resolve("configs/nope.py") == "configs/nope.py"


def test_pretrain_reads_its_config_from_another_folder(tmp_path, monkeypatch, capsys):
    """The README's `placer-pretrain --config=configs/pretrain.py:small` run outside the checkout.

    A --workdir that is a file stops it right after the config loaded, before TensorFlow.
    """
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w").write_text("")
    code = call("placer.pretrain_main", "--config=configs/pretrain.py:small", "--workdir=w")
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --workdir") and "no such config file" not in err, err
    assert call("placer.pretrain_main", "--config=configs/nope.py", "--workdir=w") == 2
    assert "configs/nope.py: no such config file" in capsys.readouterr().err


def test_init_from_help_lists_what_each_method_accepts():
    """Every registered method that starts from something learned is named in --init_from's help beside what it
    reads (a placer-pretrain folder or an earlier search's workdir)."""
    import importlib

    from placer.rl import methods
    from tests.binaries import isolated_flags

    with isolated_flags():
        sys.modules.pop("placer.train_main", None)
        train_main = importlib.import_module("placer.train_main")
        text = " ".join(flags.FLAGS["init_from"].help.split())
        sys.modules.pop("placer.train_main", None)
    for name in methods.names():
        kind = methods.init_from(name)
        if kind is not None:
            assert name in train_main.INIT_FROM_METHODS[kind], name
            listed = f"{', '.join(train_main.INIT_FROM_METHODS[kind])}: {train_main.INIT_FROM_ACCEPTS[kind]}"
            assert listed in text
    assert "a placer-pretrain policy folder" in text and "Other methods take none" in text
