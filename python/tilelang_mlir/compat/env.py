"""`tilelang.env`: the environment settings TileLang programs read, over
this package's (TILELANG_MLIR_CACHE_DIR, the kernel cache switch)."""

from __future__ import annotations

import os

from ..compiler import compile as _compile


class Environment:
    @property
    def TILELANG_CACHE_DIR(self) -> str:
        return _compile.cache_dir() or ""

    def is_cache_enabled(self) -> bool:
        return _compile.cache_enabled()

    def enable_cache(self) -> None:
        _compile.set_cache_enabled(True)

    def disable_cache(self) -> None:
        _compile.set_cache_enabled(False)

    def get_default_target(self) -> str:
        return os.environ.get("TILELANG_DEFAULT_TARGET", "auto")

    def get_default_execution_backend(self) -> str:
        return "auto"

    def get_default_verbose(self) -> bool:
        return os.environ.get("TILELANG_VERBOSE", "").lower() in ("1", "true", "yes", "on")


env = Environment()

__all__ = ["env", "Environment"]


def __getattr__(name):
    # `tilelang.env.X` reads the settings object, as TileLang's `tilelang.env` is one.
    return getattr(env, name)
