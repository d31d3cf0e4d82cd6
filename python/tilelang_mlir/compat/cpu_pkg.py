"""`tilelang.cpu`: TileLang's CPU dialect package; `tilelang.cpu.language` is
the T namespace (the CPU target is this compiler's reference backend)."""

from ._pkg import package_getattr

__getattr__ = package_getattr("tilelang.cpu")
