"""Runs a module of the project as a command, the way a user would (bench.testing.run_module)."""

from bench.testing import ROOT, run_module

__all__ = ["ROOT", "run_module"]
