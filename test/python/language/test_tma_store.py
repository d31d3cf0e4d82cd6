"""TileLang's TMA store: `T.tma_copy(C_shared, C[...])` (shared to global,
no barrier), `T.tma_store_arrive()` and `T.tma_store_wait(count, read)`.
Here the copy writes the tile with the block's threads and has read the
shared buffer when the next operation runs; `read=False` synchronizes the
block so that the tile's global writes are visible to all of its threads.
A GEMM whose epilogue goes through it (TileLang's tma_store test), run on
the CPU and the GPU (marked `gpu`) against NumPy, compiled for sm_80 and
sm_90a; a barrier given to a store is an error."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put


def _gemm_tma_store(M, N, K, bm=64, bn=64, bk=32, read=True, stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float16"), D: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_s = T.alloc_shared((bm, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.tma_copy(C_s, C[by * bm, bx * bn])
            T.tma_store_arrive()
            T.tma_store_wait(read=read)
            # C_s may be written again once the store has read it; with
            # read=False the tile's global writes are visible: D reads C
            # back transposed within the tile (other threads' elements).
            T.clear(C_s)
            if not read:
                for i, j in T.Parallel(bm, bn):
                    D[by * bm + i, bx * bn + j] = C[by * bm + j % bm, bx * bn + i % bn]

    return main


@pytest.mark.parametrize("read", [True, False])
def test_gemm_with_tma_store_epilogue(read, target, rng):
    M, N, K = 128, 128, 64
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    kernel = tl.compile(_gemm_tma_store(M, N, K, read=read), out_idx=[2, 3], target=target)
    c, d = (get(x) for x in kernel(put(a, target), put(b, target)))
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), rtol=1e-2, atol=1e-2)
    if not read:
        # D is the kernel's own C read back (transposed within each tile):
        # exactly, not to the reference's rounding.
        want = np.empty_like(c)
        for r0 in range(0, M, 64):
            for c0 in range(0, N, 64):
                want[r0:r0 + 64, c0:c0 + 64] = c[r0:r0 + 64, c0:c0 + 64].T
        np.testing.assert_array_equal(d, want)


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_gemm_with_tma_store_epilogue_compiles(chip):
    kernel = tl.compile(_gemm_tma_store(256, 256, 128, read=False), out_idx=[2, 3], target=chip)
    assert kernel.get_kernel_source()


def test_a_store_takes_no_barrier():
    @T.prim_func
    def main(C: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            C_s = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(128)
            T.clear(C_s)
            T.tma_copy(C_s, C[0, 0], barrier=bar)

    with pytest.raises(Exception, match=r"takes no barrier=: it completes through "
                                        r"T.tma_store_wait"):
        tl.compile(main, target="cuda:sm_90a")
