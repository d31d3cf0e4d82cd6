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

    t = torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
    return t.cuda() if torch.cuda.is_available() else t


def to_numpy(x):
    """A NumPy array of a kernel result (torch bfloat16 widened to float32;
    tuples element-wise)."""
    if isinstance(x, tuple):
        return tuple(to_numpy(i) for i in x)
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu()
        import torch

        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.numpy()
    return np.asarray(x)
