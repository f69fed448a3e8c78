"""Runs a module of the project as a command, the way a user would (placer.testing.run_module)."""

from placer.testing import ROOT, run_module

__all__ = ["ROOT", "run_module"]
