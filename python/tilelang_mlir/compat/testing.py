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
