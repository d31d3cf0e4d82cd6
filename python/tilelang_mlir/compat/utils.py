"""`tilelang.utils` / `tilelang.utils.tensor`: `torch_assert_close`,
`TensorSupplyType`, `map_torch_type`."""

from __future__ import annotations

from ..base import dtypes as dt
from ..runtime.profiler import TensorSupplyType  # noqa: F401


def map_torch_type(name):
    """The torch dtype of a dtype name ("float16", T.float8_e4m3fn ...)."""
    return dt.to_torch(dt.as_dtype(name))


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


__all__ = ["torch_assert_close", "TensorSupplyType", "map_torch_type"]
