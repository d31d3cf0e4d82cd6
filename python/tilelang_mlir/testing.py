"""Helpers for examples and tests: moving arrays to a kernel's device and
back (`to_device`, `to_numpy`: runtime/arrays.py), a replayable random
seed, and comparing results."""

from __future__ import annotations

import os

import numpy as np

from .runtime.arrays import to_device, to_numpy

__all__ = ["random_seed", "to_device", "to_numpy", "relative_error", "assert_close"]


def random_seed() -> int:
    """A fresh 32-bit seed for a test's random inputs, printed so that a
    failure shows it; TILELANG_MLIR_TEST_SEED=N replays seed N."""
    fixed = os.environ.get("TILELANG_MLIR_TEST_SEED")
    seed = int(fixed) if fixed else int.from_bytes(os.urandom(4), "little")
    print(f"random seed: {seed}")
    return seed


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
