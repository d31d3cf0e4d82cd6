"""`tilelang.cache`: TileLang's kernel-cache controls over this package's
caches (the in-memory kernels of this process and the disk cache,
TILELANG_MLIR_CACHE_DIR; the autotuner's results live in the same folder)."""

from __future__ import annotations

from ..compiler import compile as _compile
from ..runtime.kernel import Kernel as JITKernel  # noqa: F401
from .env import env  # noqa: F401
from .target import TargetLike  # noqa: F401


def enable_cache() -> None:
    """Compiles use the kernel caches again (the default)."""
    _compile.set_cache_enabled(True)


def disable_cache() -> None:
    """Every later compile in this process runs the passes; nothing is
    cached (the autotuner still keeps its winners: cache=False there)."""
    _compile.set_cache_enabled(False)


def is_cache_enabled() -> bool:
    return _compile.cache_enabled()


def clear_cache() -> None:
    """Forgets this process's compiled kernels and autotune results and
    deletes the disk cache's entries."""
    from ..autotuner import cache as autotuner

    with autotuner._MEMORY_LOCK:
        autotuner._MEMORY.clear()
    _compile.clear_cache()


__all__ = ["enable_cache", "disable_cache", "is_cache_enabled", "clear_cache"]
