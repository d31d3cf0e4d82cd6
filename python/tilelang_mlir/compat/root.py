"""The module `tilelang` of a TileLang program run by tilelang-mlir.

TileLang's top-level names over this package: `compile`, `jit`,
`autotune`, `JITKernel` (our `Kernel`), `PassConfigKey`, `TensorSupplyType`,
`Profiler`, `DataType`, `cdiv`, `next_power_of_2`, `set_log_level`, `env`,
the cache controls (`enable_cache`, `disable_cache`, `is_cache_enabled`,
`clear_cache`), `__version__` and the submodules (`tilelang.language`,
`tilelang.profiler`, `tilelang.testing`, ...). `tilelang.tvm` and TVM's
APIs are out of scope: asking for them raises an ImportError saying so.
"""

from __future__ import annotations

import importlib
import logging

from ..base.version import __version__  # noqa: F401
from .cache import clear_cache, disable_cache, enable_cache, is_cache_enabled  # noqa: F401
from .math import cdiv, next_power_of_2  # noqa: F401
from .transform import PassConfigKey  # noqa: F401
from ..runtime.profiler import Profiler, TensorSupplyType  # noqa: F401
from .dtypes import DataType  # noqa: F401

# A package to the import system: its submodules are served by compat's finder.
__path__: list = []

logger = logging.getLogger("tilelang")

# Submodules TileLang's package imports eagerly, so `import tilelang` then
# `tilelang.language.X` works without importing tilelang.language.
_SUBMODULES = ("language", "profiler", "testing", "autotuner", "carver", "utils", "layout",
               "tools", "cache", "math", "env", "transform", "tileop")


def set_log_level(level) -> None:
    """Sets the level of the package's loggers ("DEBUG", "INFO", ... or a
    logging level number)."""
    if isinstance(level, str):
        name = level.upper()
        if not isinstance(getattr(logging, name, None), int):
            raise ValueError(f"unknown log level {level!r}; use DEBUG, INFO, WARNING, ERROR or "
                             "CRITICAL")
        level = getattr(logging, name)
    for name in ("tilelang", "tilelang_mlir"):
        logging.getLogger(name).setLevel(level)


def __getattr__(name):
    if name in ("compile", "jit", "JITKernel"):
        from . import jit as _jit

        return getattr(_jit, name if name != "jit" else "jit_function")
    if name == "autotune":
        from .autotuner import autotune

        return autotune
    if name in _SUBMODULES:
        return importlib.import_module(f"tilelang.{name}")
    if name == "tvm":
        raise ImportError("not supported by tilelang-mlir: tilelang.tvm (TVM's APIs are out of "
                          "scope: tilelang-mlir has no TVM)")
    if name in ("lower", "par_compile", "register_cuda_postproc", "register_hip_postproc",
                "register_c_postproc"):
        raise AttributeError(f"not supported by tilelang-mlir: tilelang.{name} (TileLang's TVM "
                             "lowering engine; use tilelang.compile)")
    if name in ("Layout", "Fragment"):
        import tilelang_mlir.language as T

        if hasattr(T, name):
            return getattr(T, name)
    raise AttributeError(f"module 'tilelang' has no attribute {name!r} (not supported by "
                         f"tilelang-mlir: tilelang.{name})")
