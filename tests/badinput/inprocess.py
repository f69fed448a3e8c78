"""Runs a binary in this process, as its console script would: `run()` with sys.argv set, absl flags parsed.

The binaries define flags of the same names (--graph, --out), so each run
first forgets the flags of the binary imported before and imports the one
asked for afresh.
"""

from __future__ import annotations

import importlib
import sys
from unittest import mock

from absl import flags


def forget_binaries() -> None:
    """Removes the flags of every binary imported so far, and the binary modules, so that one can be imported again."""
    by_module = flags.FLAGS.flags_by_module_dict()
    for module, defined in list(by_module.items()):
        if module.startswith("placer.") and module.endswith("_main"):
            for flag in list(defined):
                if flag.name in flags.FLAGS:
                    delattr(flags.FLAGS, flag.name)
            sys.modules.pop(module, None)
    flags.FLAGS.unparse_flags()


def run_binary(name: str, *argv: str) -> int:
    """Runs placer.`name` (e.g. "measure_main") with command-line `argv`; returns its exit status."""
    forget_binaries()
    module = importlib.import_module(f"placer.{name}")
    with mock.patch.object(sys, "argv", [name, *argv]):
        try:
            module.run()
        except SystemExit as e:
            return 0 if e.code is None else int(e.code)
    return 0
