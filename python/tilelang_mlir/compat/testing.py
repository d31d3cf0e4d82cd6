"""`tilelang.testing`: TileLang's test helpers (pytest markers that skip
where the hardware is missing, seeding, comparison) over this package."""

from __future__ import annotations

import importlib.util
import inspect
import operator
import random
import sys

import numpy as np

from ..testing import assert_close as assert_allclose  # noqa: F401
from .utils import torch_assert_close  # noqa: F401


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _cuda() -> bool:
    torch = _torch()
    return bool(torch is not None and torch.cuda.is_available() and torch.version.hip is None)


def _rocm_arch() -> str:
    torch = _torch()
    if torch is None or torch.version.hip is None or not torch.cuda.is_available():
        return ""
    return getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")


def _skip_unless(condition: bool, reason: str):
    import pytest

    return pytest.mark.skipif(not condition, reason=reason)


def requires_cuda(func):
    """Skips the test without an NVIDIA GPU."""
    return _skip_unless(_cuda(), "needs CUDA")(func)


def requires_rocm(func):
    return _skip_unless(bool(_rocm_arch()), "needs ROCm")(func)


requires_cdna = requires_rocm


def requires_cuda_or_cdna(func):
    return _skip_unless(_cuda() or bool(_rocm_arch()), "needs CUDA or ROCm")(func)


def requires_gfx950(func):
    return _skip_unless(_rocm_arch().startswith("gfx950"), "needs gfx950")(func)


def requires_llvm(func):
    return func  # the CPU target (LLVM) is always built in


def requires_package(*names):
    """Skips the test where a Python package is missing."""
    missing = [n for n in names if importlib.util.find_spec(n) is None]

    def wrap(func):
        return _skip_unless(not missing, f"needs {', '.join(missing)}")(func)

    return wrap


_COMPARE = {"ge": operator.ge, "gt": operator.gt, "eq": operator.eq, "lt": operator.lt,
            "le": operator.le}


def requires_cuda_compute_version(major_version, minor_version=0, mode="ge"):
    """Skips the test unless the GPU's compute capability compares with
    (major, minor) as `mode` says ("ge", "gt", "eq", "lt", "le")."""
    if mode not in _COMPARE:
        raise ValueError(f"mode must be one of {', '.join(_COMPARE)}, got {mode!r}")
    ok = False
    if _cuda():
        cap = _torch().cuda.get_device_capability()
        ok = _COMPARE[mode](tuple(cap), (major_version, minor_version))

    def wrap(func):
        return _skip_unless(ok, f"needs CUDA compute capability {mode} "
                                f"{major_version}.{minor_version}")(func)

    return wrap


def requires_cuda_compute_version_ge(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "ge")


def requires_cuda_compute_version_gt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "gt")


def requires_cuda_compute_version_eq(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "eq")


def requires_cuda_compute_version_lt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "lt")


def requires_cuda_compute_version_le(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "le")


def set_random_seed(seed: int = 42) -> None:
    """Seeds Python's, NumPy's and torch's generators (and CUDA's)."""
    random.seed(seed)
    np.random.seed(seed)
    torch = _torch()
    if torch is not None:
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)


def main():
    """Runs the calling file's tests with pytest and exits with its status."""
    import pytest

    caller = inspect.getmodule(inspect.stack()[1].frame)
    path = getattr(caller, "__file__", None) or sys.argv[0]
    sys.exit(pytest.main([path] + sys.argv[1:]))


def requires_metal(func):
    """Skips the test: Metal is hardware this compiler does not target."""
    return _skip_unless(False, "needs Metal (not a target of tilelang-mlir)")(func)


# ---------------------------------------------------------------------------
# performance regression scripts (TileLang's examples/*/regression_*.py)
# ---------------------------------------------------------------------------

_RESULTS: list = []
_CASE = [None]
_JSON_PREFIX = "__TILELANG_PERF_RESULTS_JSON__="


def process_func(func, name=None, /, **kwargs) -> None:
    """Calls `func(**kwargs)`, which returns a latency, and records it under
    `name` (default: the function's module without its "regression_"
    prefix); a non-positive latency is retried up to five times, then
    dropped with a RuntimeWarning."""
    import warnings

    label = name if name is not None else getattr(func, "__module__", "<unknown>")
    if label.startswith("regression_"):
        label = label[len("regression_"):]
    latency = float(func(**kwargs))
    for _ in range(5):
        if latency > 0.0:
            break
        latency = float(func(**kwargs))
    if latency <= 0.0:
        warnings.warn(f"{label} has latency {latency} <= 0. Please verify the profiling "
                      "results.", RuntimeWarning, 2)
        return
    _RESULTS.append({"name": label, "latency": latency, "case": _CASE[0]})


def _only_filters() -> list:
    import json
    import os

    value = os.environ.get("TL_PERF_REGRESSION_ONLY", "").strip()
    if not value:
        return []
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = [p.strip() for p in value.split(",")]
    parsed = [parsed] if isinstance(parsed, str) else parsed
    return [str(p).strip().lower() for p in parsed if str(p).strip()] if isinstance(parsed, list) \
        else []


def regression(prefixes=("regression_",), verbose: bool = True) -> None:
    """Runs the caller module's functions whose names start with one of
    `prefixes` (in name order; TL_PERF_REGRESSION_ONLY filters them by glob
    or substring), then prints the latencies they recorded with
    `process_func`: one "name: latency" line each, or one JSON line with
    TL_PERF_REGRESSION_FORMAT=json."""
    import fnmatch
    import json
    import os
    import time

    caller = inspect.currentframe().f_back.f_globals
    _RESULTS.clear()
    found = sorted((k, v) for k, v in caller.items()
                   if callable(v) and any(k.startswith(p) for p in prefixes))
    filters = _only_filters()

    def wanted(name: str) -> bool:
        short = name[len("regression_"):] if name.startswith("regression_") else name
        return not filters or any(fnmatch.fnmatch(c.lower(), f) or f in c.lower()
                                  for f in filters for c in (name, short))

    found = [(k, v) for k, v in found if wanted(k)]
    for i, (name, fn) in enumerate(found, 1):
        _CASE[0] = name[len("regression_"):] if name.startswith("regression_") else name
        if verbose:
            print(f"  ├─ [{i}/{len(found)}] {_CASE[0]}", end="", flush=True)
        start = time.perf_counter()
        try:
            fn()
        finally:
            _CASE[0] = None
        if verbose:
            print(f" ({time.perf_counter() - start:.2f}s)", flush=True)
    if os.environ.get("TL_PERF_REGRESSION_FORMAT", "text").strip().lower() == "json":
        rows = [{k: v for k, v in r.items() if v is not None} for r in _RESULTS]
        print(_JSON_PREFIX + json.dumps(rows, separators=(",", ":")))
    else:
        for r in _RESULTS:
            print(f"{r['name']}: {r['latency']}")


__all__ = ["requires_package", "requires_cuda", "requires_metal", "requires_rocm",
           "requires_llvm", "requires_cdna", "requires_cuda_or_cdna", "requires_gfx950", "main",
           "requires_cuda_compute_version", "process_func", "regression", "set_random_seed",
           "torch_assert_close", "assert_allclose"] + [
    f"requires_cuda_compute_version_{op}" for op in ("ge", "gt", "le", "lt", "eq")]
