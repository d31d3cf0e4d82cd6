"""TileLang's bounds-safe global element accesses (tile-legalize-safe-access):
an out-of-range element read of a global tensor gives zero or the value of
T.annotate_safe_value, an out-of-range element write is dropped, on every
target. Sparse attention relies on it: its index tensors hold the sentinel
"index = length" for unused slots, masked to -inf, and a read of garbage
there made the output NaN on the GPU (docs/compat.md)."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import DeviceAssertionError, TileLangError
from tilelang_mlir.testing import to_device, to_numpy


def gather(N, BI, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Idx: T.Tensor((BI,), "int32"), Y: T.Tensor((BI,), dtype)):
        with T.Kernel(1, threads=32):
            s = T.alloc_fragment((BI,), dtype)
            for i in T.Parallel(BI):
                s[i] = X[Idx[i]]
            T.copy(s, Y)

    return main


def test_gather_out_of_range_reads_zero(target, rng):
    N, BI = 48, 64
    k = tl.compile(gather(N, BI), out_idx=[2], target=target)
    x = rng.standard_normal(N).astype(np.float32)
    idx = rng.integers(-2 * N, 2 * N, BI).astype(np.int32)
    idx[:4] = [0, N - 1, N, -1]  # the edges
    out = to_numpy(k(to_device(x, target), to_device(idx, target)))
    inside = (idx >= 0) & (idx < N)
    ref = np.where(inside, x[np.clip(idx, 0, N - 1)], 0.0)
    np.testing.assert_array_equal(out, ref)


def scatter(N, BI):
    @T.prim_func
    def main(Idx: T.Tensor((BI,), "int32"), V: T.Tensor((BI,), "float32"),
             Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(BI):
                Y[Idx[i]] = V[i]

    return main


def test_scatter_out_of_range_writes_are_dropped(target, rng):
    N, BI = 40, 32
    k = tl.compile(scatter(N, BI), target=target)
    idx = rng.permutation(np.arange(-BI, N + BI))[:BI].astype(np.int32)
    v = rng.standard_normal(BI).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    ref = y.copy()
    for i in range(BI):
        if 0 <= idx[i] < N:
            ref[idx[i]] = v[i]
    y_dev = to_device(y.copy(), target)
    k(to_device(idx, target), to_device(v, target), y_dev)
    np.testing.assert_array_equal(to_numpy(y_dev), ref)


def shifted(M, N, bm, bn, pad, dtype):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            s = T.alloc_shared((bm, bn), dtype)
            T.annotate_safe_value({A: pad})
            for i, j in T.Parallel(bm, bn):
                s[i, j] = A[by * bm + i - 10, bx * bn + j]
            for i, j in T.Parallel(bm, bn):
                B[by * bm + i, bx * bn + j] = s[i, j]

    return main


@pytest.mark.parametrize("dtype,pad", [("float16", 10), ("float32", -2.5), ("int32", -7)])
def test_annotate_safe_value_element_reads(target, rng, dtype, pad):
    M, N = 64, 64
    k = tl.compile(shifted(M, N, 32, 32, pad, dtype), out_idx=[1], target=target)
    a = (rng.standard_normal((M, N)) * 100).astype(dtype)
    out = to_numpy(k(to_device(a, target)))
    ref = np.full((M, N), pad, dtype=dtype)
    ref[10:] = a[:-10]
    np.testing.assert_array_equal(out, ref)


def padded_copy(M, N, PM, PN, bm, bn, pad, src, dst):
    @T.prim_func
    def main(A: T.Tensor((M, N), src), B: T.Tensor((PM, PN), dst)):
        with T.Kernel(T.ceildiv(PN, bn), T.ceildiv(PM, bm), threads=128) as (bx, by):
            if pad is not None:
                T.annotate_safe_value({A: pad})
            T.copy(A[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn],
                   B[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn])

    return main


@pytest.mark.parametrize("pad,src,dst", [(None, "float32", "float32"), (-99, "float32", "float32"),
                                         (-99, "float32", "float16"), (3, "int32", "int32")])
def test_annotate_safe_value_copies(target, rng, pad, src, dst):
    M, N, bm, bn = 70, 75, 32, 32
    PM, PN = 96, 96
    k = tl.compile(padded_copy(M, N, PM, PN, bm, bn, pad, src, dst), out_idx=[1], target=target)
    a = (rng.standard_normal((M, N)) * 50).astype(src)
    out = to_numpy(k(to_device(a, target)))
    ref = np.full((PM, PN), 0 if pad is None else pad, dtype=dst)
    ref[:M, :N] = a.astype(dst)
    np.testing.assert_array_equal(out, ref)


def element_copy(M, N, PM, PN, pad):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((PM, PN), "float32")):
        with T.Kernel(1, threads=128):
            T.annotate_safe_value({A: pad})
            for i, j in T.Parallel(PM, PN):
                T.copy(A[i, j], B[i, j])

    return main


def test_element_copy_reads_the_safe_value(target, rng):
    k = tl.compile(element_copy(30, 35, 40, 40, -99), out_idx=[1], target=target)
    a = rng.standard_normal((30, 35)).astype(np.float32)
    ref = np.full((40, 40), -99, np.float32)
    ref[:30, :35] = a
    np.testing.assert_array_equal(to_numpy(k(to_device(a, target))), ref)


def sparse_attention(S, SKV, H, D, topk, block_I):
    """The construct of DeepSeek V3.2's sparse MLA forward: the scores of
    unused slots (index == SKV, one past the keys) are masked to -inf
    before the gemm adds Q.K of whatever those rows read."""
    scale = (1.0 / D) ** 0.5 * 1.44269504
    NI = topk // block_I

    @T.prim_func
    def main(Q: T.Tensor((S, H, D), "float16"), KV: T.Tensor((SKV, D), "float16"),
             Indices: T.Tensor((S, topk), "int32"), O: T.Tensor((S, H, D), "float16")):
        with T.Kernel(S, threads=128) as bx:
            q = T.alloc_shared((H, D), "float16")
            kv = T.alloc_shared((block_I, D), "float16")
            p = T.alloc_shared((H, block_I), "float16")
            mask = T.alloc_fragment((block_I,), "bool")
            acc_s = T.alloc_fragment((H, block_I), "float32")
            acc_o = T.alloc_fragment((H, D), "float32")
            m = T.alloc_fragment((H,), "float32")
            m_prev = T.alloc_fragment((H,), "float32")
            l = T.alloc_fragment((H,), "float32")
            l_i = T.alloc_fragment((H,), "float32")
            T.fill(acc_o, 0)
            T.fill(l, 0)
            T.fill(m, -(2 ** 30))
            T.copy(Q[bx, 0:H, 0:D], q)
            for t in T.serial(NI):
                for i in T.Parallel(block_I):
                    mask[i] = Indices[bx, t * block_I + i] <= bx
                for i, d in T.Parallel(block_I, D):
                    kv[i, d] = KV[Indices[bx, t * block_I + i], d]
                for h, i in T.Parallel(H, block_I):
                    acc_s[h, i] = T.if_then_else(mask[i], 0, -T.infinity("float32"))
                T.gemm(q, kv, acc_s, transpose_B=True)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for h in T.Parallel(H):
                    m[h] = T.max(m[h], m_prev[h])
                for h, i in T.Parallel(H, block_I):
                    acc_s[h, i] = T.exp2(acc_s[h, i] * scale - m[h] * scale)
                T.reduce_sum(acc_s, l_i, dim=1)
                for h in T.Parallel(H):
                    l[h] = l[h] * T.exp2((m_prev[h] - m[h]) * scale) + l_i[h]
                for h, d in T.Parallel(H, D):
                    acc_o[h, d] = acc_o[h, d] * T.exp2((m_prev[h] - m[h]) * scale)
                T.copy(acc_s, p)
                T.gemm(p, kv, acc_o)
            for h, d in T.Parallel(H, D):
                acc_o[h, d] /= l[h]
            T.copy(acc_o, O[bx, 0:H, 0:D])

    return main


def sparse_attention_reference(q, kv, indices):
    S, H, D = q.shape
    SKV = kv.shape[0]
    out = torch.zeros(S, H, D)
    for s in range(S):
        idx = indices[s].long()
        valid = idx[(idx <= s) & (idx < SKV)]
        k = kv[valid].float()
        scores = (q[s].float() @ k.T) * (1.0 / D) ** 0.5
        out[s] = torch.softmax(scores, dim=-1) @ k
    return out


@pytest.mark.parametrize("pass_configs", [
    {}, pytest.param({"tl.disable_warp_specialized": True, "tl.disable_tma_store": True},
                     marks=pytest.mark.gpu)])
def test_sparse_attention_sentinel_indices(target, pass_configs):
    """The NaN class: sentinel indices one past the keys, on any target."""
    if target == "cpu" and pass_configs:
        pytest.skip("the pass configs are GPU knobs")
    torch.manual_seed(0)
    S, SKV, H, D, topk, block_I = 16, 16, 16, 64, 32, 16
    q = torch.randn(S, H, D).half()
    kv = torch.randn(SKV, D).half()
    indices = torch.full((S, topk), SKV, dtype=torch.int32)
    for s in range(S):
        perm = torch.randperm(max(1, s))[:topk]
        indices[s, :len(perm)] = perm.int()
    k = tl.compile(sparse_attention(S, SKV, H, D, topk, block_I), out_idx=[3], target=target,
                   pass_configs=pass_configs)
    out = to_numpy(k(*(to_device(x, target) for x in (q, kv, indices))))
    assert np.isfinite(out).all(), "NaN or inf in the sparse attention output"
    ref = sparse_attention_reference(q, kv, indices).numpy()
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def test_disabling_the_checks_leaves_reads_unchecked():
    """With tl.disable_safe_memory_legalize the CPU's own bounds assertion
    (the reference backend's) catches the out-of-range read."""
    k = tl.compile(gather(16, 8), out_idx=[2], target="cpu",
                   pass_configs={"tl.disable_safe_memory_legalize": True})
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(DeviceAssertionError, match="index out of bounds"):
        k(x, np.array([0, 1, 2, 3, 4, 5, 6, 16], np.int32))


def test_in_range_reads_are_not_checked():
    """A load the compiler proves in range compiles to a plain load."""
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i, j in T.Parallel(32, 32):
                B[bx * 32 + i, j] = A[bx * 32 + i, j] * 2

    k = tl.compile(main, target="cpu")
    assert "scf.if" not in k.mlir("tile-opt")


def test_annotate_safe_value_errors():
    def prog(value, scope="global"):
        @T.prim_func
        def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((8,), "float32")
                T.annotate_safe_value({s if scope == "shared" else A: value})
                T.copy(A, s)
                T.copy(s, B)

        return main

    with pytest.raises(TileLangError, match="is a shared buffer"):
        tl.compile(prog(1.0, "shared"), target="cpu")
    with pytest.raises(TileLangError, match="must be a compile-time number"):
        tl.compile(prog("x"), target="cpu")
