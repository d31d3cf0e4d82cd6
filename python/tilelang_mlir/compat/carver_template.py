"""`tilelang.carver.template`: `MatmulTemplate`, TileLang's device-aware
recommender of GEMM tile configurations (its roller searches TVM schedules;
this one is ours: it enumerates block tiles, warp layouts, K steps and
pipeline depths that fit the device's shared memory, and ranks them by how
evenly the tiles fill the multiprocessors and by their arithmetic
intensity). The hints have TileLang's fields (`block`, `warp`, `rstep`,
`pipeline_stage`, `rasterization_plan`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional

from ..base import dtypes as dt
from .carver_rasterization import NoRasterization, Rasterization, Rasterization2DRow


@dataclass
class Hint:
    """One recommended configuration."""

    block: List[int]
    warp: List[int]
    rstep: List[int]
    pipeline_stage: int
    rasterization_plan: Rasterization = field(default_factory=NoRasterization)
    score: float = 0.0

    @property
    def threads(self) -> int:
        return (self.block[0] // self.warp[0]) * (self.block[1] // self.warp[1]) * 32


@dataclass
class MatmulTemplate:
    """C[M, N] = A[M, K] @ B (B is [N, K] when trans_B, TileLang's default)."""

    M: Optional[int] = None
    N: Optional[int] = None
    K: Optional[int] = None
    trans_A: bool = False
    trans_B: bool = True
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"
    with_bias: bool = False
    arch: object = None

    def with_arch(self, arch) -> "MatmulTemplate":
        """This template for `arch` (tilelang.carver.arch.CUDA(...))."""
        self.arch = arch
        return self

    def _check(self) -> None:
        for name in ("M", "N", "K"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"MatmulTemplate.{name} must be a positive int, got {v!r}")
        if self.trans_A:
            raise NotImplementedError("not supported by tilelang-mlir: MatmulTemplate with "
                                      "trans_A=True")

    def equivalent_function(self):
        """The computation as a tile program (ours: the library GEMM with a
        moderate configuration), for inspection."""
        from ..kernels import gemm

        self._check()
        make = gemm.matmul_nt if self.trans_B else gemm.matmul
        return make(self.M, self.N, self.K, 64, 64, 32, num_stages=2, threads=128,
                    dtype=str(dt.as_dtype(self.in_dtype)),
                    out_dtype=str(dt.as_dtype(self.accum_dtype)))

    def recommend_hints(self, topk: int = 10) -> List[Hint]:
        """Up to `topk` configurations, best first."""
        self._check()
        if self.arch is None:
            raise ValueError("MatmulTemplate.recommend_hints needs an arch: "
                             "template.with_arch(CUDA('cuda'))")
        if not isinstance(topk, int) or topk < 1:
            raise ValueError(f"topk must be a positive int, got {topk!r}")
        elem = max(1, dt.as_dtype(self.in_dtype).bits // 8)
        smem = int(getattr(self.arch, "smem_cap", 48 * 1024))
        sms = int(getattr(self.arch, "compute_max_core", 1))
        hints = []
        for bm in (64, 128, 256):
            for bn in (64, 128, 256):
                for bk in (32, 64):
                    per_stage = (bm * bk + bk * bn) * elem
                    stages = min(4, smem // per_stage)
                    if stages < 1:
                        continue
                    for warps in (4, 8):
                        wm_count = 2 if warps == 8 and bm >= 128 else (2 if bm >= 128 else 1)
                        wn_count = warps // wm_count
                        if bm // wm_count < 16 or bn // wn_count < 8:
                            continue
                        tiles = math.ceil(self.M / bm) * math.ceil(self.N / bn)
                        waves = math.ceil(tiles / sms)
                        fill = tiles / (waves * sms)
                        # work per tile useful / computed (padding waste at the edges)
                        useful = (self.M * self.N) / (tiles * bm * bn)
                        intensity = bm * bn / (bm + bn)
                        regs = bm * bn // (warps * 32)  # accumulators per thread
                        if regs > 128:
                            continue
                        raster = (Rasterization2DRow(panel_width=8) if tiles > 2 * sms
                                  else NoRasterization())
                        score = fill * useful * intensity * (1.0 + 0.05 * min(stages, 3))
                        hints.append(Hint([bm, bn], [bm // wm_count, bn // wn_count], [bk],
                                          int(max(stages, 1)), raster, score))
        hints.sort(key=lambda h: -h.score)
        return hints[:topk]

    def get_hardware_aware_configs(self, arch=None, topk: int = 10) -> List[Hint]:
        if arch is not None:
            self.with_arch(arch)
        return self.recommend_hints(topk)


__all__ = ["MatmulTemplate", "Hint"]

_OTHER_TEMPLATES = ("ConvTemplate", "ElementwiseTemplate", "GEMVTemplate",
                    "GeneralReductionTemplate", "FlashAttentionTemplate", "BaseTemplate")


def __getattr__(name):
    if name in _OTHER_TEMPLATES:
        from .refusals import refusal

        raise ImportError(refusal(name, "of TileLang's carver templates only MatmulTemplate "
                                        "is provided; the others generate TVM programs"),
                          name=name)
    raise AttributeError(f"module 'tilelang.carver.template' has no attribute {name!r}")
