"""The rest of the T.* surface on the CPU: dtypes, loop kinds, schedules,
annotations and device print."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from support.devices import get, put
from tilelang_mlir.frontend.errors import TileLangError
from tilelang_mlir.testing import to_device, to_numpy


def copy_scale_kernel(dtype, n=24):
    @T.prim_func
    def main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((n,), dtype)
            T.copy(X, s)
            for i in T.Parallel(n):
                Y[i] = s[i] + s[i]

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8",
                                   "int32", "int64", "uint8"])
def test_tensor_dtypes(dtype, target, rng):
    kernel = tl.compile(copy_scale_kernel(dtype), out_idx=[1], target=target)
    if dtype in ("int8", "uint8"):
        x = rng.integers(0, 60, 24)
    elif dtype in ("int32", "int64"):
        x = rng.integers(-1000, 1000, 24)
    else:
        x = rng.standard_normal(24)
    xt = torch.from_numpy(x).to(getattr(torch, dtype))
    y = kernel(put(xt, target))
    assert y.dtype == xt.dtype
    torch.testing.assert_close(y.cpu(), xt + xt, rtol=0, atol=0)


def test_bool_tensor(target, rng):
    @T.prim_func
    def main(X: T.Tensor((16,), "float32"), M: T.Tensor((16,), "bool")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(16):
                M[i] = X[i] > 0

    kernel = tl.compile(main, out_idx=[1], target=target)
    x = rng.standard_normal(16).astype(np.float32)
    m = get(kernel(put(x, target)))
    assert m.dtype == np.bool_
    np.testing.assert_array_equal(m, x > 0)


def test_float8_converts_everywhere_and_computes_through_float32(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")

    @T.prim_func
    def main(X: T.Tensor((16,), T.float8_e4m3), Y: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            T.copy(X, Y)

    assert "memref<16xf8E4M3FN>" in main.script()
    x = (rng.standard_normal(16) * 8).astype(ml_dtypes.float8_e4m3fn)
    y = tl.compile(main, out_idx=[1], target="cpu")(x)
    np.testing.assert_array_equal(y, x.astype(np.float32))

    # Arithmetic on float8 values computes in float32 and rounds back (as
    # TileLang's cutlass types do); test_tile_ops_compat.py checks it wider.
    @T.prim_func
    def arith(X: T.Tensor((16,), T.float8_e4m3), Y: T.Tensor((16,), T.float8_e4m3)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(16):
                Y[i] = X[i] * X[i]

    y = tl.compile(arith, out_idx=[1], target="cpu")(x)
    xf = x.astype(np.float32)
    want = np.clip(xf * xf, -448, 448).astype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(y.astype(np.float32), want.astype(np.float32))
    tl.compile(arith, target="cuda:sm_90a")


def test_unroll_vectorized_and_scheduled_pipeline(target, rng):
    N, B = 64, 16

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((B,), "float32")
            f = T.alloc_fragment((B,), "float32")
            for k in T.Pipelined(N // B, num_stages=2, order=[0, 1, 2], stage=[0, 0, 1]):
                T.copy(X[k * B], s)
                for i in T.Parallel(B):
                    f[i] = s[i] * 3.0
                T.copy(f, Y[k * B])
            for i in T.unroll(4):
                Y[i] = Y[i] + 1.0
            for i in T.vectorized(4, 8):
                Y[i] = Y[i] - 1.0

    kernel = tl.compile(main, out_idx=[1], target=target)
    text = kernel.mlir("tile")
    assert "order = [0, 1, 2] stage = [0, 0, 1]" in text
    # T.unroll over constant bounds is unrolled by the frontend (the index is
    # a compile-time integer in the body); T.vectorized stays a marked loop.
    assert "tile.unroll" not in text and "tile.vectorize" in text
    x = rng.standard_normal(N).astype(np.float32)
    ref = 3 * x
    ref[:4] += 1.0
    ref[4:8] -= 1.0
    # 3x + 1 may be fused into one fma on the GPU: absolute slack near cancellation.
    np.testing.assert_allclose(get(kernel(put(x, target))), ref, rtol=1e-6, atol=1e-6)


def test_annotations_are_recorded_and_respected(target, rng):
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float16"), Y: T.Tensor((64, 64), "float16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            T.use_swizzle(panel_size=4, order="col")
            s = T.alloc_shared((32, 32), "float16")
            T.annotate_layout({s: T.make_swizzled_layout(s)})
            T.copy(X[by * 32, bx * 32], s)
            T.copy(s, Y[by * 32, bx * 32])

    kernel = tl.compile(main, out_idx=[1], target=target)
    text = kernel.mlir("tile")
    assert "tile.use_swizzle 4 {order = #tile.raster<col>}" in text
    assert "tile.annotate_layout" in text and "#tile.swizzle<128>" in text
    x = rng.standard_normal((64, 64)).astype(np.float16)
    np.testing.assert_array_equal(get(kernel(put(x, target))), x)


@pytest.mark.gpu
def test_device_print_gpu(capfd):
    """On the GPU, thread 0 of each block prints scalars and whole tiles."""
    @T.prim_func
    def main(X: T.Tensor((4,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            f = T.alloc_fragment((2,), "float32")
            T.copy(X[bx * 2], f)
            T.print(bx, msg="block")
            T.print(f, msg="tile of X")

    kernel = tl.compile(main, target="cuda")
    kernel(put(np.array([1.5, 2.5, 3.5, 4.5], np.float32), "cuda"))
    torch.cuda.synchronize()
    out = capfd.readouterr().out
    assert "block (0, 0, 0) thread 0: block 0" in out
    assert "block (1, 0, 0) thread 0: block 1" in out
    assert "block (1, 0, 0) thread 0: tile of X" in out
    assert "  [1] = 4.5" in out


def test_device_print(capfd):
    @T.prim_func
    def main(X: T.Tensor((4,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            f = T.alloc_fragment((2,), "float32")
            T.copy(X[bx * 2], f)
            T.print(bx, msg="block")
            T.print(f, msg="tile of X")

    kernel = tl.compile(main, target="cpu")
    kernel(np.array([1.5, 2.5, 3.5, 4.5], np.float32))
    out = capfd.readouterr().out
    assert "block (0, 0, 0) thread 0: block 0" in out
    assert "block (1, 0, 0) thread 0: block 1" in out
    assert "block (1, 0, 0) thread 0: tile of X" in out
    assert "  [1] = 4.5" in out


def test_math_functions(target, rng):
    @T.prim_func
    def main(X: T.Tensor((32,), "float32"), Y: T.Tensor((8, 32), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                x = X[i]
                Y[0, i] = T.exp(x)
                Y[1, i] = T.log(T.abs(x) + 1.0)
                Y[2, i] = T.log2(T.abs(x) + 1.0)
                Y[3, i] = T.rsqrt(T.abs(x) + 1.0)
                Y[4, i] = T.tanh(x)
                Y[5, i] = T.min(x, 0.25) + T.max(x, -0.25)
                Y[6, i] = T.if_then_else(x > 0, T.infinity("float32"), -T.infinity("float32"))
                Y[7, i] = T.sigmoid(x)

    kernel = tl.compile(main, out_idx=[1], target=target)
    x = rng.standard_normal(32).astype(np.float32)
    y = get(kernel(put(x, target)))
    x64 = x.astype(np.float64)
    refs = [np.exp(x64), np.log(np.abs(x64) + 1), np.log2(np.abs(x64) + 1),
            1 / np.sqrt(np.abs(x64) + 1), np.tanh(x64),
            np.minimum(x64, 0.25) + np.maximum(x64, -0.25),
            np.where(x64 > 0, np.inf, -np.inf), 1 / (1 + np.exp(-x64))]
    # GPUs use the hardware approximations (relative error about 2^-22).
    rtol = 2e-6 if target == "cpu" else 2e-5
    for row, ref in zip(y, refs):
        np.testing.assert_allclose(row, ref, rtol=rtol, atol=1e-6)


def test_floordiv_and_floormod_on_negative_values(target, rng):
    @T.prim_func
    def main(A: T.Tensor((32,), "int32"), Q: T.Tensor((32,), "int32"), R: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                Q[i] = T.floordiv(A[i], 7)
                R[i] = T.floormod(A[i], 7)

    kernel = tl.compile(main, out_idx=[1, 2], target=target)
    a = rng.integers(-100, 100, 32).astype(np.int32)
    q, r = get(kernel(put(a, target)))
    np.testing.assert_array_equal(q, a // 7)
    np.testing.assert_array_equal(r, a % 7)


def test_reinterpret_reads_the_bits_as_another_type(target, rng):
    """T.reinterpret: the bits of an int32 built with integer operations read
    as a float32 (the dequantizing GEMV's 1 + nibble/16) and a float32 read
    back as int32; the widths must match."""
    @T.prim_func
    def main(A: T.Tensor((32,), "int32"), F: T.Tensor((32,), "float32"),
             B: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                f = T.reinterpret(((A[i] & 15) << 19) | 0x3F800000, "float32")
                F[i] = f
                B[i] = T.reinterpret(f * 2.0, "int32")

    kernel = tl.compile(main, out_idx=[1, 2], target=target)
    a = rng.integers(0, 1 << 20, 32).astype(np.int32)
    f, b = get(kernel(put(a, target)))
    np.testing.assert_array_equal(f, 1 + (a & 15) / 16)
    np.testing.assert_array_equal(b, (2 + (a & 15) / 8).astype(np.float32).view(np.int32))


def test_reinterpret_needs_equal_widths():
    """(Not per target: the GPU machine runs offline, without the compiler
    that reports this.)"""
    @T.prim_func
    def bad(A: T.Tensor((32,), "int32"), F: T.Tensor((32,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                F[i] = T.reinterpret(A[i], "float16")

    with pytest.raises((TypeError, TileLangError), match="differ in width"):
        tl.compile(bad, target="cpu")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pair_ops_work_lane_by_lane(dtype, target, rng):
    """T.hadd2/hsub2/hmul2/hfma2 on int32 words holding two 16-bit floats
    (lane 0 in bits 0..15), T.unpack2 and T.pack2, against torch on the
    same bits. add/sub/mul are exact roundings of exact results here; the
    fma is one rounding on the GPU and within one unit in the last place
    on the CPU (a float32 fma rounded again)."""
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int32"),
             C: T.Tensor((n,), "int32"), R: T.Tensor((5, n), "int32"),
             L: T.Tensor((2, n), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                R[0, i] = T.hadd2(A[i], B[i], dtype=dtype)
                R[1, i] = T.hsub2(A[i], B[i], dtype=dtype)
                R[2, i] = T.hmul2(A[i], B[i], dtype=dtype)
                R[3, i] = T.hfma2(A[i], B[i], C[i], dtype=dtype)
                lo = T.unpack2(A[i], 0, dtype=dtype)
                hi = T.unpack2(A[i], 1, dtype=dtype)
                L[0, i] = T.float32(lo)
                L[1, i] = T.float32(hi)
                R[4, i] = T.pack2(hi, lo * 2.0, dtype=dtype)

    kernel = tl.compile(main, out_idx=[3, 4], target=target)
    tdt = getattr(torch, dtype)

    def words(x):  # (n, 2) floats -> (n,) int32 words
        return torch.from_numpy(np.ascontiguousarray(x)).to(tdt).view(torch.int32).reshape(n)

    def pairs(w):  # (n,) int32 -> (n, 2) float64
        return torch.from_numpy(np.ascontiguousarray(w)).view(tdt).reshape(n, 2).double()

    a, b, c = (words(rng.standard_normal((n, 2)) * 4) for _ in range(3))
    r, lanes = (get(t) for t in kernel(put(a, target), put(b, target), put(c, target)))
    fa, fb, fc = pairs(a.numpy()), pairs(b.numpy()), pairs(c.numpy())
    for k, want in enumerate([fa + fb, fa - fb, fa * fb]):
        torch.testing.assert_close(pairs(r[k]), want.to(tdt).double(), rtol=0, atol=0)
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)
    torch.testing.assert_close(pairs(r[3]), (fa * fb + fc).to(tdt).double(), rtol=ulp, atol=0)
    np.testing.assert_array_equal(lanes, fa.T.numpy())
    torch.testing.assert_close(pairs(r[4]), torch.stack([fa[:, 1], fa[:, 0] * 2], dim=1),
                               rtol=0, atol=0)


def test_pair_ops_name_bad_operands():
    """(Not per target: the errors come from the frontend.)"""
    def build(body):
        @T.prim_func
        def bad(A: T.Tensor((32,), "int32"), F: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(32):
                    body(A, F, i)
        return bad

    def float_operand(A, F, i):
        A[i] = T.hadd2(A[i], F[i])

    def bad_lane(A, F, i):
        F[i] = T.float32(T.unpack2(A[i], 2))

    def bad_dtype(A, F, i):
        A[i] = T.hmul2(A[i], A[i], dtype="float32")

    for body, match in ((float_operand, "int32 words holding two 16-bit floats"),
                        (bad_lane, "lane is 0 or 1"), (bad_dtype, "float16 or bfloat16")):
        with pytest.raises((TypeError, ValueError, TileLangError), match=match):
            tl.compile(build(body), target="cpu")


def async_gemm_kernel(wg_wait, wait_after=None):
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c, wg_wait=wg_wait)
            if wait_after is not None:
                T.wait_wgmma(wait_after)
            T.copy(c, C)

    return main


@pytest.mark.parametrize("wg_wait,wait_after,expect", [
    (0, None, []),                      # synchronous: no async, no wait op
    (-1, 0, ["{async}", "tile.gemm_wait 0"]),
    (2, None, ["{async}", "tile.gemm_wait 2"]),
    (-1, 1, ["{async}", "tile.gemm_wait 1"]),
])
def test_gemm_wg_wait_issues_async_gemms(wg_wait, wait_after, expect, rng):
    """T.gemm's wg_wait (TileLang's meaning): 0 synchronous, -1 only
    issued (tile.gemm {async}) until a T.wait_wgmma(n) (tile.gemm_wait n),
    n > 0 issued and followed by a wait for all but n. Where gemms run
    synchronously (the CPU) the result is the same."""
    main = async_gemm_kernel(wg_wait, wait_after)
    text = main.script()
    assert ("async" in text) == bool(expect) and ("gemm_wait" in text) == bool(expect), text
    for e in expect:
        assert e in text, text
    kernel = tl.compile(main, out_idx=[2], target="cpu")
    A = torch.from_numpy(rng.standard_normal((64, 32))).half()
    B = torch.from_numpy(rng.standard_normal((32, 64))).half()
    # float32 sums of exact float16 products: the summation bound
    assert_float32_matmul(kernel(A, B), A, B)


def test_gemm_wg_wait_is_checked():
    with pytest.raises(TileLangError, match="wg_wait must be"):
        async_gemm_kernel(-2).script()
    with pytest.raises(TileLangError, match="pending must be non-negative"):
        async_gemm_kernel(-1, -1).script()


def _row_sums(width):
    @T.prim_func
    def main(X: T.Tensor((8, 16), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((8, 16), "float32")
            s = T.alloc_fragment((8,), "float32")
            T.copy(X, x)
            T.clear(s)
            for i, j in T.Parallel(8, 16, coalesced_width=width):
                s[i] += x[i, j]
            T.copy(s, Y)

    return main


def _check_row_sums(got, x):
    """Against the exact row sums, within the float32 summation bound."""
    tol = x.shape[1] * np.finfo(np.float32).eps * np.abs(x).sum(1)
    assert np.all(np.abs(got - x.sum(1)) <= tol), (got, x.sum(1))


def test_parallel_accumulation_across_threads_is_refused(rng):
    """An accumulation into s[i] over j, with j spread over threads by the
    loop's layout, would leave each thread its own partial sum: the GPU
    compile refuses it, naming the line; with coalesced_width=16 a thread
    owns a whole row, and the same program is a per-thread sum."""
    with pytest.raises(Exception, match="iterations on different threads") as info:
        tl.compile(_row_sums(None), out_idx=[1], target="cuda:sm_90a")
    assert "s[i] += x[i, j]" in str(info.value)  # the source line
    tl.compile(_row_sums(16), out_idx=[1], target="cuda:sm_90a")
    kernel = tl.compile(_row_sums(16), out_idx=[1], target="cpu")
    x = rng.standard_normal((8, 16)).astype(np.float32)
    _check_row_sums(kernel(torch.from_numpy(x)).numpy(), x)


@pytest.mark.gpu
def test_per_thread_row_sums_on_gpu(rng):
    """The per-thread accumulation (coalesced_width covering the row) on the GPU."""
    kernel = tl.compile(_row_sums(16), out_idx=[1], target="cuda")
    x = rng.standard_normal((8, 16)).astype(np.float32)
    _check_row_sums(to_numpy(kernel(to_device(x, kernel.device))), x)


def _chunk_sums(width):
    """part[n, c] = sum over the 16 j of chunk c of x[n, j] * (j % 16)."""
    @T.prim_func
    def main(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 4), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((8, 64), "float32")
            part = T.alloc_fragment((8, 4), "float32")
            T.copy(X, x)
            T.clear(part)
            for n, j in T.Parallel(8, 64, coalesced_width=width):
                part[n, j // 16] += x[n, j] * T.float32(j % 16)
            T.copy(part, Y)

    return main


def _check_chunk_sums(got, x):
    """Against float64, within the float32 summation bound (16 eps sum|terms|)."""
    terms = (x.astype(np.float64) * (np.arange(64) % 16)).reshape(8, 4, 16)
    tol = 16 * np.finfo(np.float32).eps * np.abs(terms).sum(-1)
    assert np.all(np.abs(got - terms.sum(-1)) <= tol), (got, terms.sum(-1))


def test_divided_index_keeps_chunks_in_the_thread(rng):
    """Fragment indices j // 16 and j % 16 inside T.Parallel: with
    coalesced_width=16 each thread owns whole chunks, layout inference gives
    `part` one element a thread (no shared-memory conversion) and the sums
    are right; with width 4 a chunk spans four threads and the accumulation
    is refused."""
    kernel = tl.compile(_chunk_sums(16), out_idx=[1], target="cuda:sm_90a")
    text = kernel.mlir("layout")
    assert "tile.alloc_shared" not in text
    assert "memref<8x4xf32, #tile.scope<fragment>>" in text
    with pytest.raises(Exception, match="iterations on different threads"):
        tl.compile(_chunk_sums(4), out_idx=[1], target="cuda:sm_90a")
    cpu = tl.compile(_chunk_sums(16), out_idx=[1], target="cpu")
    x = rng.standard_normal((8, 64)).astype(np.float32)
    _check_chunk_sums(cpu(torch.from_numpy(x)).numpy(), x)


@pytest.mark.gpu
def test_divided_index_on_gpu(rng):
    kernel = tl.compile(_chunk_sums(16), out_idx=[1], target="cuda")
    x = rng.standard_normal((8, 64)).astype(np.float32)
    _check_chunk_sums(to_numpy(kernel(to_device(x, kernel.device))), x)


def _block_transpose():
    """y[n, (j % 4) * 4 + j // 4] = x[n, j]: each 4x4 block of a row transposed."""
    @T.prim_func
    def main(X: T.Tensor((8, 16), "float32"), Y: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((8, 16), "float32")
            y = T.alloc_fragment((8, 16), "float32")
            T.copy(X, x)
            for n, j in T.Parallel(8, 16, coalesced_width=16):
                y[n, (j % 4) * 4 + j // 4] = x[n, j]
            T.copy(y, Y)

    return main


def _transposed_blocks(x):
    return x.reshape(8, 4, 4).transpose(0, 2, 1).reshape(8, 16)


def test_summed_index_permutes_registers(rng):
    """A fragment index that is a sum of divided, wrapped and scaled loop
    variables permutes a thread's registers: no shared-memory conversion on
    the GPU, the right permutation on the CPU."""
    text = tl.compile(_block_transpose(), out_idx=[1], target="cuda:sm_90a").mlir("layout")
    assert "tile.alloc_shared" not in text
    x = rng.standard_normal((8, 16)).astype(np.float32)
    cpu = tl.compile(_block_transpose(), out_idx=[1], target="cpu")
    np.testing.assert_array_equal(cpu(torch.from_numpy(x)).numpy(), _transposed_blocks(x))


@pytest.mark.gpu
def test_summed_index_on_gpu(rng):
    kernel = tl.compile(_block_transpose(), out_idx=[1], target="cuda")
    x = rng.standard_normal((8, 16)).astype(np.float32)
    np.testing.assert_array_equal(to_numpy(kernel(to_device(x, kernel.device))),
                                  _transposed_blocks(x))


def _staged_copy(stage, N=96, B=16):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((B,), "float32")
            f = T.alloc_fragment((B,), "float32")
            for k in T.Pipelined(N // B, order=[0, 1, 2], stage=stage):
                T.copy(X[k * B], s)
                for i in T.Parallel(B):
                    f[i] = s[i] * 2.0 - 1.0
                T.copy(f, Y[k * B])

    return main


def test_scheduled_pipeline_without_num_stages(target, rng):
    """T.Pipelined(n, order=, stage=) without num_stages: as deep as its
    latest stage (TileLang infers it), not a zero-stage loop that refuses
    the schedule."""
    kernel = tl.compile(_staged_copy([0, 0, 1]), out_idx=[1], target=target)
    assert "num_stages = 1" in kernel.mlir("tile")
    x = rng.standard_normal(96).astype(np.float32)
    np.testing.assert_allclose(get(kernel(put(x, target))), 2 * x - 1, rtol=1e-6, atol=1e-6)


def test_a_single_buffered_value_read_two_stages_later_is_refused():
    """The fragment written in stage 0 and stored in stage 2 would hold a
    later iteration's values by then (only copies into shared memory are
    multi-buffered): an error, not a wrong result (it gave one on the H100)."""
    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        with pytest.raises(TileLangError, match="reads a buffer that statement 1 writes in "
                                                "stage 0"):
            tl.compile(_staged_copy([0, 0, 2]), target=arch)
