"""Compilation targets: `cpu`, `cuda[:sm_XX]`, `rocm:gfxNNN`, `auto`.

Bottom layer: a target names a kind and a chip of the chip table
(`chips.py`); the facts about the chip are read there."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from . import chips


# NVIDIA chips the CUDA backend compiles for: Turing (sm_75: f16 mma.sync,
# no cp.async), Ampere (sm_80, sm_86, sm_87), Ada (sm_89) and Hopper (sm_90
# with mma.sync, sm_90a with wgmma and TMA).
# Others are refused here: LLVM's NVPTX backend aborts the process on a chip
# it does not know (sm_999) and on Blackwell (sm_100, sm_103, sm_120) with
# the PTX version this pipeline asks for (chips.py: 8.1, they need 8.6 to
# 8.8).
CUDA_ARCHS = chips.names("nvidia")

# AMD chips the ROCm backend compiles for: CDNA 2/3/4 (MI200, MI300, MI350).
ROCM_ARCHS = chips.names("amd")


@dataclass(frozen=True)
class Target:
    kind: str  # "cpu" | "cuda" | "rocm"
    arch: Optional[str] = None  # "sm_90a", "gfx942", ...

    def __str__(self) -> str:
        return self.kind if self.arch is None else f"{self.kind}:{self.arch}"

    @property
    def chip(self) -> Optional[chips.Chip]:
        """The row of the chip table for this target (None for the CPU)."""
        return chips.find(self.arch)

    @property
    def sm(self) -> Optional[int]:
        """The compute capability of a CUDA target as an int (90 for sm_90a)."""
        if self.kind != "cuda" or self.arch is None:
            return None
        return chips.chip(self.arch).arch

    @property
    def warp_size(self) -> int:
        """Threads of a warp (wavefront on AMD; 1 on the CPU)."""
        c = self.chip
        return c.warp_size if c is not None else chips.CPU_WARP_SIZE


def _cuda_arch_of_device() -> Optional[str]:
    """The architecture of the current GPU; without one, the
    TILELANG_MLIR_CUDA_ARCH environment variable (compile-only machines)."""
    import os

    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return chips.nvidia_chip_for_capability(major, minor)
    except ImportError:
        pass
    return os.environ.get("TILELANG_MLIR_CUDA_ARCH") or None


def _check_cuda_arch(arch: str, source: str) -> str:
    """`arch` if the CUDA backend compiles for it, else one ValueError that
    lists the chips it does; `source` says where the name came from."""
    if arch in CUDA_ARCHS:
        return arch
    m = re.fullmatch(r"sm_(\d+)a?", arch)
    if m and int(m.group(1)) < 75:
        raise ValueError(f"CUDA target {arch} ({source}) is not supported: sm_75 or newer is "
                         f"needed (supported: {', '.join(CUDA_ARCHS)})")
    what = "an unknown chip" if m else "not a chip name (sm_XX)"
    raise ValueError(f"CUDA target {arch!r} ({source}) is {what}; the CUDA backend compiles "
                     f"for {', '.join(CUDA_ARCHS)}")


def parse_target(target) -> Target:
    if isinstance(target, Target):
        return target
    if target is None or target == "auto":
        arch = _cuda_arch_of_device()
        if not arch:
            return Target("cpu")
        return Target("cuda", _check_cuda_arch(arch, "the GPU of this machine, or "
                                                      "TILELANG_MLIR_CUDA_ARCH"))
    if not isinstance(target, str):
        raise ValueError(f"target must be a string such as 'cpu' or 'cuda:sm_90a', got {target!r}")
    text = target.strip().lower()
    if text in ("cpu", "llvm", "c"):
        return Target("cpu")
    kind, sep, arch = text.partition(":")
    if kind == "cuda":
        if sep and not arch:
            raise ValueError(f"target {target!r} names no chip; expected 'cuda' or "
                             f"'cuda:<chip>' with a chip of {', '.join(CUDA_ARCHS)}")
        if sep:
            return Target("cuda", _check_cuda_arch(arch, f"target {target!r}"))
        arch = _cuda_arch_of_device()
        if arch is None:
            raise ValueError("target 'cuda' needs an architecture when no GPU is present: "
                             "use e.g. 'cuda:sm_90a' or 'cuda:sm_80'")
        return Target("cuda", _check_cuda_arch(arch, "the GPU of this machine, or "
                                                     "TILELANG_MLIR_CUDA_ARCH"))
    m = re.fullmatch(r"(?:rocm|hip)(?::(gfx[0-9a-f]+))?", text)
    if m:
        arch = m.group(1) or chips.DEFAULT_ROCM_CHIP
        if arch not in ROCM_ARCHS:
            # Others would reach LLVM with wave64 and MFMA assumptions they do
            # not meet (RDNA is wave32 without MFMA), and an unknown chip
            # aborts the process inside LLVM's instruction selection.
            raise ValueError(f"ROCm target {arch} is not supported: the AMD backend targets "
                             f"the CDNA chips {', '.join(ROCM_ARCHS)} (wave64, MFMA)")
        return Target("rocm", arch)
    if kind in ("rocm", "hip"):
        raise ValueError(f"target {target!r} is malformed; expected 'rocm' or 'rocm:<chip>' "
                         f"with a chip of {', '.join(ROCM_ARCHS)}")
    raise ValueError(f"unknown target {target!r}; expected 'auto', 'cpu', 'cuda', "
                     f"'cuda:<chip>' ({', '.join(CUDA_ARCHS)}) or 'rocm:<chip>' "
                     f"({', '.join(ROCM_ARCHS)})")
