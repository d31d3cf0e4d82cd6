"""`tilelang.jit`, `tilelang.compile` and `tilelang.par_compile`:
TileLang's JIT API over this compiler (`tilelang_mlir.compiler.compile`).

TileLang's arguments and what they do here:
- `target`: a string ("auto", "cuda", "cuda -arch=sm_90a", "llvm", "c",
  "hip"), a dict ({"kind": "cuda", "arch": "sm_90"}) or a
  `tvm.target.Target` (compat/target.py); None reads TILELANG_DEFAULT_TARGET
  ("auto": the current `with Target(...)`, else this machine's GPU, else the
  CPU).
- `pass_configs`: TileLang's keys (tilelang.PassConfigKey) and this
  compiler's; the config of an open `tvm.transform.PassContext` applies
  under them, and the environment's settings under both (TL_LOWER_TRACE,
  TILELANG_DISABLE_CACHE: compat/env.py).
- `execution_backend`: every TileLang backend ("auto", "tvm_ffi", "cython",
  "nvrtc", "torch", "cutedsl", "ctypes", "dlpack") calls the kernel through
  this compiler's launcher, with the same results; another name is an
  error. None reads TILELANG_EXECUTION_BACKEND.
- `target_host`: the host code is this process; a host target other than
  the CPU ("llvm", "c") is an error.
- `verbose`: logs the compile phases (logger "tilelang.jit.diagnostics", as
  TileLang's jit_phase does); None reads TILELANG_VERBOSE.
- `compile_flags`: nvcc flags, accepted where they only steer C++
  compilation (compiler/compile.py: check_compile_flags).
- `debug_root_path`: each compile writes the kernel's code
  (`tilelang_jit_kernel_<name>.ptx`, `.ll` on the CPU, `.s` on ROCm) and its
  tile IR (`tilelang_jit_program_<name>.mlir`) into this folder.

The object `@tilelang.jit` returns (`JITImpl`) has TileLang's attributes
and methods: `func`, `mode`, `out_idx`, `target`, ..., `compile(...)`,
`get_tir(...)`, `par_compile(configs)`, `get_kernel_source(...)`,
`parse_cache_key(...)`, `is_lazy_mode()`, `initialize_jit_mode(...)`. A
factory (lazy mode) returns the kernel, cached by its canonical arguments;
an eager-style function compiles once per binding and runs.

The module itself is callable, as TileLang's `tilelang.jit` decorator is,
because importing the submodule `tilelang.jit` binds the module where the
package had the decorator.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import inspect
import json
import logging
import os
import sys
import types
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..compiler import compile as _compile
from ..frontend.prim_func import PrimFunc, prim_func  # noqa: F401
from .. import language as _T
from . import tvm_pkg as tvm  # noqa: F401  (TileLang's module imports it too)
from .utils import get_available_cpu_count  # noqa: F401
from ..runtime.kernel import Kernel as JITKernel
from .jit_diagnostics import jit_phase

logger = logging.getLogger("tilelang.jit")

EXECUTION_BACKENDS = ("auto", "tvm_ffi", "cython", "nvrtc", "torch", "cutedsl", "ctypes",
                      "dlpack")
ExecutionBackend = str
TargetLike = Any
Kernel = JITKernel


def _env():
    from .env import env

    return env


def _check_backend(backend: Optional[str]) -> str:
    backend = backend if backend is not None else _env().get_default_execution_backend()
    if backend not in EXECUTION_BACKENDS:
        raise ValueError(f"execution_backend {backend!r} is not one of TileLang's: "
                         f"{', '.join(EXECUTION_BACKENDS)}")
    return backend


def _check_host(target_host) -> None:
    if target_host is None:
        return
    from .target import Target

    host = target_host if isinstance(target_host, Target) else Target(target_host)
    if host.ours.kind != "cpu":
        raise ValueError(f"target_host {target_host!r}: the host code runs in this process on "
                         "the CPU; give 'llvm', 'c' or None")


def _resolve(target, pass_configs) -> Tuple[Any, dict]:
    """This package's target and the pass configs of a compile: the open
    PassContexts' config under the given one."""
    from .env import compile_settings
    from .target import to_ours
    from .tvm_transform import current_config

    if target is None:
        target = _env().get_default_target()
    merged = dict(compile_settings())  # the environment's (lower trace, cache off)
    merged.update(current_config())
    merged.update({str(getattr(k, "value", k)): v for k, v in (pass_configs or {}).items()})
    return to_ours(target), merged


