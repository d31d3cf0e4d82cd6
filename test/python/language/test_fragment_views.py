"""Loops and fills over part of a fragment (a view `C_local[:, :32]`, or a
T.Parallel over fewer rows or columns than the fragment has), beside a gemm
that fixes the fragment's layout. TileLang's alias test clears such a view;
the layout inference gave the whole fragment the part's layout (elements
past the part on threads that do not exist: "maps element (13, 96) to
thread 128"). The part's loop now goes through a conversion buffer of the
whole fragment. And a branch on the thread index (a role) that reads a
block fragment every thread holds, as TileLang's reducer tests do after a
reduction.

CPU and GPU runs (marked `gpu`) against NumPy; compile-only for sm_80,
sm_90a and gfx942."""

import re

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


# ---------------------------------------------------------------------------
# A branch on the thread index reading a block fragment
# ---------------------------------------------------------------------------


def _sum_then_one_thread_stores(n=8, threads=128, store_in_branch=False, spread=False):
    """TileLang's reducer tests: a reduction into a one-element fragment
    that every thread holds, then `if tx == 0: B[0] = result[0]`. (The
    branch is a role of thread 0 here; a block fragment's replicated
    elements are its to read.)"""
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((n,), "float32")
            T.copy(A, src)
            result = T.alloc_fragment((1,), "float32")
            T.reduce_sum(src, result, dim=0)
            if T.get_thread_binding() == 0:
                if spread:
                    B[0] = src[3]
                elif store_in_branch:
                    result[0] = 1.0
                else:
                    B[0] = result[0]

    return main


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_branch_reads_replicated_block_fragment_compiles(chip):
    ptx = tl.compile(_sum_then_one_thread_stores(), out_idx=[1], target=chip).get_kernel_source()
    assert re.search(r"st\.global\.(b|f)32", ptx), ptx


@pytest.mark.parametrize("kind, message", [
    ("store_in_branch", "a fragment belongs to one role"),
    ("spread", "its elements are spread over the threads"),
])
def test_branch_on_block_fragment_refusals(kind, message):
    """A store would make one thread's replica differ from the others'; an
    element of a fragment spread over the threads is not thread 0's to read."""
    with pytest.raises(tl.TileLangError, match=message):
        tl.compile(_sum_then_one_thread_stores(**{kind: True}), out_idx=[1],
                   target="cuda:sm_90a")


@pytest.mark.gpu
def test_branch_reads_replicated_block_fragment_on_gpu(rng):
    import torch
    a = torch.from_numpy(rng.standard_normal(8).astype(np.float32)).cuda()
    b = tl.compile(_sum_then_one_thread_stores(), out_idx=[1], target="cuda")(a)
    torch.testing.assert_close(b, a.sum().reshape(1), rtol=1e-6, atol=1e-6)


def _gather_rows(M=256, N=64, S=6, bm=32):
    """B[block by, slot i] = A[rows of block Mask[by, i]] when Mask >= 0: the
    mask is copied into a fragment and read element by element in a
    pipelined loop (TileLang's let-bound fragment reads): every thread holds
    the whole fragment."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, S * N), "float32"),
             Mask: T.Tensor((M // bm, S), "int32")):
        with T.Kernel(M // bm, threads=128) as by:
            A_s = T.alloc_shared((bm, N), "float32")
            mask_f = T.alloc_fragment((S,), "int32")
            T.copy(Mask[by, :], mask_f)
            for i in T.Pipelined(S):
                a = mask_f[i]
                if a >= 0:
                    T.copy(A[a * bm, 0], A_s)
                    T.copy(A_s, B[by * bm:(by + 1) * bm, i * N:(i + 1) * N])

    return main


def test_fragment_read_element_by_element_in_a_serial_loop(target, rng):
    M, N, S, bm = 256, 64, 6, 32
    a = rng.standard_normal((M, N)).astype(np.float32)
    mask = rng.integers(-1, M // bm, size=(M // bm, S)).astype(np.int32)
    b = put(np.zeros((M, S * N), np.float32), target)
    tl.compile(_gather_rows(M, N, S, bm), target=target)(put(a, target), b, put(mask, target))
    ref = np.zeros((M, S * N), np.float32)
    for by in range(M // bm):
        for i in range(S):
            if mask[by, i] >= 0:
                ref[by * bm:(by + 1) * bm, i * N:(i + 1) * N] = \
                    a[mask[by, i] * bm:(mask[by, i] + 1) * bm]
    np.testing.assert_array_equal(get(b), ref)


@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_fragment_read_element_by_element_is_held_by_every_thread(arch):
    """The mask fragment gets a layout that replicates it over all 128
    threads (each holds all 6 elements), so each can read any element."""
    layout = tl.compile(_gather_rows(), target=arch).mlir("layout")
    allocs = [ln for ln in layout.splitlines() if "tile.alloc_fragment" in ln]
    assert len(allocs) == 1, allocs
    assert "threads = 128, replicate = 128" in allocs[0] and "memref<6xi32" in allocs[0], allocs


def _reshaped_scores(M=128, N=64, Q=2, H=32, threads=256):
    """TileLang's DSA indexer (dsa_hisa/pool_mqa_fp8.py): the gemm's
    accumulator s (M x Q*H) seen as (M, Q, H) through T.reshape, a
    T.Parallel over the view (relu, times a weight per (q, h)) and a sum
    over H of the view. The view's loop takes the accumulator's layout
    pulled back through the reshape: no staging through shared memory."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((Q * H, N), "float16"),
             W: T.Tensor((Q, H), "float32"), C: T.Tensor((M, Q), "float32")):
        with T.Kernel(1, threads=threads):
            a = T.alloc_shared((M, N), "float16")
            b = T.alloc_shared((Q * H, N), "float16")
            s = T.alloc_fragment((M, Q * H), "float32")
            sr = T.reshape(s, (M, Q, H))
            w = T.alloc_fragment((Q, H), "float32")
            out = T.alloc_fragment((M, Q), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.copy(W, w)
            T.gemm(a, b, s, transpose_B=True, clear_accum=True,
                   policy=T.GemmWarpPolicy.FullCol)
            for m, q, h in T.Parallel(M, Q, H):
                sr[m, q, h] = T.max(sr[m, q, h], 0) * w[q, h]
            T.reduce_sum(sr, out, dim=-1, clear=True)
            T.copy(out, C)

    return main


def _reshaped_reference(a, b, w):
    s = np.maximum(a.astype(np.float32) @ b.astype(np.float32).T, 0)
    return (s.reshape(a.shape[0], *w.shape) * w).sum(-1)


def test_reshaped_fragment(target, rng):
    M, N, Q, H = 128, 64, 2, 32
    a = rng.standard_normal((M, N)).astype(np.float16)
    b = rng.standard_normal((Q * H, N)).astype(np.float16)
    w = rng.standard_normal((Q, H)).astype(np.float32)
    c = put(np.zeros((M, Q), np.float32), target)
    tl.compile(_reshaped_scores(M, N, Q, H), target=target)(
        put(a, target), put(b, target), put(w, target), c)
    np.testing.assert_allclose(get(c), _reshaped_reference(a, b, w), rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_reshaped_fragment_needs_no_staging(arch):
    k = tl.compile(_reshaped_scores(), target=arch)
    # a (128 x 64) and b (64 x 64) in float16 and at most the reduction's
    # scratch: the loops over the view read the accumulator's registers
    # where they are, not through a staging copy of it (128 x 64 float32).
    assert k.shared_bytes < 128 * 64 * 2 + 64 * 64 * 2 + 128 * 64 * 4, k.shared_bytes
