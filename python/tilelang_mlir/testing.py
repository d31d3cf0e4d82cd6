"""Helpers for examples and tests: moving arrays to a kernel's device and
back, and comparing results."""

from __future__ import annotations

import os

import numpy as np


def random_seed() -> int:
    """A fresh 32-bit seed for a test's random inputs, printed so that a
    failure shows it; TILELANG_MLIR_TEST_SEED=N replays seed N."""
    fixed = os.environ.get("TILELANG_MLIR_TEST_SEED")
    seed = int(fixed) if fixed else int.from_bytes(os.urandom(4), "little")
    print(f"random seed: {seed}")
    return seed


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


def relative_error(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64."""
    out = np.asarray(to_numpy(out), dtype=np.float64)
    ref = np.asarray(to_numpy(ref), dtype=np.float64)
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-300))


def assert_close(out, ref, rtol: float = 1e-5, atol: float = 1e-6, what: str = "result"):
    """np.testing.assert_allclose on float64 copies, naming `what`."""
    np.testing.assert_allclose(np.asarray(to_numpy(out), dtype=np.float64),
                               np.asarray(to_numpy(ref), dtype=np.float64),
                               rtol=rtol, atol=atol, err_msg=f"{what} differs from the reference")
