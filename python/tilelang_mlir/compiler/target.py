"""Compilation targets: `cpu`, `cuda[:sm_XX]`, `rocm:gfxNNN`, `auto`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional


# AMD chips the ROCm backend compiles for: CDNA 2/3/4 (MI200, MI300, MI350).
ROCM_ARCHS = ("gfx90a", "gfx942", "gfx950")


@dataclass(frozen=True)
class Target:
    kind: str  # "cpu" | "cuda" | "rocm"
    arch: Optional[str] = None  # "sm_90a", "gfx942", ...

    def __str__(self) -> str:
        return self.kind if self.arch is None else f"{self.kind}:{self.arch}"

    @property
    def sm(self) -> Optional[int]:
        """The compute capability of a CUDA target as an int (90 for sm_90a)."""
        if self.kind != "cuda" or self.arch is None:
            return None
        return int(re.match(r"sm_(\d+)", self.arch).group(1))


def _cuda_arch_of_device() -> Optional[str]:
    """The architecture of the current GPU; without one, the
    TILELANG_MLIR_CUDA_ARCH environment variable (compile-only machines)."""
    import os

    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            arch = f"sm_{major}{minor}"
            return arch + "a" if major == 9 else arch
    except ImportError:
        pass
    return os.environ.get("TILELANG_MLIR_CUDA_ARCH") or None


def parse_target(target) -> Target:
    if isinstance(target, Target):
        return target
    if target is None or target == "auto":
        arch = _cuda_arch_of_device()
        return Target("cuda", arch) if arch else Target("cpu")
    if not isinstance(target, str):
        raise ValueError(f"target must be a string such as 'cpu' or 'cuda:sm_90a', got {target!r}")
    text = target.strip().lower()
    if text in ("cpu", "llvm", "c"):
        return Target("cpu")
    m = re.fullmatch(r"cuda(?::(sm_\d+a?))?", text)
    if m:
        arch = m.group(1) or _cuda_arch_of_device()
        if arch is None:
            raise ValueError("target 'cuda' needs an architecture when no GPU is present: "
                             "use e.g. 'cuda:sm_90a' or 'cuda:sm_80'")
        if int(re.match(r"sm_(\d+)", arch).group(1)) < 80:
            raise ValueError(f"CUDA target {arch} is not supported: sm_80 or newer is needed")
        return Target("cuda", arch)
    m = re.fullmatch(r"(?:rocm|hip)(?::(gfx[0-9a-f]+))?", text)
    if m:
        arch = m.group(1) or "gfx942"
        if arch not in ROCM_ARCHS:
            # Others would reach LLVM with wave64 and MFMA assumptions they do
            # not meet (RDNA is wave32 without MFMA), and an unknown chip
            # aborts the process inside LLVM's instruction selection.
            raise ValueError(f"ROCm target {arch} is not supported: the AMD backend targets "
                             f"the CDNA chips {', '.join(ROCM_ARCHS)} (wave64, MFMA)")
        return Target("rocm", arch)
    raise ValueError(f"unknown target {target!r}; expected 'auto', 'cpu', 'cuda', "
                     "'cuda:sm_80', 'cuda:sm_90a' or 'rocm:gfx942'")
