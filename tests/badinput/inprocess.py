"""Runs a binary of placer/ in this process by its short name (tests/binaries.py does the work)."""

from tests.binaries import call


def run_binary(name: str, *argv: str) -> int:
    """Runs placer.`name` (e.g. "measure_main"), or a module by its dotted name (e.g. "bench.slaq_replay"),
    with command-line `argv`; returns its exit status."""
    return call(name if "." in name else f"placer.{name}", *argv)
