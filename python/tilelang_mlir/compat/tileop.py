"""`tilelang.tileop` / `tilelang.tileop.base`: `GemmWarpPolicy`."""

from tilelang_mlir.language import GemmWarpPolicy  # noqa: F401

__all__ = ["GemmWarpPolicy"]