def _verbose(verbose: Optional[bool]) -> bool:
    return bool(verbose) if verbose is not None else _env().get_default_verbose()


def _note(kernel: JITKernel, **attrs) -> JITKernel:
    """The compile's arguments on the kernel (TileLang's JITKernel keeps them)."""
    for k, v in attrs.items():
        setattr(kernel, k, v)
    return kernel


@contextlib.contextmanager
def _compiling(name: str, out_idx, verbose: bool, **context):
    """A compile, logged as TileLang logs it: "begins" / "completes"
    records (TILELANG_PRINT_ON_COMPILATION) and the jit_phase diagnostics."""
    printing = _env().is_print_on_compilation_enabled()
    if printing:
        logger.info(f"TileLang begins to compile kernel `{name}` with `out_idx={out_idx}`")
    with jit_phase("compile", verbose=verbose, kernel=name, **context):
        yield
    if printing:
        logger.info(f"TileLang completes to compile kernel `{name}`")


def compile(func: PrimFunc = None, out_idx=None, execution_backend: Optional[str] = None,  # noqa: A001
            target=None, target_host=None, verbose: Optional[bool] = None,
            pass_configs: Optional[dict] = None, compile_flags=None) -> JITKernel:
    """TileLang's `tilelang.compile`: a prim_func to a callable kernel (see
    the module docstring for the arguments)."""
    backend = _check_backend(execution_backend)
    _check_host(target_host)
    tgt, pcs = _resolve(target, pass_configs)
    verbose = _verbose(verbose)
    name = getattr(func, "name", getattr(func, "__name__", "?"))
    with _compiling(name, out_idx, verbose, target=str(tgt)):
        kernel = _compile.compile(func, out_idx, tgt, pcs, compile_flags=compile_flags)
    return _note(kernel, execution_backend=backend, target_host=target_host, verbose=verbose,
                 pass_configs=pcs, compile_flags=compile_flags)


def par_compile(funcs: Iterable[PrimFunc], out_idx=None, execution_backend=None, target=None,
                target_host=None, verbose=None, pass_configs=None, compile_flags=None,
                num_workers: Optional[int] = None, ignore_error: bool = False) -> List:
    """Compiles `funcs` in a pool of threads; the kernels in the order of
    `funcs`. With `ignore_error`, a program that fails to compile gives None
    (and a warning) instead of raising."""
    funcs = list(funcs)
    if not funcs:
        return []
    tgt, pcs = _resolve(target, pass_configs)  # resolved here: threads see no contexts
    workers = num_workers or min(len(funcs), os.cpu_count() or 1)

    def one(f):
        return compile(f, out_idx, execution_backend, tgt, target_host, verbose, pcs,
                       compile_flags)

    results: List = [None] * len(funcs)
    with concurrent.futures.ThreadPoolExecutor(workers, "tl-par-compile") as pool:
        futures = {pool.submit(one, f): i for i, f in enumerate(funcs)}
        for fut in concurrent.futures.as_completed(futures):
            i = futures[fut]
            try:
                results[i] = fut.result()
            except Exception as e:
                if not ignore_error:
                    raise
                logger.warning(f"Error compiling function at index {i}: {e}")
    return results


# ---------------------------------------------------------------------------
# the object @tilelang.jit returns
# ---------------------------------------------------------------------------

_MISS = object()


def _hashable(value):
    """`value` as part of a cache key: lists and tuples as tuples, dicts as
    sorted item tuples, sets as frozensets; another unhashable value is a
    TypeError, as in TileLang."""
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted(((k, _hashable(v)) for k, v in value.items()), key=lambda kv: repr(kv[0])))
    if isinstance(value, (set, frozenset)):
        return frozenset(_hashable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"Unsupported unhashable JIT compile-time cache key value of type "
                        f"{type(value).__name__}: {value!r}") from None
    return value


class _CallFormCache:
    """The kernels of lazy calls by their literal arguments (a hit skips
    binding them to the signature)."""

    def __init__(self):
        self._entries: Dict[tuple, Any] = {}

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(args: tuple, kwargs: dict) -> tuple:
        key = (args, tuple(sorted(kwargs.items())))
        hash(key)  # TypeError "unhashable type" for list arguments, as in TileLang
        return key

    def lookup(self, key: tuple):
        return self._entries.get(key, _MISS)

    def store(self, key: tuple, kernel) -> None:
        self._entries[key] = kernel


