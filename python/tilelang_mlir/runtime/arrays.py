"""Moving arrays between the host and a kernel's device: what the kernel
library's host helpers (reference results, packed operands) and the user
helpers of `tilelang_mlir.testing` share."""

from __future__ import annotations

import numpy as np


def to_device(x, device: str):
    """The array `x` (NumPy or torch) where a kernel on `device` takes it:
    unchanged for "cpu"; a CUDA torch tensor for "cuda" (a CPU tensor where
    no GPU exists, so that the launch reports the missing device)."""
    if device == "cpu":
        return x
    import torch

    t = _torch_of(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
    return t.cuda() if torch.cuda.is_available() else t


def _torch_of(x: np.ndarray):
    """A torch tensor of the NumPy array `x`, also of the ml_dtypes types
    torch.from_numpy refuses (bfloat16, float8_*): their bits, viewed as
    the torch dtype of the same name."""
    import torch

    if x.dtype.type.__module__ != "ml_dtypes":
        return torch.from_numpy(x)
    from ..base import dtypes as dt

    target = dt.to_torch(dt.from_numpy(x.dtype))
    bits = x.view(np.dtype(f"uint{8 * x.dtype.itemsize}"))
    return torch.from_numpy(bits).view(target)


def to_numpy(x):
    """A NumPy array of a kernel result (torch bfloat16 and float8 widened to
    float32, which holds their values exactly; tuples element-wise)."""
    if isinstance(x, tuple):
        return tuple(to_numpy(i) for i in x)
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu()
        import torch

        if x.dtype == torch.bfloat16 or "float8" in str(x.dtype):
            x = x.float()
        return x.numpy()
    return np.asarray(x)
