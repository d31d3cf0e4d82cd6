"""Loops and fills over part of a fragment (a view `C_local[:, :32]`, or a
T.Parallel over fewer rows or columns than the fragment has), beside a gemm
that fixes the fragment's layout. TileLang's alias test clears such a view;
the layout inference gave the whole fragment the part's layout (elements
past the part on threads that do not exist: "maps element (13, 96) to
thread 128"). The part's loop now goes through a conversion buffer of the
whole fragment.

CPU and GPU runs (marked `gpu`) against NumPy; compile-only for sm_80,
sm_90a and gfx942."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put


def _gemm_with_parts(M=128, N=128, K=64, bm=64, bn=128, bk=32, part=32, threads=128):
    """C = A @ B^T, then C[:, :part] = 1 through a view's fill and
    C[:part, part:2 * part] += 2 through a partial T.Parallel; the
    accumulator's view is also cleared before the loop (a no-op)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            T.clear(C_l[:bm, :part])
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.fill(C_l[:bm, :part], 1.0)
            for i, j in T.Parallel(part, part):
                C_l[i, part + j] += 2.0
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def _reference(a, b, bm=64, part=32):
    c = a.astype(np.float32) @ b.astype(np.float32).T
    c[:, :part] = 1.0
    for r0 in range(0, c.shape[0], bm):
        c[r0:r0 + part, part:2 * part] += 2.0
    return c


def test_parts_of_a_fragment(target, rng):
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    kernel = tl.compile(_gemm_with_parts(), out_idx=[2], target=target)
    got = get(kernel(put(a, target), put(b, target)))
    # float16 products are exact in float32; the sums of 64 terms round
    np.testing.assert_allclose(got, _reference(a, b), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_parts_of_a_fragment_compile(chip):
    kernel = tl.compile(_gemm_with_parts(), out_idx=[2], target=chip)
    assert kernel.get_kernel_source()