class JITFunc:
    """`jit_obj.func`: the decorated function and its argument binding
    (`parse_args` gives the cache key of a call and its runtime arguments)."""

    def __init__(self, fn, impl: "JITImpl"):
        self.orig_func = fn.fn if isinstance(fn, PrimFunc) else fn
        self.fn = fn
        self._impl = impl
        self.mode = "auto"
        functools.update_wrapper(self, self.orig_func)

    @property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.orig_func)

    def set_mode(self, mode: str) -> None:
        if mode not in ("auto", "lazy", "eager"):
            raise ValueError(f"mode must be 'auto', 'lazy' or 'eager', got {mode!r}")
        self.mode = mode

    @property
    def tensor_args(self) -> Dict[str, Any]:
        """The parameters given as tensors at call time (eager mode)."""
        if self._impl._style() != "eager":
            return {}
        jf = self._impl._ours()
        if jf.style != "eager":
            return {}
        return {n: None for n in jf._eager.annotated}

    def _bind_lazy(self, args: tuple, kwargs: dict):
        sig = self.signature
        params = sig.parameters
        takes_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        known = {k: v for k, v in kwargs.items() if k in params or takes_kw}
        extra = {k: v for k, v in kwargs.items() if k not in known}
        bound = sig.bind(*args, **known)
        bound.apply_defaults()
        values: List[Any] = []
        compile_kwargs: Dict[str, Any] = {}
        for name, value in bound.arguments.items():
            kind = params[name].kind
            if kind == params[name].VAR_KEYWORD:
                values.append(_hashable(value))
                compile_kwargs.update(value)
            elif kind == params[name].VAR_POSITIONAL:
                values.append(_hashable(value))
            else:
                values.append(_hashable(value))
                compile_kwargs[name] = value
        if extra:
            values.append(_hashable(extra))
        return tuple(values), compile_kwargs

    def _parse_phase1_key(self, *args, **kwargs) -> Tuple[tuple, Dict[str, Any], Dict[str, Any]]:
        """(the key of the compile-time arguments, the tensor arguments by
        name, the compile-time arguments by name with defaults applied and
        **kwargs flattened), as TileLang's JITFunc splits a call."""
        tensors = set(self.tensor_args)
        sig = self.signature
        params = sig.parameters
        takes_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        bound = sig.bind_partial(*args, **{k: v for k, v in kwargs.items()
                                           if k in params or takes_kw})
        bound.apply_defaults()
        tensor_args: Dict[str, Any] = {}
        compile_kwargs: Dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if params[name].kind == params[name].VAR_KEYWORD:
                compile_kwargs.update(value)
            elif name in tensors:
                tensor_args[name] = value
            else:
                compile_kwargs[name] = value
        compile_kwargs.update({k: v for k, v in kwargs.items()
                               if k not in params and not takes_kw})
        key = tuple(_hashable(v) for v in compile_kwargs.values())
        return key, tensor_args, compile_kwargs

    def parse_args(self, *args, **kwargs) -> Tuple[tuple, Dict[str, Any]]:
        """(the cache key of this call, its runtime arguments by name):
        defaults applied and positional / keyword forms made one, so every
        spelling of a call selects the same kernel."""
        if self._impl._style() == "eager":
            binding = self._impl._eager().bind(args, kwargs, call=True)
            return binding.key, dict(binding.runtime)
        values, _ = self._bind_lazy(args, kwargs)
        return (values, None), {}

    def __call__(self, *args, **kwargs):
        return self.orig_func(*args, **kwargs)


_T.JITFunc.register(JITFunc)  # `isinstance(jit_obj.func, T.JITFunc)`, as in TileLang


