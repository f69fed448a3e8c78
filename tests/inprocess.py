"""Calls a binary's `main` in this process as its console script does, flags parsed by absl."""

import sys
from unittest import mock

from absl import flags
from ml_collections.config_flags import config_flags

from placer import cli


def call(module, *args: str) -> int:
    """Runs `module.main` through placer.cli.run_main with `args` as its command line.

    Args:
      module: a binary module, e.g. placer.train_main.
      args: its flags.

    Returns:
      The exit status (0 when main returned).
    """
    flags.FLAGS.unparse_flags()
    try:
        with mock.patch.object(sys, "argv", [module.__name__, *args]):
            try:
                cli.run_main(module.main)
            except SystemExit as e:
                return 0 if e.code is None else int(e.code)
        return 0
    finally:
        _forget_overrides()
        flags.FLAGS.unparse_flags()


def _forget_overrides() -> None:
    """Deletes the `--config.x.y` flags a config-file flag defined while parsing (the next parse defines them again)."""
    names = set(flags.FLAGS)
    configs = [n for n in names if isinstance(flags.FLAGS[n].parser, config_flags.ConfigFileFlagParser)]
    for name in names:
        if any(name.startswith(f"{c}.") for c in configs):
            delattr(flags.FLAGS, name)
