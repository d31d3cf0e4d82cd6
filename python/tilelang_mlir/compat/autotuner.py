"""`tilelang.autotuner`: TileLang's tuning API over `tilelang_mlir.autotune`.

`@autotune(configs=..., warmup=..., rep=..., ref_prog=..., supply_type=...,
do_not_specialize=[...])` above `@tilelang.jit(...)`, the builder form
`AutoTuner.from_kernel(kernel, configs).set_compile_args(...).set_profile_args(...).run()`,
and `with set_autotune_inputs(a, b): ...` (tune on these inputs instead of
random ones).

`do_not_specialize` names arguments whose value does not select a new
tuning run: the best config found for the first call is reused for calls
that differ only in them (the kernel is compiled for the call's own values
with that config). The object `@autotune` returns keeps one entry per
tuning key in `_tuner_cache`, as TileLang's does. As in TileLang, a tuning
run with callbacks (ref_prog, supply_prog, manual_check_prog) or on inputs
of set_autotune_inputs neither reads nor writes the disk tuning cache.

Differences from TileLang, each documented where it applies: `timeout`,
`early_stop` and `cache_input_tensors` are accepted and change nothing
(every config is compiled in worker processes and timed in full, inputs are
made once per signature); `max_mismatched_ratio` is not loosened (every
element must match)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .. import autotuner as _ours
from ..runtime.profiler import Profiler, TensorSupplyType

AutotuneError = _ours.AutotuneError

_CAPTURED = threading.local()


class AutotuneInputsCapture:
    """`with set_autotune_inputs(...)`: tuning inside the block uses these inputs."""

    def __init__(self, tensors: List[Any]):
        self.tensors = tensors

    def __enter__(self):
        stack = getattr(_CAPTURED, "stack", None)
        if stack is None:
            stack = _CAPTURED.stack = []
        stack.append(self.tensors)
        return self

    def __exit__(self, *exc):
        _CAPTURED.stack.pop()


def set_autotune_inputs(*args) -> AutotuneInputsCapture:
    """`set_autotune_inputs(a, b, c)` or `set_autotune_inputs([a, b, c])`:
    a context in which tuning runs every config on these inputs."""
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) \
        else list(args)
    return AutotuneInputsCapture(tensors)


def get_autotune_inputs() -> Optional[List[Any]]:
    stack = getattr(_CAPTURED, "stack", None)
    return stack[-1] if stack else None


def _supplier(tuner: "_ours.AutoTuner", supply_type, supply_prog: Optional[Callable]):
    """The supply_prog our tuner calls with the kernel's input Params: the
    captured inputs, else the user's supply_prog, else inputs made as
    `supply_type` says on the target's device."""
    if supply_type is not None and not isinstance(supply_type, TensorSupplyType):
        raise TypeError(f"supply_type must be a TensorSupplyType, got {supply_type!r}")

    def supply(params):
        captured = get_autotune_inputs()
        if captured is not None:
            return list(captured)
        if supply_prog is not None:
            return supply_prog(params)
        device = "cpu"
        if not str(tuner.target).startswith("cpu"):
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        fake = types.SimpleNamespace(params=list(params), out_idx=[], name=tuner.factory.__name__,
                                     device=device)
        try:
            return Profiler(fake, supply_type).random_inputs()
        except ValueError as e:
            raise ValueError(f"{e}; tune with `with tilelang.autotuner.set_autotune_inputs(...)` "
                             "around the call, or give supply_prog") from None

    return supply


def _unwrap(fn):
    """A compat `@tilelang.jit` object becomes this compiler's JIT function
    (with its target and pass configs); anything else is kept."""
    from .jit import JITImpl

    if isinstance(fn, JITImpl):
        return fn._ours()
    return fn


def _cache_enabled() -> bool:
    from .env import env

    return not env.is_autotune_cache_disabled()


def _workers() -> Optional[int]:
    """The compile workers TileLang's settings ask for (None: ours decide)."""
    from .env import env

    names = ("TILELANG_AUTO_TUNING_CPU_COUNTS", "TILELANG_AUTO_TUNING_MAX_CPU_COUNT",
             "TILELANG_AUTO_TUNING_CPU_UTILITIES")
    if not any(n in os.environ for n in names):
        return None
    count = int(str(env.TILELANG_AUTO_TUNING_CPU_COUNTS).strip() or -1)
    most = int(str(env.TILELANG_AUTO_TUNING_MAX_CPU_COUNT).strip() or -1)
    if count <= 0:
        share = float(str(env.TILELANG_AUTO_TUNING_CPU_UTILITIES).strip() or 0.9)
        count = max(1, int((os.cpu_count() or 1) * share))
    if most > 0:
        count = min(count, most)
    return max(1, count)


