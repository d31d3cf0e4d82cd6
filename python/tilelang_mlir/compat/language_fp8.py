"""`tilelang.language.fp8`: picking the FP8 dtype of the platform."""

from __future__ import annotations

import tilelang_mlir.language as _T

from ..base import dtypes as dt


def determine_fp8_type(fp8_format: str = "e4m3"):
    """The FP8 dtype of the current platform for `fp8_format` ("e4m3" or
    "e5m2"): OCP float8_e4m3fn / float8_e5m2 on NVIDIA GPUs, the CPU and
    gfx950; on other AMD GPUs TileLang picks the FNUZ variants, which this
    package has only where the T namespace offers them."""
    if fp8_format not in ("e4m3", "e5m2"):
        raise ValueError(f"Unsupported FP8 format: {fp8_format!r} (use 'e4m3' or 'e5m2')")
    ocp = _T.float8_e4m3fn if fp8_format == "e4m3" else _T.float8_e5m2
    try:
        import torch
    except ImportError:
        return ocp
    if torch.version.hip is None or not torch.cuda.is_available():
        return ocp
    arch = getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")
    if arch.startswith("gfx950"):
        return ocp
    fnuz = f"float8_{fp8_format}fnuz"
    if hasattr(_T, fnuz):
        return getattr(_T, fnuz)
    raise NotImplementedError(f"not supported by tilelang-mlir: {fnuz} (the FP8 type of {arch})")


def determine_torch_fp8_type(fp8_format: str = "e4m3"):
    """The torch dtype of `determine_fp8_type(fp8_format)`."""
    return dt.to_torch(dt.as_dtype(determine_fp8_type(fp8_format)))


__all__ = ["determine_fp8_type", "determine_torch_fp8_type"]
