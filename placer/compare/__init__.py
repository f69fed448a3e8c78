"""Comparing placements on one measurer: tables and plots."""
