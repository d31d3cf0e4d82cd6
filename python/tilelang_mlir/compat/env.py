"""`tilelang.env`: TileLang's settings object `env` (each setting an
environment variable, read live, which a program may also assign) and the
module's names, over this package.

What each setting does here:
- TILELANG_CACHE_DIR: the kernel cache's folder (this package's
  TILELANG_MLIR_CACHE_DIR, default ~/.cache/tilelang_mlir); setting it moves
  the cache there. TILELANG_TMP_DIR: its tmp/ subfolder.
- TILELANG_DISABLE_CACHE (and enable_cache / disable_cache): compiles skip
  the kernel caches. TILELANG_AUTO_TUNING_DISABLE_CACHE: tuning results are
  not cached. TILELANG_AUTO_TUNING_CPU_COUNTS / _MAX_CPU_COUNT /
  _CPU_UTILITIES: the autotuner's compile workers.
- TILELANG_DEFAULT_TARGET, TILELANG_EXECUTION_BACKEND, TILELANG_VERBOSE: the
  defaults of compile / jit / autotune (compat/jit.py).
- TILELANG_PRINT_ON_COMPILATION: log records (logger "tilelang.jit") when a
  compile starts and ends. TILELANG_JIT_DIAGNOSTICS: the compile phases
  (compat/jit_diagnostics.py).
- TL_LOWER_TRACE / TL_LOWER_TRACE_DIR: when on, every compile writes this
  compiler's lower trace (the IR after every pass) into the folder (the
  pass config tl.trace_dir).
- TILELANG_COMPILE_TIMEOUT_SECONDS: the time ptxas may take (seconds; empty
  or 0 is no limit).
- TILELANG_ENABLE_IR_SPAN, TILELANG_KERNEL_CACHE_USE_LIB_STAMP,
  TILELANG_CLEANUP_TEMP_FILES: read as TileLang reads them; this compiler
  always keeps source locations, always keys its cache by its build, and
  leaves no temporary files.
- CUDA_HOME / ROCM_HOME: found as TileLang finds them (environment, nvcc on
  PATH, the default install folders).
TileLang's own build tree (CUTLASS, composable kernel, its templates, TVM's
library) and its pass-diff and pass-profile tools have no counterpart here
(compat/refusals.py).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from typing import Callable, Dict, Optional, Union

logger = logging.getLogger("tilelang.env")

_TRUE = ("1", "true", "yes", "on")
EnvVarDefault = Union[str, None, Callable[[], Optional[str]]]
TargetConfig = Dict[str, object]


class CacheState:
    """The process-wide kernel cache switch (enable / disable)."""

    @classmethod
    def enable(cls) -> None:
        from ..compiler import compile as _compile

        _compile.set_cache_enabled(True)

    @classmethod
    def disable(cls) -> None:
        from ..compiler import compile as _compile

        _compile.set_cache_enabled(False)

    @classmethod
    def is_enabled(cls) -> bool:
        from ..compiler import compile as _compile

        return _compile.cache_enabled()


class EnvVar:
    """A setting read from the environment variable `key` on every access
    (`default` where it is unset); assigning it on the object forces a value
    for this process (and sets the variable, so that compile workers see it)."""

    def __init__(self, key: str, default: EnvVarDefault = None,
                 on_set: Optional[Callable[[object], None]] = None):
        self.key, self.default, self.on_set = key, default, on_set
        self._forced = None

    def get(self):
        if self._forced is not None:
            return self._forced
        if self.key in os.environ:
            return os.environ[self.key]
        return self.default() if callable(self.default) else self.default

    def __get__(self, instance, owner):
        return self.get()

    def __set__(self, instance, value) -> None:
        self._forced = value
        if value is None:
            os.environ.pop(self.key, None)
        else:
            os.environ[self.key] = str(value)
        if self.on_set is not None:
            self.on_set(value)

    def __repr__(self) -> str:
        return f"EnvVar({self.key!r}, {self.default!r})"


def _find_cuda_home() -> Optional[str]:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home is None:
        nvcc = shutil.which("nvcc")
        if nvcc is not None:
            home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        elif os.path.isdir("/usr/local/cuda"):
            home = "/usr/local/cuda"
    return home


def _find_rocm_home() -> Optional[str]:
    home = os.environ.get("ROCM_PATH") or os.environ.get("ROCM_HOME")
    if home is None:
        hipcc = shutil.which("hipcc")
        if hipcc is not None:
            home = os.path.dirname(os.path.dirname(os.path.realpath(hipcc)))
        elif os.path.isdir("/opt/rocm"):
            home = "/opt/rocm"
    return home


def _our_cache_dir() -> str:
    from ..compiler import compile as _compile

    return _compile.cache_dir() or os.path.join(os.path.expanduser("~"), ".cache",
                                                "tilelang_mlir")


def _set_cache_dir(value) -> None:
    if value is None:
        os.environ.pop("TILELANG_MLIR_CACHE_DIR", None)
    else:
        os.environ["TILELANG_MLIR_CACHE_DIR"] = os.fspath(value)


def _truthy(value) -> bool:
    return str(value).strip().lower() in _TRUE


class Environment:
    """TileLang's settings (see the module docstring)."""

    CUDA_HOME = _find_cuda_home()
    ROCM_HOME = _find_rocm_home()

    TILELANG_CACHE_DIR = EnvVar("TILELANG_CACHE_DIR", _our_cache_dir, _set_cache_dir)
    TILELANG_TMP_DIR = EnvVar("TILELANG_TMP_DIR",
                              lambda: os.path.join(Environment.TILELANG_CACHE_DIR, "tmp"))
    TILELANG_PRINT_ON_COMPILATION = EnvVar("TILELANG_PRINT_ON_COMPILATION", "1")
    TILELANG_DISABLE_CACHE = EnvVar("TILELANG_DISABLE_CACHE", "0")
    TILELANG_KERNEL_CACHE_USE_LIB_STAMP = EnvVar("TILELANG_KERNEL_CACHE_USE_LIB_STAMP", "0")
    TILELANG_CLEANUP_TEMP_FILES = EnvVar("TILELANG_CLEANUP_TEMP_FILES", "1")
    TILELANG_JIT_DIAGNOSTICS = EnvVar("TILELANG_JIT_DIAGNOSTICS", "0")
    TILELANG_COMPILE_TIMEOUT_SECONDS = EnvVar("TILELANG_COMPILE_TIMEOUT_SECONDS", "")
    TL_LOWER_TRACE = EnvVar("TL_LOWER_TRACE", "0")
    TL_LOWER_TRACE_DIR = EnvVar("TL_LOWER_TRACE_DIR",
                                lambda: os.path.join(".", "tmp", "lower_trace_dir"))
    TILELANG_ENABLE_IR_SPAN = EnvVar("TILELANG_ENABLE_IR_SPAN", "1")
    TILELANG_AUTO_TUNING_DISABLE_CACHE = EnvVar("TILELANG_AUTO_TUNING_DISABLE_CACHE", "0")
    TILELANG_AUTO_TUNING_CPU_UTILITIES = EnvVar("TILELANG_AUTO_TUNING_CPU_UTILITIES", "0.9")
    TILELANG_AUTO_TUNING_CPU_COUNTS = EnvVar("TILELANG_AUTO_TUNING_CPU_COUNTS", "-1")
    TILELANG_AUTO_TUNING_MAX_CPU_COUNT = EnvVar("TILELANG_AUTO_TUNING_MAX_CPU_COUNT", "-1")
    TILELANG_DEFAULT_TARGET = EnvVar("TILELANG_DEFAULT_TARGET", "auto")
    TILELANG_DEFAULT_EXECUTION_BACKEND = EnvVar("TILELANG_EXECUTION_BACKEND", "auto")
    TILELANG_DEFAULT_VERBOSE = EnvVar("TILELANG_VERBOSE", "0")

    # -- the kernel cache -----------------------------------------------------------------
    def is_cache_enabled(self) -> bool:
        return not self.is_cache_globally_disabled() and CacheState.is_enabled()

    def enable_cache(self) -> None:
        CacheState.enable()

    def disable_cache(self) -> None:
        CacheState.disable()

    def is_cache_globally_disabled(self) -> bool:
        return _truthy(self.TILELANG_DISABLE_CACHE)

    def should_use_kernel_cache_lib_stamp(self) -> bool:
        return _truthy(self.TILELANG_KERNEL_CACHE_USE_LIB_STAMP)

    def is_autotune_cache_disabled(self) -> bool:
        return _truthy(self.TILELANG_AUTO_TUNING_DISABLE_CACHE)

    # -- compiles -------------------------------------------------------------------------
    def is_print_on_compilation_enabled(self) -> bool:
        return _truthy(self.TILELANG_PRINT_ON_COMPILATION)

    def should_cleanup_temp_files(self) -> bool:
        return _truthy(self.TILELANG_CLEANUP_TEMP_FILES)

    def is_jit_diagnostics_enabled(self) -> bool:
        return _truthy(self.TILELANG_JIT_DIAGNOSTICS)

    def is_span_enable(self) -> bool:
        return _truthy(self.TILELANG_ENABLE_IR_SPAN)

    def get_compile_timeout_seconds(self) -> Optional[float]:
        """Seconds a device compile may take; None for no limit (empty or 0)."""
        value = str(self.TILELANG_COMPILE_TIMEOUT_SECONDS).strip()
        if not value:
            return None
        try:
            timeout = float(value)
        except ValueError:
            raise ValueError("TILELANG_COMPILE_TIMEOUT_SECONDS must be empty or a non-negative "
                             "number") from None
        if not math.isfinite(timeout) or timeout < 0:
            raise ValueError("TILELANG_COMPILE_TIMEOUT_SECONDS must be empty or a non-negative "
                             "number")
        return timeout if timeout > 0 else None

    def get_lower_trace_mode(self) -> Optional[str]:
        value = str(self.TL_LOWER_TRACE).strip().lower()
        if value in ("0", "false", "no", "off", ""):
            return None
        if value in ("terminal", "both"):
            return value
        return "html"

    def get_lower_trace_dir(self) -> str:
        return str(self.TL_LOWER_TRACE_DIR).strip() or os.path.join(".", "tmp",
                                                                     "lower_trace_dir")

    def get_default_target(self) -> Union[str, TargetConfig]:
        import json

        target = self.TILELANG_DEFAULT_TARGET
        if target is None:
            return "auto"
        if isinstance(target, dict):
            return dict(target)
        text = str(target).strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError("TILELANG_DEFAULT_TARGET looks like a dict but could not be "
                                 'parsed; use JSON such as {"kind": "cuda", "arch": "sm_90"}') \
                    from None
            if not isinstance(parsed, dict):
                raise ValueError("TILELANG_DEFAULT_TARGET must parse to a dict")
            return parsed
        return text

    def get_default_execution_backend(self) -> str:
        return str(self.TILELANG_DEFAULT_EXECUTION_BACKEND)

    def get_default_verbose(self) -> bool:
        return _truthy(self.TILELANG_DEFAULT_VERBOSE)

    def is_light_import(self) -> bool:
        """TileLang's light import serves its delta-debugging CLI; never here."""
        return False


env = Environment()

enable_cache = env.enable_cache
disable_cache = env.disable_cache
is_cache_enabled = env.is_cache_enabled
CUDA_HOME = env.CUDA_HOME
ROCM_HOME = env.ROCM_HOME


def compile_settings() -> Dict[str, object]:
    """The pass configs the settings add to a compile (the lower trace, a
    globally disabled cache)."""
    out: Dict[str, object] = {}
    if env.get_lower_trace_mode() is not None:
        out["tl.trace_dir"] = env.get_lower_trace_dir()
    if env.is_cache_globally_disabled():
        out["tl.disable_cache"] = True
    return out


def __getattr__(name):
    # `tilelang.env.X`: the settings object's X (TileLang binds `tilelang.env`
    # to it), else the reason the name is missing.
    if not name.startswith("__") and hasattr(Environment, name):
        return getattr(env, name)
    from .refusals import message

    raise AttributeError(message("tilelang.env", name))


__all__ = ["env", "Environment", "EnvVar", "CacheState", "enable_cache", "disable_cache",
           "is_cache_enabled", "CUDA_HOME", "ROCM_HOME"]
