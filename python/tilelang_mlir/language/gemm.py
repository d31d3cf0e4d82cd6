"""Tile matrix multiplication."""

from __future__ import annotations

import enum

from ._builtin import builtin


class GemmWarpPolicy(enum.Enum):
    """How the warps of a block split a gemm's output tile."""

    Square = "square"
    FullRow = "full_row"
    FullCol = "full_col"
    # wgmma only: every warpgroup computes the whole tile (M % 64 == 0, N <= 256).
    Replicate = "replicate"


@builtin
def gemm(b, A, B, C, transpose_A: bool = False, transpose_B: bool = False,
         policy=GemmWarpPolicy.Square, clear_accum: bool = False, k_pack: int = 1,
         wg_wait: int = 0):
    """C += op(A) @ op(B), accumulated in C's dtype."""
    b.gemm(A, B, C, transpose_A=transpose_A, transpose_B=transpose_B, policy=policy,
           clear_accum=clear_accum, k_pack=k_pack)


@builtin
def gemm_sp(b, A_sparse, E, B, C, transpose_A: bool = False, transpose_B: bool = False,
            policy=GemmWarpPolicy.Square, clear_accum: bool = False):
    """2:4 structured-sparse C += A @ B: A_sparse (M x K/2) holds the kept
    values, E (M x K/b of b-bit integers, int16: M x K/16) the 2-bit
    positions of each kept pair in its group of four, row-major
    (`tilelang_mlir.sparse.compress` makes both from a dense 2:4 A). On
    CUDA, A_sparse, E and B are shared buffers and C a float32 fragment;
    it runs on wgmma.mma_async.sp (sm_90a) or mma.sp (sm_80), K a multiple
    of 32."""
    if transpose_A:
        from ..frontend.errors import TileLangError

        raise TileLangError("T.gemm_sp does not support transpose_A", b.location)
    b.gemm_sp(A_sparse, E, B, C, transpose_B=transpose_B, policy=policy,
              clear_accum=clear_accum)
