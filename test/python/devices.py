"""Moving test data to and from the target of a kernel."""

import numpy as np
import torch


def put(x, target):
    """The array `x` (NumPy or torch) on `target`: unchanged for the CPU, a
    CUDA torch tensor for "cuda" (a CPU tensor where no GPU exists: the
    launch then reports the missing device)."""
    if target == "cpu":
        return x
    t = torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
    return t.cuda() if torch.cuda.is_available() else t


def get(x):
    """A NumPy array of a kernel result (bfloat16 widened to float32)."""
    if isinstance(x, tuple):
        return tuple(get(i) for i in x)
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.numpy()
    return x
