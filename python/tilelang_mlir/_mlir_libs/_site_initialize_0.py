"""Registers the tile dialect and our passes into every tilelang_mlir Context.

MLIR's Python bindings import `_site_initialize_{i}` modules when the first
Context is made: `register_dialects` fills the registry every new Context
starts from.
"""

from ._tile import register_dialects, register_passes

register_passes()

__all__ = ["register_dialects"]