class JITImpl:
    """What `@tilelang.jit` returns (see the module docstring)."""

    def __init__(self, func, *, out_idx=None, execution_backend=None, target=None,
                 target_host=None, verbose=None, pass_configs=None, debug_root_path=None,
                 compile_flags=None):
        _compile.check_compile_flags(compile_flags)
        _check_host(target_host)
        if execution_backend is not None:
            _check_backend(execution_backend)
        self.out_idx = out_idx
        self.execution_backend = execution_backend
        self.target = target
        self.target_host = target_host
        self.verbose = verbose
        self.pass_configs = pass_configs
        if debug_root_path is not None:
            debug_root_path = os.path.abspath(debug_root_path)
        self.debug_root_path = debug_root_path
        self.compile_flags = compile_flags
        self.func = JITFunc(func, self)
        try:
            self.func_source = inspect.getsource(self.func.orig_func)
        except (OSError, TypeError):
            self.func_source = ""
        self.signature = inspect.signature(self.func.orig_func)
        self.mode = "auto"
        self._fn = func
        self._kernel_cache: Dict[tuple, Any] = {}
        self._call_form_cache = _CallFormCache()
        self._tuner_cache: Dict[tuple, Any] = {}
        self._jit: Dict[str, Any] = {}
        functools.update_wrapper(self, self.func.orig_func)
        # TileLang's JITImpl is no function wrapper: without `__wrapped__`
        # pytest does not collect a jitted `test_*` kernel as a test (its
        # parameters would be taken for fixtures).
        del self.__wrapped__

    def __repr__(self) -> str:
        return f"<tilelang.jit of {self.func.orig_func.__qualname__} mode={self.mode}>"

    # -- this compiler's JIT function per target and pass configs ----------------------
    def _ours(self, target=None, pass_configs=None):
        """Our JITFunction for the resolved target and pass configs (one per
        combination, so that a `with Target(...)` or PassContext around a
        call compiles for it)."""
        tgt, pcs = _resolve(self.target if target is None else target,
                            self.pass_configs if pass_configs is None else pass_configs)
        key = json.dumps([str(tgt), sorted(pcs.items(), key=lambda kv: kv[0])], default=str)
        jf = self._jit.get(key)
        if jf is None:
            jf = self._jit[key] = _compile.JITFunction(self._fn, self.out_idx, tgt, pcs)
        return jf

    def _eager(self):
        """The EagerFunction of the resolved target's JITFunction (its style
        is read first: a JITFunction learns it on first use)."""
        jf = self._ours()
        if jf.style != "eager":
            raise TypeError(f"{getattr(self._fn, '__name__', self._fn)!r} is not an "
                            "eager-style function")
        return jf._eager

    def _style(self) -> str:
        if not self._jit:
            return _compile.JITFunction(self._fn, None, "cpu", None).style
        return next(iter(self._jit.values())).style

    def initialize_jit_mode(self, *args, **kwargs) -> str:
        """Settles the mode ("lazy" for a factory or prim_func, "eager" for
        an eager-style function) and returns it."""
        if self.mode == "auto":
            self.mode = "eager" if self._style() == "eager" else "lazy"
        self.func.set_mode(self.mode)
        if self.mode == "eager" and self.out_idx is not None:
            raise ValueError("out_idx is only supported in lazy mode. In eager mode, use "
                             "T.empty() to declare output tensors instead.")
        return self.mode

    def is_lazy_mode(self) -> bool:
        return self.mode == "lazy"

    # -- programs and kernels -----------------------------------------------------------
    def get_tir(self, *args, **kwargs) -> PrimFunc:
        """The tile program these arguments select (not compiled)."""
        self.initialize_jit_mode(*args, **kwargs)
        if isinstance(self._fn, PrimFunc):
            if args or kwargs:
                raise TypeError("a jitted prim_func takes no arguments to elaborate")
            return self._fn
        if self.mode == "eager":
            return self._eager().factory()(*args, **kwargs)
        program = self._fn(*args, **kwargs)
        if not isinstance(program, PrimFunc):
            raise TypeError(f"@tilelang.jit factory {self.func.orig_func.__name__!r} must "
                            f"return a @T.prim_func, got {type(program).__name__}")
        return program

    def _compile_args(self) -> dict:
        return {"out_idx": self.out_idx, "execution_backend": self.execution_backend,
                "target": self.target, "target_host": self.target_host,
                "verbose": self.verbose, "pass_configs": self.pass_configs,
                "compile_flags": self.compile_flags}

    def compile(self, *args, **kwargs) -> JITKernel:
        """The kernel of these arguments (compiled, or from the caches)."""
        self.initialize_jit_mode(*args, **kwargs)
        verbose = _verbose(self.verbose)
        jf = self._ours()
        name = self.func.orig_func.__name__
        with _compiling(name, self.out_idx, verbose):
            kernel = jf.compile(*args, **kwargs)
        tgt, pcs = _resolve(self.target, self.pass_configs)
        _note(kernel, execution_backend=_check_backend(self.execution_backend),
              target_host=self.target_host, verbose=verbose, pass_configs=pcs,
              compile_flags=self.compile_flags)
        if self.debug_root_path:
            self._write_debug(kernel, name)
        return kernel

    def _write_debug(self, kernel: JITKernel, name: str) -> None:
        suffix = {"cuda": "ptx", "cpu": "ll", "rocm": "s"}.get(kernel.device, "txt")
        os.makedirs(self.debug_root_path, exist_ok=True)
        with open(os.path.join(self.debug_root_path,
                               f"tilelang_jit_kernel_{name}.{suffix}"), "w") as f:
            f.write(kernel.get_kernel_source())
        if kernel.stages:
            with open(os.path.join(self.debug_root_path,
                                   f"tilelang_jit_program_{name}.mlir"), "w") as f:
                f.write(kernel.mlir("tile"))

    def par_compile(self, configs: Iterable, num_workers: Optional[int] = None,
                    ignore_error: bool = False) -> List:
        """Elaborates every config (a dict of keyword arguments or a tuple of
        positional ones) and compiles the programs in parallel."""
        funcs = []
        for cfg in configs:
            if isinstance(cfg, tuple):
                funcs.append(self.get_tir(*cfg))
            elif isinstance(cfg, dict):
                funcs.append(self.get_tir(**cfg))
            else:
                raise ValueError(f"Invalid config type: {type(cfg).__name__}, expected tuple or "
                                 "dict.")
        return par_compile(funcs, num_workers=num_workers, ignore_error=ignore_error,
                           **self._compile_args())

    def parse_cache_key(self, *args, **kwargs) -> tuple:
        """TileLang's key of a call: (positional arguments, sorted keyword
        arguments, sorted tuning parameters)."""
        tune = kwargs.pop("__tune_params", {})
        return (args, tuple(sorted(kwargs.items())), tuple(sorted(tune.items())))

    def get_kernel_source(self, *args, **kwargs) -> str:
        """The final code of the kernel of these arguments (PTX for CUDA, LLVM
        IR for the CPU, AMDGPU assembly for ROCm)."""
        return self.compile(*args, **kwargs).get_kernel_source()

    def __call__(self, *args, **kwargs):
        if kwargs.pop("__return_compile_arguments", False):
            return self._compile_args()
        tune = kwargs.pop("__tune_params", None)
        if tune:
            kwargs.update(tune)
        mode = self.initialize_jit_mode(*args, **kwargs)
        if mode == "eager":
            jf = self._ours()
            with jit_phase("jit.call", verbose=_verbose(self.verbose),
                           kernel=self.func.orig_func.__name__):
                return jf(*args, **kwargs)
        if isinstance(self._fn, PrimFunc):
            return self.compile()(*args, **kwargs)
        form = None
        if not tune:
            form = _CallFormCache.key(args, kwargs)
            hit = self._call_form_cache.lookup(form)
            if hit is not _MISS:
                return hit
        key, _ = self.func.parse_args(*args, **kwargs)
        kernel = self._kernel_cache.get(key)
        if kernel is None:
            kernel = self._kernel_cache[key] = self.compile(*args, **kwargs)
        if form is not None:
            self._call_form_cache.store(form, kernel)
        return kernel


def jit(func=None, *, out_idx=None, target=None, target_host=None, execution_backend=None,
        verbose=None, pass_configs=None, debug_root_path=None, compile_flags=None):
    """`@tilelang.jit` or `@tilelang.jit(out_idx=..., target=..., ...)` (see
    the module docstring)."""
    args = dict(out_idx=out_idx, target=target, target_host=target_host,
                execution_backend=execution_backend, verbose=verbose, pass_configs=pass_configs,
                debug_root_path=debug_root_path, compile_flags=compile_flags)

    def wrap(fn):
        return JITImpl(fn, **args)

    return wrap(func) if func is not None else wrap


jit_function = jit


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return jit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["jit", "compile", "par_compile", "JITImpl", "JITFunc", "JITKernel", "Kernel",
           "ExecutionBackend", "TargetLike"]
