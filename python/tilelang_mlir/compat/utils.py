"""`tilelang.utils` and its submodules `tensor`, `deprecated`, `device`,
`version`: `torch_assert_close`, `TensorSupplyType`, `get_tensor_supply`,
`map_torch_type`, the float8 helpers, `deprecated`, `build_date`, the device
queries. TileLang's helpers over TVM buffers and regions (`is_shared`,
`to_buffer_region`, ...) are out of scope (compat/refusals.py)."""

from __future__ import annotations

import functools
import os
import re
import warnings
from typing import Optional

from ..base import dtypes as dt
from ..runtime.profiler import TensorSupplyType, _supplied  # noqa: F401


def map_torch_type(name):
    """The torch dtype of a dtype name ("float16", T.float8_e4m3fn ...)."""
    return dt.to_torch(dt.as_dtype(name))


# ---------------------------------------------------------------------------
# tilelang.utils.tensor
# ---------------------------------------------------------------------------


def _float8_dtypes() -> set:
    import torch

    return {getattr(torch, n) for n in ("float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fn",
                                        "float8_e4m3fnuz") if hasattr(torch, n)}


def is_float8_dtype(dtype) -> bool:
    """Whether a torch dtype is one of torch's float8 types."""
    return dtype in _float8_dtypes()


def fp8_remove_negative_zeros_(tensor):
    """Rewrites the negative zeros of a float8 tensor as +0, in place."""
    if not is_float8_dtype(tensor.dtype):
        raise AssertionError("Input tensor must be of float8 dtype")
    import torch

    bits = tensor.view(torch.uint8)
    bits[tensor == 0] = 0x00
    return tensor


def _param_parts(param):
    """(shape, our dtype) of a kernel parameter: this package's `Param` or
    anything with `.shape` and `.dtype` (TileLang's KernelParam)."""
    shape = getattr(param, "shape", None)
    if shape is None or len(shape) == 0:
        raise ValueError(f"TensorType must have a shape, but got {type(param).__name__}, likely "
                         "you are trying to generate a random tensor with a dynamic symbolic "
                         "shape.")
    dims = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int):
            raise ValueError(f"TensorType must have a static shape, but got {d}, likely you are "
                             "trying to generate a random tensor with a dynamic symbolic shape.")
        dims.append(int(d))
    dtype = getattr(param, "dtype", None)
    return tuple(dims), dt.as_dtype(str(getattr(dtype, "name", dtype)))


def get_current_device():
    """The current CUDA device index where a GPU is visible, else None (the
    CPU)."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.current_device()
    return None


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Integer):
    """A function that makes one input tensor for a kernel parameter, as
    `supply_type` says (TensorSupplyType: Integer, Uniform, Normal, Randn,
    Zero, One, Auto), on the current device (the GPU where one is visible,
    else the CPU)."""
    if not isinstance(supply_type, TensorSupplyType):
        raise TypeError(f"supply_type must be a TensorSupplyType, got {supply_type!r}")

    def get_tensor(param):
        shape, dtype = _param_parts(param)
        device = get_current_device()
        device = "cpu" if device is None else device
        return _supplied(supply_type, shape, dtype, dt.to_torch(dtype), device)

    return get_tensor


def torch_assert_close(tensor_a, tensor_b, rtol=1e-2, atol=1e-3, max_mismatched_ratio=0.001,
                       verbose: bool = False, equal_nan: bool = True, check_device: bool = True,
                       check_dtype: bool = True, check_layout: bool = True,
                       check_stride: bool = False, base_name: str = "LHS",
                       ref_name: str = "RHS"):
    """Raises AssertionError where more than `max_mismatched_ratio` of the
    elements differ by more than `atol + rtol * |tensor_b|` (TileLang's
    check), naming the count, the largest error and where it is."""
    import torch

    a, b = torch.as_tensor(tensor_a), torch.as_tensor(tensor_b)
    if check_device and a.device != b.device:
        raise AssertionError(f"{base_name} is on {a.device}, {ref_name} on {b.device}")
    if check_dtype and a.dtype != b.dtype:
        raise AssertionError(f"{base_name} has dtype {a.dtype}, {ref_name} {b.dtype}")
    if check_layout and a.layout != b.layout:
        raise AssertionError(f"{base_name} has layout {a.layout}, {ref_name} {b.layout}")
    if check_stride and a.stride() != b.stride():
        raise AssertionError(f"{base_name} has strides {a.stride()}, {ref_name} {b.stride()}")
    if a.shape != b.shape:
        raise AssertionError(f"{base_name} has shape {tuple(a.shape)}, {ref_name} "
                             f"{tuple(b.shape)}")
    x, y = a.detach().to(torch.float64).cpu(), b.detach().to(torch.float64).cpu()
    close = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
    bad = int((~close).sum())
    total = x.numel()
    if verbose:
        print(f"{base_name} vs {ref_name}: {bad} of {total} elements differ")
    if bad > max_mismatched_ratio * total:
        diff = torch.where(close, torch.zeros_like(x), (x - y).abs().nan_to_num(nan=float("inf")))
        flat = int(diff.argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), x.shape))
        raise AssertionError(
            f"{base_name} and {ref_name} differ in {bad} of {total} elements "
            f"({bad / max(total, 1):.2%} > max_mismatched_ratio {max_mismatched_ratio:.2%}; "
            f"rtol={rtol}, atol={atol}); largest error {float(diff.max()):.6g} at {index} "
            f"({base_name} {float(x.flatten()[flat]):.6g}, {ref_name} "
            f"{float(y.flatten()[flat]):.6g})")


# ---------------------------------------------------------------------------
# tilelang.utils.deprecated / version / device
# ---------------------------------------------------------------------------


def deprecated_warning(method_name: str, new_method_name: str,
                       phaseout_version: Optional[str] = None) -> None:
    warnings.warn(f"{method_name} is deprecated, use {new_method_name} instead"
                  + (f" and will be removed in {phaseout_version}" if phaseout_version else ""),
                  DeprecationWarning, stacklevel=3)


def deprecated(method_name: str, new_method_name: str, phaseout_version: Optional[str] = None):
    """A decorator: calling the function warns (DeprecationWarning) that
    `method_name` is deprecated in favour of `new_method_name`."""

    def wrap(func):
        @functools.wraps(func)
        def inner(*args, **kwargs):
            deprecated_warning(method_name, new_method_name, phaseout_version)
            return func(*args, **kwargs)

        return inner

    return wrap


def build_date(version_str: Optional[str] = None) -> Optional[int]:
    """The build date (YYYYMMDD) in a version string such as
    "0.1.7.post3+cuda.d20260127.gita17230e4" (tilelang.__version__ when
    omitted), or None when it has none."""
    if version_str is None:
        from ..base.version import __version__ as version_str
    m = re.search(r"\.d(\d{8})\.", version_str)
    return int(m.group(1)) if m else None


def get_available_cpu_count() -> int:
    """CPU cores this process may use (its affinity), at least 1."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:
        count = os.cpu_count()
    return max(1, count or 1)


def __getattr__(name):
    if name == "IS_CUDA":
        import torch

        return torch.cuda.is_available()
    if name == "IS_MPS":
        return False  # Metal: hardware this compiler does not target
    from .refusals import message

    raise AttributeError(message("tilelang.utils", name))


__all__ = ["torch_assert_close", "TensorSupplyType", "map_torch_type", "get_tensor_supply",
           "is_float8_dtype", "fp8_remove_negative_zeros_", "deprecated", "deprecated_warning",
           "build_date", "get_current_device", "get_available_cpu_count"]
