"""Runs a binary of placer/ in this process by its short name (tests/binaries.py does the work)."""

from tests.binaries import call


def run_binary(name: str, *argv: str) -> int:
    """Runs placer.`name` (e.g. "measure_main") with command-line `argv`; returns its exit status."""
    return call(f"placer.{name}", *argv)
