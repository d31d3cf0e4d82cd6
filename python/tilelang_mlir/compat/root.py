"""The module `tilelang` of a TileLang program run by tilelang-mlir.

TileLang's top-level names over this package: `compile`, `par_compile`,
`jit`, `autotune`, `JITKernel` (our `Kernel`), `PassConfigKey`,
`TensorSupplyType`, `Profiler`, `DataType`, `Layout`, `Fragment`, `cdiv`,
`next_power_of_2`, `set_log_level`, `deprecated`, `build_date`, `env`, the
cache controls (`enable_cache`, `disable_cache`, `is_cache_enabled`,
`clear_cache`), `__version__`, `tvm` (the few TVM names TileLang programs
use, compat/tvm_pkg.py) and the submodules (`tilelang.language`,
`tilelang.profiler`, `tilelang.testing`, ...). TileLang's TVM lowering
engine (`lower`, `engine`, the postprocessing callbacks), its IR and its
analysis passes are out of scope: asking for them raises an error saying so
(compat/refusals.py).
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
from .utils import build_date, deprecated  # noqa: F401
from .env import env  # noqa: F401  (TileLang's `tilelang.env` is the settings object)

# A package to the import system: its submodules are served by compat's finder.
__path__: list = []

logger = logging.getLogger("tilelang")

# Submodules TileLang's package imports eagerly, so `import tilelang` then
# `tilelang.language.X` works without importing tilelang.language.
_SUBMODULES = ("language", "profiler", "testing", "autotuner", "carver", "utils", "layout",
               "tools", "cache", "math", "transform", "tileop", "cuda", "cpu", "rocm",
               "contrib", "backend", "intrinsics", "tvm")


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
    if name in ("compile", "jit", "JITKernel", "par_compile"):
        from . import jit as _jit

        return getattr(_jit, name)
    if name == "autotune":
        from .autotuner import autotune

        return autotune
    if name in ("Layout", "Fragment"):
        from . import layout

        return getattr(layout, name)
    if name == "dtypes":
        return importlib.import_module("tilelang.language.dtypes")
    if name in _SUBMODULES:
        return importlib.import_module(f"tilelang.{name}")
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    from .refusals import message

    raise AttributeError(message("tilelang", name))
