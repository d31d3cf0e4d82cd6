"""TileLang meanings that TileLang's example programs rely on, beyond single
T.* names: symbolic slice extents over loaded offsets, per-element atomics
inside T.Parallel, atomic adds of shared tiles into sliced regions."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from tilelang_mlir.base.errors import TileLangError


def _varlen_copy():
    @T.prim_func
    def main(Q: T.Tensor((256, 4), "float32"), cu: T.Tensor((3,), "int32"),
             O: T.Tensor((64, 4), "float32")):
        with T.Kernel(2, threads=128) as bx:
            start = cu[bx]
            S = T.alloc_shared((32, 4), "float32")
            # (start + 32*(bx+1)) - (start + 32*bx) is 32 for any loaded start.
            T.copy(Q[start + bx * 32: start + (bx + 1) * 32, :], S)
            T.copy(S, O[bx * 32, 0])
    return main


def test_slice_extent_over_a_loaded_offset():
    k = tl.compile(_varlen_copy(), target="cpu")
    rng = np.random.default_rng(0)
    q = rng.random((256, 4), dtype=np.float32)
    cu = np.array([5, 17, 0], dtype=np.int32)
    o = np.zeros((64, 4), np.float32)
    k(q, cu, o)
    np.testing.assert_array_equal(o, np.concatenate([q[5:37], q[17 + 32:17 + 64]]))


def test_slice_extent_known_at_run_time():
    """Q[cu[0]:cu[1], :] into a 32-row shared tile: the copy runs over the
    more local side (TileLang's rule for any extents), so 32 rows from
    cu[0] are read whatever cu[1] is; a region of run-time extent on the
    shared side writes only its rows."""
    @T.prim_func
    def main(Q: T.Tensor((256, 4), "float32"), cu: T.Tensor((3,), "int32"),
             O: T.Tensor((64, 4), "float32"), P: T.Tensor((64, 4), "float32")):
        with T.Kernel(2, threads=128) as bx:
            S = T.alloc_shared((32, 4), "float32")
            T.copy(Q[cu[bx]: cu[bx + 1], :], S)
            T.copy(S, O[bx * 32, 0])
            T.clear(S)
            T.copy(Q[cu[bx]: cu[bx + 1], :], S[0:cu[bx + 1] - cu[bx], :])
            T.copy(S, P[bx * 32, 0])

    rng = np.random.default_rng(1)
    q = rng.random((256, 4), dtype=np.float32)
    cu = np.array([5, 17, 40], dtype=np.int32)
    o, p = np.zeros((64, 4), np.float32), np.zeros((64, 4), np.float32)
    tl.compile(main, target="cpu")(q, cu, o, p)
    np.testing.assert_array_equal(o, np.concatenate([q[5:37], q[17:49]]))
    want = np.zeros((64, 4), np.float32)
    want[:12], want[32:55] = q[5:17], q[17:40]
    np.testing.assert_array_equal(p, want)


def _atomic_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), C: T.Tensor((32, 64), "float32")):
        with T.Kernel(2, threads=128) as bx:
            F = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], F)
            for i, j in T.Parallel(32, 64):
                T.atomic_add(C[i, j], F[i, j])
    return main


def _atomic_of_shared_tile():
    @T.prim_func
    def main(A: T.Tensor((64, 16), "float32"), C: T.Tensor((2, 32, 3, 16), "float32")):
        with T.Kernel(2, threads=128) as bx:
            S = T.alloc_shared((32, 16), "float32")
            T.copy(A[bx * 32, 0], S)
            T.atomic_add(C[1, 0:32, bx, :], S, use_tma=True)
            T.atomic_add(C[0, 0:32, 2, :], S)
    return main


def test_atomic_add_per_element_in_parallel():
    k = tl.compile(_atomic_in_parallel(), target="cpu")
    a = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    c = np.zeros((32, 64), np.float32)
    k(a, c)
    np.testing.assert_allclose(c, a[:32] + a[32:], rtol=1e-6)


def test_atomic_add_of_a_shared_tile_into_a_sliced_region():
    k = tl.compile(_atomic_of_shared_tile(), target="cpu")
    a = np.random.default_rng(2).random((64, 16), dtype=np.float32)
    c = np.zeros((2, 32, 3, 16), np.float32)
    k(a, c)
    ref = np.zeros_like(c)
    ref[1, :, 0], ref[1, :, 1], ref[0, :, 2] = a[:32], a[32:], a[:32] + a[32:]
    np.testing.assert_allclose(c, ref, rtol=1e-6)


@pytest.mark.parametrize("make", [_atomic_in_parallel, _atomic_of_shared_tile, _varlen_copy])
def test_compiles_for_sm90a(make):
    k = tl.compile(make(), target="cuda:sm_90a")
    assert ".entry" in k.get_source()


def test_atomic_add_refuses_what_it_cannot_do():
    @T.prim_func
    def prev(C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            C[1] = T.atomic_add(C[0], 1.0, return_prev=True)

    with pytest.raises(TileLangError, match="previous value to each of the 32 threads"):
        tl.compile(prev, target="cpu")

    @T.prim_func
    def order(C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            T.atomic_add(C[0], 1.0, memory_order="strongest")

    with pytest.raises(TileLangError, match="does not support memory_order='strongest'"):
        tl.compile(order, target="cpu")

    @T.prim_func
    def shape(A: T.Tensor((64, 16), "float32"), C: T.Tensor((64, 16), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((32, 16), "float32")
            T.copy(A[0, 0], S)
            T.atomic_add(C[0:16, :], S)

    with pytest.raises(TileLangError, match="has extents"):
        tl.compile(shape, target="cpu")


def _two_kernels():
    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32"),
             C: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2.0
        # The second kernel reads what the first wrote, across blocks.
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                C[bx * 128 + i] = B[255 - (bx * 128 + i)] + 1.0
    return main


def test_program_of_two_kernels(target, rng):
    """TileLang's split + combine programs: two T.Kernels in one program run
    in order (on GPU targets: two launches on one stream)."""
    k = tl.compile(_two_kernels(), out_idx=[1, 2], target=target)
    a = rng.random(256, dtype=np.float32)
    if target == "cuda":
        import torch

        b, c = k(torch.from_numpy(a).cuda())
        b, c = b.cpu().numpy(), c.cpu().numpy()
    else:
        b, c = k(a)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    np.testing.assert_allclose(c, (a * 2)[::-1] + 1, rtol=1e-6)


def test_two_kernels_for_sm90a():
    k = tl.compile(_two_kernels(), out_idx=[1, 2], target="cuda:sm_90a")
    assert len(k.parts) == 2
    assert k.get_source().count(".entry") == 2
    assert {"tile", "layout:0", "nvvm:0", "layout:1", "nvvm:1"} <= set(k.stages)
    with pytest.raises(TileLangError, match="program of 2 T.Kernels"):
        k.save("/nonexistent")


def test_slice_extent_over_a_var_and_a_longer_sum(rng):
    """`X[off + r*16 : off + r*16 + 16]` and a T.alloc_var offset (TileLang's
    grouped cast and varlen forward examples); a store to the var between
    the two bounds would make them different symbols."""
    @T.prim_func
    def main(X: T.Tensor((128, 4), "float32"), sizes: T.Tensor((3,), "int32"),
             O: T.Tensor((32, 4), "float32")):
        with T.Kernel(2, threads=128) as r:
            off = T.alloc_var(dtype=T.int32)
            off = 0
            for i in T.serial(3):
                off += sizes[i]
            S = T.alloc_shared((16, 4), "float32")
            T.copy(X[off + r * 16: off + r * 16 + 16, :], S)
            T.copy(S, O[r * 16, 0])

    k = tl.compile(main, target="cpu")
    x = rng.random((128, 4), dtype=np.float32)
    sizes = np.array([3, 7, 11], dtype=np.int32)
    o = np.zeros((32, 4), np.float32)
    k(x, sizes, o)
    np.testing.assert_array_equal(o, x[21:53])

    @T.prim_func
    def stored_between(X: T.Tensor((128, 4), "float32"), O: T.Tensor((16, 4), "float32")):
        with T.Kernel(1, threads=128):
            off = T.alloc_var(dtype=T.int32)
            off = 3
            lo = off + 0
            off = 5
            S = T.alloc_shared((16, 4), "float32")
            T.copy(X[lo: off + 16, :], S)
            T.copy(S, O[0, 0])

    # a slice of run-time extent (5 + 16 - 3 = 18 rows) into the 16-row
    # shared tile: TileLang copies over the more local side, rows 3 to 18
    o = np.zeros((16, 4), np.float32)
    tl.compile(stored_between, target="cpu")(x, o)
    np.testing.assert_array_equal(o, x[3:19])


def _ws_gemm(no_reg_alloc: bool):
    @T.prim_func
    def main(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"),
             C: T.Tensor((256, 256), "float32")):
        with T.Kernel(2, 2, threads=256) as (bx, by):
            if no_reg_alloc:
                T.no_set_max_nreg()
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])
    return main


def test_no_set_max_nreg():
    """T.no_set_max_nreg() keeps a warp-specialized kernel's register split:
    no setmaxnreg in its PTX (the default kernel reallocates)."""
    default = tl.compile(_ws_gemm(False), target="cuda:sm_90a").get_source()
    kept = tl.compile(_ws_gemm(True), target="cuda:sm_90a").get_source()
    assert "setmaxnreg" in default
    assert "setmaxnreg" not in kept and "wgmma" in kept
    with pytest.raises(TileLangError, match="must be inside"):
        @T.prim_func
        def outside(A: T.Tensor((4,), "float32")):
            T.no_set_max_nreg()
        tl.compile(outside, target="cpu")


def _split_combine(splits=4):
    """TileLang's split + combine shape: a workspace of partial sums written
    by one kernel and reduced by the next."""
    @T.prim_func
    def main(A: T.Tensor((8, 256), "float32"), Out: T.Tensor((8,), "float32")):
        partial = T.alloc_global((8, splits), "float32")
        with T.Kernel(8, splits, threads=64) as (row, s):
            acc = T.alloc_fragment((1,), "float32")
            tile = T.alloc_fragment((1, 256 // splits), "float32")
            T.copy(A[row, s * (256 // splits)], tile)
            T.reduce_sum(tile, acc, dim=1)
            partial[row, s] = acc[0]
        with T.Kernel(8, threads=32) as row:
            total = T.alloc_var(dtype="float32")
            total = 0.0
            for s in T.serial(splits):
                total += partial[row, s]
            Out[row] = total
    return main


def test_alloc_global_workspace(target, rng):
    k = tl.compile(_split_combine(), out_idx=[-1], target=target)
    assert [p.name for p in k.params if p.workspace] == ["partial"]
    a = rng.random((8, 256), dtype=np.float32)
    if target == "cuda":
        import torch

        out = k(torch.from_numpy(a).cuda()).cpu().numpy()
    else:
        out = k(a)  # the workspace is not an argument, and not returned
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)


def test_alloc_global_errors():
    n = 4

    @T.prim_func
    def in_kernel(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            w = T.alloc_global((4,), "float32")
            A[0] = w[0]

    with pytest.raises(TileLangError, match="outside `with T.Kernel"):
        tl.compile(in_kernel, target="cpu")

    with pytest.raises(TileLangError, match="must be known when the program is built"):
        @T.prim_func
        def runtime_shape(A: T.Tensor((4,), "float32"), m: T.int32):
            w = T.alloc_global((m,), "float32")
            with T.Kernel(1, threads=32):
                A[0] = w[0]

    @T.prim_func
    def fine(A: T.Tensor((4,), "float32")):
        w = T.alloc_global((n,), "float32")
        with T.Kernel(1, threads=32):
            for i in T.serial(4):
                w[i] = A[i] * 2.0
        with T.Kernel(1, threads=32):
            for i in T.serial(4):
                A[i] = w[i] + 1.0

    a = np.arange(4, dtype=np.float32)
    tl.compile(fine, target="cpu")(a)
    np.testing.assert_array_equal(a, np.arange(4) * 2 + 1)


def test_alloc_global_for_sm90a():
    k = tl.compile(_split_combine(), out_idx=[-1], target="cuda:sm_90a")
    assert len(k.parts) == 2


def test_atomic_add_of_a_fragment_into_a_laid_out_tensor(rng):
    """TileLang's attention backward: `T.atomic_add(dQ[b, l0:l1, h, :], dq)`
    where dQ carries a T.Layout: each element lands where the layout places
    it (one scalar atomic per element)."""
    shape = (1, 16, 2, 8)

    @T.prim_func
    def main(X: T.Tensor((16, 8), "float32"), dQ: T.Tensor(shape, "float32")):
        with T.Kernel(2, 2, threads=64) as (h, rep):
            T.annotate_layout({dQ: T.Layout(dQ.shape, lambda b, l, hh, d: [
                b, l // 8, hh, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2])})
            frag = T.alloc_fragment((16, 8), "float32")
            T.copy(X, frag)
            T.atomic_add(dQ[0, 0:16, h, :], frag)

    x = rng.standard_normal((16, 8)).astype(np.float32)
    dq = np.zeros(shape, np.float32)
    tl.compile(main, target="cpu")(x, dq)
    # Undo the placement: element (0, l, h, d) is stored at the layout's index.
    placed = dq.reshape(1, 2, 2, 1, 2, 32)
    logical = np.zeros(shape, np.float32)
    for l in range(16):
        for hh in range(2):
            for d in range(8):
                logical[0, l, hh, d] = placed[0, l // 8, hh, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2]
    np.testing.assert_allclose(logical, np.broadcast_to(2 * x[None, :, None, :], shape), rtol=1e-6)
    tl.compile(main, target="cuda:sm_90a")  # reaches PTX


def _mask_helper(i, j, block, flag):
    # Plain Python called from a program (not parsed): `==` on tile values
    # must compare at run time, as TileLang's PrimExpr `==` does.
    same_block = T.if_then_else(i // block == j // block, 1, 0)
    before = T.if_then_else(i // block > j // block, 1, 0)
    return T.if_then_else(flag == 1, same_block, before)


def test_equality_in_plain_python_helpers(rng):
    """`==` / `!=` in a helper function on loop indices and runtime scalars
    (TileLang's block-causal masks): was Python's identity test, a silent
    wrong mask."""
    @T.prim_func
    def main(Out: T.Tensor((2, 16, 16), "int32"), Ne: T.Tensor((16,), "int32")):
        with T.Kernel(2, threads=32) as bx:
            flag = T.if_then_else(bx > 0, 1, 0)
            for i, j in T.Parallel(16, 16):
                Out[bx, i, j] = _mask_helper(i, j, 4, flag)
            for i in T.Parallel(16):
                Ne[i] = T.if_then_else(i % 3 != 0, 1, 0)

    out = np.zeros((2, 16, 16), np.int32)
    ne = np.zeros(16, np.int32)
    tl.compile(main, target="cpu")(out, ne)
    bi, bj = np.arange(16)[:, None] // 4, np.arange(16)[None, :] // 4
    np.testing.assert_array_equal(out[0], (bi > bj).astype(np.int32))
    np.testing.assert_array_equal(out[1], (bi == bj).astype(np.int32))
    np.testing.assert_array_equal(ne, (np.arange(16) % 3 != 0).astype(np.int32))


def test_equality_keeps_python_meanings():
    """Compile-time operands still give Python answers; the compiler's own
    use of `==` as a truth test (dict keys, `in`) stays structural."""
    from tilelang_mlir.language.values import IndexExpr

    assert bool(IndexExpr(3) == 3) and not bool(IndexExpr(3) != 3)
    assert IndexExpr(2) in [IndexExpr(1), IndexExpr(2)]
    assert {IndexExpr(5): "x"}[IndexExpr(5)] == "x"


def _gemm_stages(stages: int, epilogue_atomic: bool):
    @T.prim_func
    def main(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"),
             C: T.Tensor((256, 256), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 32), "float16")
            B_s = T.alloc_shared((32, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(8, num_stages=stages):
                T.copy(A[by * 128, k * 32], A_s)
                T.copy(B[k * 32, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            if epilogue_atomic:
                T.atomic_add(C[by * 128, bx * 128], C_l)
            else:
                T.copy(C_l, C[by * 128, bx * 128])
    return main


@pytest.mark.parametrize("stages, atomic", [(0, True), (1, False), (2, False)])
def test_one_stage_warp_specialized_gemm(target, stages, atomic, rng):
    """TileLang's split-K GEMMs pipeline with num_stages=0: a one-slot ring.
    The sm_90a warp-specialized consumer then releases the slot in the
    iteration that read it (it deadlocked when it kept the gemm in flight
    and released one iteration later)."""
    k = tl.compile(_gemm_stages(stages, atomic), target=target)
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c = np.zeros((256, 256), np.float32)
    if target == "cuda":
        import torch

        ta, tb, tc = (torch.from_numpy(x).cuda() for x in (a, b, c))
        k(ta, tb, tc)
        c = tc.cpu().numpy()
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2,
                                   atol=2e-2)
    else:
        k(a, b, c)
        assert_float32_matmul(c, a, b)  # float32 sums of exact float16 products
