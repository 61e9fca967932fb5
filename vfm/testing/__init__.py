"""Tools for testing code that uses `vfm` (hypothesis strategies in `vfm.testing.strategies`)."""
