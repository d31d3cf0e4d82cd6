"""tilelang-mlir: an MLIR-based tile compiler.

`import tilelang_mlir` gives MLIR's Python bindings with the tile dialect
inside (`tilelang_mlir.ir`, `tilelang_mlir.dialects.tile`, ...).
"""

__version__ = "0.1.0"
