"""Calls a binary's `main` in this process as its console script does, flags parsed by absl.

The binaries define flags of the same names (--config, --workdir) in absl's
one global registry, so only one binary module is loaded at a time: loading
another first removes the flags of the one loaded before.
"""

import importlib
import sys
from unittest import mock

from absl import flags
from ml_collections.config_flags import config_flags

BINARY_PREFIX = "placer."


def load(name: str):
    """Imports the binary module `name` (e.g. "placer.train_main"), unloading any other binary first."""
    registered = flags.FLAGS.flags_by_module_dict()
    for other in [m for m in list(sys.modules) if _is_binary(m) and m != name]:
        for flag in list(registered.get(other, [])):  # deleting a flag edits this list
            for key in {flag.name, flag.short_name} - {None}:
                if key in flags.FLAGS:
                    delattr(flags.FLAGS, key)
        del sys.modules[other]
    return importlib.import_module(name)


def call(name: str, *args: str) -> int:
    """Runs binary `name`'s `main` through placer.cli.run_main with `args` as its command line.

    Args:
      name: a binary module, e.g. "placer.train_main".
      args: its flags.

    Returns:
      The exit status (0 when main returned).
    """
    from placer import cli

    module = load(name)
    flags.FLAGS.unparse_flags()
    try:
        with mock.patch.object(sys, "argv", [name, *args]):
            try:
                cli.run_main(module.main)
            except SystemExit as e:
                return 0 if e.code is None else int(e.code)
        return 0
    finally:
        _forget_overrides()
        flags.FLAGS.unparse_flags()


def _is_binary(module: str) -> bool:
    return module.startswith(BINARY_PREFIX) and (module.endswith("_main") or module == "placer.demo")


def _forget_overrides() -> None:
    """Deletes the `--config.x.y` flags a config-file flag defined while parsing (the next parse defines them again)."""
    names = set(flags.FLAGS)
    configs = [n for n in names if isinstance(flags.FLAGS[n].parser, config_flags.ConfigFileFlagParser)]
    for name in names:
        if any(name.startswith(f"{c}.") for c in configs):
            delattr(flags.FLAGS, name)
