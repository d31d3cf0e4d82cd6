"""`tilelang.autotuner`: TileLang's tuning API over `tilelang_mlir.autotune`.

`@autotune(configs=..., warmup=..., rep=..., ref_prog=..., supply_type=...)`
above `@tilelang.jit(...)`, the builder form
`AutoTuner.from_kernel(kernel, configs).set_compile_args(...).set_profile_args(...).run()`,
and `with set_autotune_inputs(a, b): ...` (tune on these inputs instead of
random ones). Differences from TileLang, each documented where it applies:
`warmup`/`rep` count calls (TileLang's are millisecond budgets); `timeout`,
`early_stop` and `cache_input_tensors` are accepted and change nothing
(every config is compiled in worker processes and timed in full, inputs are
made once per signature); `max_mismatched_ratio` is not loosened (every
element must match)."""

from __future__ import annotations

import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

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
        return Profiler(fake, supply_type).random_inputs()

    return supply


def autotune(func=None, *, configs, warmup: int = 25, rep: int = 100, timeout: int = 100,
             supply_type: TensorSupplyType = TensorSupplyType.Auto, ref_prog=None,
             supply_prog=None, rtol: float = 1e-2, atol: float = 1e-2,
             max_mismatched_ratio: float = 0.01, skip_check: bool = False,
             manual_check_prog=None, cache_input_tensors: bool = False,
             do_not_specialize=None, early_stop: bool = False, early_stop_factor: float = 2.0):
    """TileLang's `@autotune(configs=..., ...)` (see the module docstring
    for what differs); `configs` is a list of dicts or a callable returning
    one for the call's arguments."""
    if do_not_specialize:
        raise NotImplementedError("not supported by tilelang-mlir: autotune(do_not_specialize="
                                  "...) (every argument is part of the tuning key)")
    decorate = _ours.autotune(configs, warmup=warmup, rep=rep, ref_prog=ref_prog, rtol=rtol,
                              atol=atol, manual_check_prog=manual_check_prog,
                              skip_check=skip_check)

    def wrap(fn):
        tuner = decorate(fn)
        tuner.supply_prog = _supplier(tuner, supply_type, supply_prog)
        return tuner

    return wrap(func) if func is not None else wrap


@dataclass
class AutotuneResult:
    """What `AutoTuner.run()` returns (TileLang's fields)."""

    latency: float
    config: dict
    kernel: Any
    ref_latency: Optional[float] = None
    result: Any = None  # tilelang_mlir's AutotuneResult: every timing, what was skipped

    @property
    def func(self):
        return self.kernel


class AutoTuner:
    """TileLang's builder: `AutoTuner.from_kernel(kernel, configs)`, then
    `set_compile_args(...)`, `set_profile_args(...)`, `run(warmup, rep)`.
    `kernel` is a factory of the config's keys (a plain function returning
    a prim_func, or a `@tilelang.jit` one)."""

    def __init__(self, fn: Callable, configs):
        self.fn = fn
        self.configs = configs
        self.compile_args = dict(out_idx=None, target=None, pass_configs=None)
        self.profile_args = dict(warmup=25, rep=100, supply_type=TensorSupplyType.Auto,
                                 ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2,
                                 skip_check=False, manual_check_prog=None)

    @classmethod
    def from_kernel(cls, kernel: Callable, configs) -> "AutoTuner":
        return cls(kernel, configs)

    def set_compile_args(self, out_idx=None, target=None, execution_backend=None,
                         target_host=None, verbose=None, pass_configs=None) -> "AutoTuner":
        if target_host is not None:
            raise NotImplementedError("not supported by tilelang-mlir: target_host (the host "
                                      "code is this process)")
        self.compile_args = dict(out_idx=out_idx, target=target, pass_configs=pass_configs)
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
        self.profile_args = dict(warmup=warmup, rep=rep, supply_type=supply_type,
                                 ref_prog=ref_prog, supply_prog=supply_prog, rtol=rtol, atol=atol,
                                 skip_check=skip_check, manual_check_prog=manual_check_prog)
        return self

    def run(self, warmup: Optional[int] = None, rep: Optional[int] = None, timeout: int = 180,
            **unused) -> AutotuneResult:
        """Tunes; returns the best kernel with its latency (ms) and config."""
        p = dict(self.profile_args)
        if warmup is not None:
            p["warmup"] = warmup
        if rep is not None:
            p["rep"] = rep
        supply_type, supply_prog = p.pop("supply_type"), p.pop("supply_prog")
        tuner = _ours.autotune(self.configs, **p, cache=True,
                               out_idx=self.compile_args["out_idx"],
                               target=self.compile_args["target"],
                               pass_configs=self.compile_args["pass_configs"])(self.fn)
        tuner.supply_prog = _supplier(tuner, supply_type, supply_prog)
        kernel = tuner()
        result = kernel.autotune_result
        return AutotuneResult(latency=result.latency, config=result.config, kernel=kernel,
                              result=result)


__all__ = ["autotune", "AutoTuner", "set_autotune_inputs", "get_autotune_inputs"]
