"""Benchmarks and demos of vfm (run from the repository root: python -m benchmarks.NAME)."""
