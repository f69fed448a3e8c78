"""Binaries called in this process with the test's own output capture: see tests/binaries.py."""

from tests.binaries import call, own_flags  # noqa: F401 (the callers' import path)
