"""`tilelang.contrib.nvcc`: the compute capability queries TileLang's
programs make (the rest of TVM's nvcc wrapper is out of scope: this package
compiles through its own pipeline)."""

from __future__ import annotations

from typing import Tuple

from ..base.target import Target


def get_target_compute_version(target=None) -> str:
    """The compute capability ("9.0") of `target` (a target string such as
    "cuda:sm_90a" or TileLang's "cuda -arch=sm_90a", a tvm Target as
    `determine_target(return_object=True)` gives it, or this package's
    Target), else of this machine's GPU."""
    if target is not None:
        from .target import to_ours

        t = target if isinstance(target, Target) else to_ours(target)
        if t.kind != "cuda":
            raise ValueError(f"get_target_compute_version: {t} is not a CUDA target")
        digits = t.arch[len("sm_"):].rstrip("a")
        return f"{digits[:-1]}.{digits[-1]}"
    try:
        import torch
    except ImportError:
        raise RuntimeError("get_target_compute_version needs a target or torch with CUDA") \
            from None
    if not torch.cuda.is_available():
        raise RuntimeError("get_target_compute_version: no target given and no CUDA GPU "
                           "is visible")
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def parse_compute_version(compute_version) -> Tuple[int, int]:
    """ "9.0" -> (9, 0)."""
    parts = str(compute_version).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ValueError(f"compute version {compute_version!r} is not of the form "
                         "'major.minor'") from None


def have_tensorcore(compute_version=None, target=None) -> bool:
    """Whether the chip has tensor cores (sm_70 and newer)."""
    if compute_version is None:
        compute_version = get_target_compute_version(target)
    return parse_compute_version(compute_version)[0] >= 7


__all__ = ["get_target_compute_version", "parse_compute_version", "have_tensorcore"]
