"""A T.Parallel that reads an accumulator through a shifted row index:
`acc[i + s * 16, j]` under `if i < 16` in a loop over s (DeepSeek V3.2's
sparse MLA backward stores dKV in two halves this way), `acc[i + 8, j]`,
`acc[i - 8, j]` under `if i >= 8`, and `acc[i + 1, j]`. Where the thread
running an iteration holds the element it reads (rows 8 and 16 apart in one
thread of an mma accumulator), the loop reads registers (a select on s
picks one); elsewhere the accumulator goes through shared memory. Either
way the values are the accumulator's.

CPU and GPU runs (marked `gpu`) against NumPy; compile-only for sm_80,
sm_90a and gfx942."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put


def _shifted(M=32, N=64, K=32, threads=128, halves=2):
    """C = A @ B^T (one block, FullCol: every warp holds all M rows), then
    D0 = C in `halves` row blocks through acc[i + s * (M // halves), j],
    D1[i] = C[i + 8], D2[i] = C[i - 8] (rows 8..M), D3[i] = C[i + 1]."""
    h = M // halves

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"),
             D0: T.Tensor((M, N), "float32"), D1: T.Tensor((M - 8, N), "float32"),
             D2: T.Tensor((M, N), "float32"), D3: T.Tensor((M - 1, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((N, K), "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            O_s = T.alloc_shared((h, N), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, C_l, transpose_B=True, clear_accum=True,
                   policy=T.GemmWarpPolicy.FullCol)
            for s in range(halves):
                for i, j in T.Parallel(M, N):
                    if i < h:
                        O_s[i, j] = C_l[i + s * h, j]
                T.copy(O_s, D0[s * h, 0])
            for i, j in T.Parallel(M, N):
                if i < M - 8:
                    D1[i, j] = C_l[i + 8, j]
            for i, j in T.Parallel(M, N):
                if i >= 8:
                    D2[i, j] = C_l[i - 8, j]
            for i, j in T.Parallel(M - 1, N):
                D3[i, j] = C_l[i + 1, j]

    return main


def test_shifted_fragment_reads(target, rng):
    M, N, K = 32, 64, 32
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    kernel = tl.compile(_shifted(), out_idx=[2, 3, 4, 5], target=target)
    d0, d1, d2, d3 = (get(x) for x in kernel(put(a, target), put(b, target)))
    c = a.astype(np.float32) @ b.astype(np.float32).T
    tol = dict(rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(d0, c, **tol)
    np.testing.assert_allclose(d1, c[8:], **tol)
    np.testing.assert_allclose(d2[8:], c[:-8], **tol)
    np.testing.assert_allclose(d3, c[1:], **tol)


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_shifted_fragment_reads_compile(chip):
    kernel = tl.compile(_shifted(), out_idx=[2, 3, 4, 5], target=chip)
    assert kernel.get_kernel_source()


def test_shifted_rows_stay_in_registers():
    """The halves and the shifts by 8 read registers: of the accumulator's
    shared-memory copies only the one for `acc[i + 1, j]` is left (the
    tile IR after layout inference has A_s, B_s, O_s and that one)."""
    kernel = tl.compile(_shifted(), out_idx=[2, 3, 4, 5], target="cuda:sm_90a")
    ir = kernel.mlir("layout")
    shared = [line for line in ir.splitlines() if "tile.alloc_shared" in line]
    assert sum("32x64xf32" in line for line in shared) == 1, shared
