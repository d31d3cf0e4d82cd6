"""Compilation: pass pipelines per target, the lower trace, tl.compile."""