class AutoTuneImpl:
    """What `@autotune(...)` returns: calling it tunes for the call (or
    reuses the config of the call's tuning key) and returns the best kernel
    (an eager-style function runs it on the call's tensors)."""

    def __init__(self, tuner: "_ours.AutoTuner", do_not_specialize, callbacks: bool = False):
        self._tuner = tuner
        # TileLang keeps no tuning result of a run with callbacks (ref_prog,
        # supply_prog, manual_check_prog) or with inputs given by
        # set_autotune_inputs: their behaviour has no persistent identity.
        self._callbacks = callbacks
        self.do_not_specialize = tuple(do_not_specialize or ())
        sig = tuner._signature
        if self.do_not_specialize and sig is not None:
            unknown = [n for n in self.do_not_specialize if n not in sig.parameters]
            if unknown:
                raise ValueError(f"do_not_specialize names {unknown[0]!r}, which is not an "
                                 f"argument of {tuner.factory.__name__!r}")
        self._tuner_cache: Dict[tuple, Dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.__wrapped__ = tuner
        self.__name__ = getattr(tuner, "__name__", "autotuned")
        self.__doc__ = getattr(tuner, "__doc__", None)

    def __getattr__(self, name):
        return getattr(self._tuner, name)

    def _key(self, args: tuple, kwargs: dict) -> tuple:
        from .jit import _hashable

        sig = self._tuner._signature
        if self.do_not_specialize and sig is not None:
            bound = sig.bind_partial(*args, **{k: v for k, v in kwargs.items()
                                               if k in sig.parameters})
            bound.apply_defaults()
            named = {k: v for k, v in bound.arguments.items() if k not in self.do_not_specialize}
            named.update({k: v for k, v in kwargs.items() if k not in sig.parameters})
            return ((), _hashable(named))
        return (_hashable(args), _hashable(kwargs))

    def tune(self, *args, **kwargs):
        """The best kernel for these arguments (tuned once per key)."""
        key = self._key(args, kwargs)
        with self._lock:
            config = self._tuner_cache.get(key)
        if config is None:
            tuner = self._tuner
            if tuner.cache and (self._callbacks or get_autotune_inputs() is not None):
                tuner = copy.copy(tuner)  # this run neither reads nor writes the disk cache
                tuner.cache = False
            kernel = tuner.tune(*args, **kwargs)
            result = getattr(kernel, "autotune_result", None)
            config = dict(result.config) if result is not None else {}
            with self._lock:
                self._tuner_cache.setdefault(key, config)
            return kernel
        return self._tuner.tune(*args, **{**kwargs, **config})

    def __call__(self, *args, **kwargs):
        return_kernel = kwargs.pop("__return_kernel", False)
        kernel = self.tune(*args, **kwargs)
        eager = self._tuner._eager
        runtime = eager.runtime_arguments(args, kwargs) if eager else None
        if runtime is None or return_kernel:
            return kernel
        from ..base.signature import is_input

        return kernel(*[runtime[p.name] for i, p in enumerate(kernel.params)
                        if is_input(i, p, kernel.out_idx)])

    def compile(self, *args, **kwargs):
        """The best kernel for these arguments (never runs it)."""
        return self.tune(*args, **kwargs)


def autotune(func=None, *, configs, warmup: int = 25, rep: int = 100, timeout: int = 100,
             supply_type: TensorSupplyType = TensorSupplyType.Auto, ref_prog=None,
             supply_prog=None, rtol: float = 1e-2, atol: float = 1e-2,
             max_mismatched_ratio: float = 0.01, skip_check: bool = False,
             manual_check_prog=None, cache_input_tensors: bool = False,
             do_not_specialize=None, early_stop: bool = False, early_stop_factor: float = 2.0,
             keys=None):
    """TileLang's `@autotune(configs=..., ...)` (see the module docstring
    for what differs); `configs` is a list of dicts or a callable returning
    one for the call's arguments. Above a `tilelang.autotuner.jit` function
    (TileLang 0.1.0 to 0.1.4) it is that release's tuner: calling it tunes
    with the settings of that `jit` and returns an AutotuneResult, which
    also unpacks as (latency, config, ref_latency); `keys` (0.1.0 to 0.1.3)
    names the factory's arguments the configs give, which is what each
    config's own keys say here."""
    if keys is not None and not callable(configs):
        for config in configs:
            missing = [k for k in keys if k not in config]
            if missing:
                raise ValueError(f"autotune: keys names {missing[0]!r}, which config "
                                 f"{config} does not give")
    if func is None and isinstance(configs, LegacyJIT):
        raise TypeError("autotune: give configs as a keyword (configs=...)")

    def legacy(fn: "LegacyJIT"):
        tuner = AutoTuner(fn.fn, configs)
        s = fn.settings
        tuner.set_compile_args(out_idx=s["out_idx"], target=s["target"])
        tuner.set_profile_args(warmup=warmup, rep=rep, timeout=timeout,
                               supply_type=s["supply_type"], ref_prog=s["ref_prog"],
                               supply_prog=s["supply_prog"], rtol=s["rtol"], atol=s["atol"],
                               max_mismatched_ratio=s["max_mismatched_ratio"],
                               skip_check=s["skip_check"],
                               cache_input_tensors=s["cache_input_tensors"])
        return _LegacyTuner(tuner, fn)

    if isinstance(func, LegacyJIT):
        return legacy(func)
    if isinstance(do_not_specialize, str):
        do_not_specialize = [do_not_specialize]
    decorate = _ours.autotune(configs, warmup=warmup, rep=rep, ref_prog=ref_prog, rtol=rtol,
                              atol=atol, manual_check_prog=manual_check_prog,
                              skip_check=skip_check, cache=_cache_enabled(),
                              max_workers=_workers())

    def wrap(fn):
        if isinstance(fn, LegacyJIT):
            return legacy(fn)
        tuner = decorate(_unwrap(fn))
        tuner.supply_prog = _supplier(tuner, supply_type, supply_prog)
        callbacks = any(cb is not None for cb in (ref_prog, supply_prog, manual_check_prog))
        return AutoTuneImpl(tuner, do_not_specialize, callbacks)

    return wrap(func) if func is not None else wrap


@dataclass
class AutotuneResult:
    """What `AutoTuner.run()` returns (TileLang's fields)."""

    latency: Optional[float] = None
    config: Optional[dict] = None
    kernel: Any = None
    ref_latency: Optional[float] = None
    libcode: Optional[str] = None
    result: Any = None  # tilelang_mlir's AutotuneResult: every timing, what was skipped

    @property
    def func(self):
        return self.kernel

    def __iter__(self):
        """(latency, config, ref_latency): what tuning returned in TileLang
        0.1.0 to 0.1.3 (`best_latency, best_config, ref_latency = kernel(...)`)."""
        return iter((self.latency, self.config, self.ref_latency))


@dataclass
class CompileArgs:
    """The compile arguments of a tuning run (TileLang's record)."""

    out_idx: Any = None
    execution_backend: str = "auto"
    target: Any = "auto"
    target_host: Any = None
    verbose: bool = False
    pass_configs: Optional[dict] = None

    def compile_program(self, program):
        from .jit import compile as tl_compile

        return tl_compile(program, out_idx=self.out_idx,
                          execution_backend=self.execution_backend, target=self.target,
                          target_host=self.target_host, verbose=self.verbose,
                          pass_configs=self.pass_configs)


@dataclass
class ProfileArgs:
    """The profiling arguments of a tuning run (TileLang's record)."""

    warmup: int = 25
    rep: int = 100
    timeout: int = 30
    backend: str = "event"
    supply_type: TensorSupplyType = TensorSupplyType.Auto
    ref_prog: Optional[Callable] = None
    supply_prog: Optional[Callable] = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Optional[Callable] = None
    cache_input_tensors: bool = True
    extra: Dict[str, Any] = field(default_factory=dict)


class AutoTuner:
    """TileLang's builder: `AutoTuner.from_kernel(kernel, configs)`, then
    `set_compile_args(...)`, `set_profile_args(...)`, `run(warmup, rep)`.
    `kernel` is a factory of the config's keys (a plain function returning
    a prim_func, or a `@tilelang.jit` one)."""

    def __init__(self, fn: Callable, configs):
        self.fn = fn
        self.configs = configs
        self.compile_args = CompileArgs()
        self.profile_args = ProfileArgs()

    @classmethod
    def from_kernel(cls, kernel: Callable, configs) -> "AutoTuner":
        return cls(kernel, configs)

    def __getattr__(self, name):
        from .refusals import REFUSED, message

        if name in REFUSED["tilelang.autotuner.AutoTuner"]:
            raise AttributeError(message("tilelang.autotuner.AutoTuner", name))
        raise AttributeError(f"'AutoTuner' object has no attribute {name!r}")

    @property
    def cache_dir(self) -> str:
        """Where tuning results are kept (this package's kernel cache)."""
        root = _ours._cache_root()
        return os.path.join(root, "autotune") if root else ""

    def set_compile_args(self, out_idx=None, target="auto", execution_backend="auto",
                         target_host=None, verbose=False, pass_configs=None) -> "AutoTuner":
        from .jit import _check_backend, _check_host

        _check_host(target_host)
        self.compile_args = CompileArgs(out_idx, _check_backend(execution_backend), target,
                                        target_host, verbose, pass_configs)
        return self

    def set_profile_args(self, warmup: int = 25, rep: int = 100, timeout: int = 30,
                         supply_type: TensorSupplyType = TensorSupplyType.Auto, ref_prog=None,
                         supply_prog=None, rtol: float = 1e-2, atol: float = 1e-2,
                         max_mismatched_ratio: float = 0.01, skip_check: bool = False,
                         manual_check_prog=None, cache_input_tensors: bool = False,
                         backend: str = "event") -> "AutoTuner":
        captured = get_autotune_inputs()
        if captured is not None:  # frozen now, as TileLang does
            supply_prog = (lambda _params, _inputs=list(captured): list(_inputs))
        self.profile_args = ProfileArgs(warmup, rep, timeout, backend, supply_type, ref_prog,
                                        supply_prog, rtol, atol, max_mismatched_ratio,
                                        skip_check, manual_check_prog, cache_input_tensors)
        return self

    def generate_cache_key(self, parameters: Optional[dict] = None,
                           extra_parameters: Optional[dict] = None) -> Optional[str]:
        """A key of this tuning run (the factory's source, its arguments, the
        configs and the compile and profile settings); None where a
        reference, supply or check callback makes results not reusable, as
        in TileLang."""
        p = self.profile_args
        if any(cb is not None for cb in (p.ref_prog, p.supply_prog, p.manual_check_prog)):
            return None
        fn = _unwrap(self.fn)
        fn = getattr(fn, "fn", fn)
        parts = {
            "factory": _ours._factory_text(fn) if callable(fn) else repr(fn),
            "parameters": {k: _ours._argument_text(v) for k, v in (parameters or {}).items()},
            "extra": {k: _ours._argument_text(v) for k, v in (extra_parameters or {}).items()},
            "configs": _ours._value_text(self.configs if not callable(self.configs)
                                         else _ours._factory_text(self.configs)),
            "compile": _ours._value_text({k: str(v) for k, v in vars(self.compile_args).items()}),
            "profile": _ours._value_text({"warmup": p.warmup, "rep": p.rep,
                                          "supply_type": str(p.supply_type), "rtol": p.rtol,
                                          "atol": p.atol, "skip_check": p.skip_check,
                                          "max_mismatched_ratio": p.max_mismatched_ratio,
                                          "cache_input_tensors": p.cache_input_tensors,
                                          "backend": p.backend}),
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    def run(self, warmup: Optional[int] = None, rep: Optional[int] = None, timeout: int = 180,
            **unused) -> AutotuneResult:
        """Tunes; returns the best kernel with its latency (ms) and config,
        and the reference program's latency on the same kind of inputs where
        `ref_prog` is given."""
        return self._run((), {}, warmup, rep)

    def _run(self, args: tuple, kwargs: dict, warmup: Optional[int],
             rep: Optional[int]) -> AutotuneResult:
        """`run` with `args` and `kwargs` given to the factory beside each
        config's keys (TileLang 0.1.0 to 0.1.3: `kernel(M, N, K)`)."""
        p = self.profile_args
        c = self.compile_args
        from .jit import _resolve

        target, pcs = _resolve(c.target, c.pass_configs)
        tuner = _ours.autotune(self.configs, warmup=p.warmup if warmup is None else warmup,
                               rep=p.rep if rep is None else rep, ref_prog=p.ref_prog,
                               rtol=p.rtol, atol=p.atol, manual_check_prog=p.manual_check_prog,
                               skip_check=p.skip_check, cache=_cache_enabled(),
                               max_workers=_workers(), out_idx=c.out_idx, target=target,
                               pass_configs=pcs)(_unwrap(self.fn))
        tuner.supply_prog = _supplier(tuner, p.supply_type, p.supply_prog)
        kernel = tuner(*args, **kwargs)
        result = kernel.autotune_result
        ref_latency = None
        if p.ref_prog is not None:  # timed as TileLang does: on the profiler's inputs
            w = p.warmup if warmup is None else warmup
            r = p.rep if rep is None else rep
            profiler = kernel.get_profiler(p.supply_type)
            inputs = (p.supply_prog(kernel.params) if p.supply_prog is not None
                      else profiler._get_inputs())
            ref_latency = profiler.do_bench(p.ref_prog, n_warmup=w, n_repeat=r,
                                            input_tensors=inputs)
        kernel.update_tuner_result(result.latency, result.config, ref_latency)
        return AutotuneResult(latency=result.latency, config=result.config, kernel=kernel,
                              ref_latency=ref_latency, libcode=kernel.get_kernel_source(),
                              result=result)

    def __call__(self) -> AutotuneResult:
        return self.run()


# --- TileLang 0.1.0 to 0.1.4: `tilelang.autotuner.jit` under `@autotune` ---------------


@dataclass(frozen=True)
class JITContext:
    """What a `tilelang.autotuner.jit` function returns: the compiled kernel
    with the settings its tuning uses (TileLang 0.1.0 to 0.1.4)."""

    out_idx: Any
    ref_prog: Optional[Callable]
    supply_prog: Optional[Callable]
    rtol: float
    atol: float
    max_mismatched_ratio: float
    skip_check: bool
    cache_input_tensors: bool
    kernel: Any
    supply_type: TensorSupplyType
    target: Any

    @property
    def profiler(self):
        """The kernel's profiler on the supply type (0.1.0 to 0.1.3's field)."""
        return self.kernel.get_profiler(self.supply_type)


class LegacyJIT:
    """A factory under `tilelang.autotuner.jit`: called, it compiles the
    program the factory returns and gives a JITContext; under `@autotune`
    it is the function tuned with these settings."""

    def __init__(self, fn: Callable, settings: dict):
        self.fn = fn
        self.settings = settings
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs) -> JITContext:
        from .jit import compile as tl_compile

        s = self.settings
        kernel = tl_compile(self.fn(*args, **kwargs), out_idx=s["out_idx"], target=s["target"])
        return JITContext(kernel=kernel, **{k: v for k, v in s.items()})


def jit(out_idx=None, supply_type: TensorSupplyType = TensorSupplyType.Auto, ref_prog=None,
        supply_prog=None, rtol: float = 1e-2, atol: float = 1e-2,
        max_mismatched_ratio: float = 0.01, skip_check: bool = False,
        cache_input_tensors: bool = True, target="auto"):
    """`tilelang.autotuner.jit` of TileLang 0.1.0 to 0.1.4: the compile and
    check settings of a factory that `@autotune` tunes (TileLang 0.1.5 moved
    them into `autotune` itself)."""
    settings = dict(out_idx=out_idx, supply_type=supply_type, ref_prog=ref_prog,
                    supply_prog=supply_prog, rtol=rtol, atol=atol,
                    max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                    cache_input_tensors=cache_input_tensors, target=target)
    return lambda fn: LegacyJIT(fn, settings)


class _LegacyTuner:
    """`@autotune` over a `tilelang.autotuner.jit` factory: a call tunes
    for its arguments (the configs give the rest) and returns the
    AutotuneResult."""

    def __init__(self, tuner: AutoTuner, fn: LegacyJIT):
        self._tuner = tuner
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def run(self, *args, **kwargs) -> AutotuneResult:
        return self._tuner._run(args, kwargs, None, None)

    __call__ = run


__all__ = ["autotune", "AutoTuner", "set_autotune_inputs", "get_autotune_inputs",
           "AutotuneResult", "CompileArgs", "ProfileArgs", "AutoTuneImpl", "JITContext", "jit"]
