"""`tilelang.profiler`: `do_bench(fn, ...)` on any callable, `Profiler`
and `TensorSupplyType` (TileLang's names and meanings)."""

from __future__ import annotations

import time
from typing import Callable, List, Optional, Sequence

from ..runtime.profiler import (BACKENDS, Profiler, TensorSupplyType, _note_cupti,  # noqa: F401
                                bench_cuda, summarize)
from .utils import get_tensor_supply, is_float8_dtype, torch_assert_close  # noqa: F401


def _gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _estimate_ms(fn: Callable, gpu: bool) -> float:
    """Milliseconds of one call of `fn` (a first call, then five timed)."""
    if gpu:
        import torch

        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        return max(start.elapsed_time(end) / 5, 1e-4)
    fn()
    t0 = time.perf_counter()
    for _ in range(5):
        fn()
    return max((time.perf_counter() - t0) * 1e3 / 5, 1e-4)


def do_bench(fn: Callable, warmup: float = 25, rep: float = 100, _n_warmup: int = 0,
             _n_repeat: int = 0, quantiles: Optional[Sequence[float]] = None,
             fast_flush: bool = True, backend: str = "event", return_mode: str = "mean",
             device=None, cache_size: int = 256, **unused) -> float | List[float]:
    """Milliseconds of one call of `fn` (no arguments), as TileLang measures
    it: `warmup` and `rep` are time budgets in milliseconds (the counts
    follow from a first estimate; `_n_warmup` / `_n_repeat` set them
    instead); on a GPU each timed call is bracketed by CUDA events with the
    L2 flushed before it; `return_mode` "mean" (default), "median", "min" or
    "max"; `quantiles` returns those instead. backend="cupti" times with
    events (a warning says so once), "cudagraph" times replays of a CUDA
    graph of `fn`. Without a GPU, `fn` is timed with the wall clock."""
    if unused.pop("early_stop_baseline", None) is not None or unused:
        raise TypeError(f"do_bench got unexpected keyword arguments {sorted(unused)}")
    if not callable(fn):
        raise TypeError(f"do_bench times a callable, got {type(fn).__name__}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if return_mode not in ("min", "max", "mean", "median"):
        raise ValueError(f"return_mode must be min, max, mean or median, got {return_mode!r}")
    if backend == "cupti":
        _note_cupti()
    gpu = _gpu()
    if device is not None and gpu:
        import torch

        with torch.cuda.device(device):
            return do_bench(fn, warmup, rep, _n_warmup, _n_repeat, quantiles, fast_flush,
                            backend, return_mode, None, cache_size)
    est = _estimate_ms(fn, gpu)
    n_warmup = _n_warmup or max(1, int(warmup / est))
    n_repeat = _n_repeat or max(1, int(rep / est))
    if gpu:
        times = bench_cuda(fn, warmup=n_warmup, rep=n_repeat, flush_l2=fast_flush,
                           cuda_graph=backend == "cudagraph")
    else:
        times = Profiler._bench_cpu(fn, n_warmup, n_repeat)
    return summarize(times, return_mode, quantiles)


__all__ = ["do_bench", "Profiler", "TensorSupplyType", "get_tensor_supply", "is_float8_dtype",
           "torch_assert_close"]
