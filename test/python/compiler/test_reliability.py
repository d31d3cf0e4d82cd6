"""Regression tests of the classes of bugs fuzzing found (issue 17): each
would have caught its class. The tile-opt crashers are lit tests
(test/lit/Dialect/Tile/invalid.mlir, Transforms/tile-layout-inference.mlir,
Conversion/*); these are the Python-level ones.
"""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul, assert_float32_sum
from support.devices import get, put
from tilelang_mlir.frontend.errors import DeviceAssertionError, TileLangError

GPU_TARGETS = ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"]


def _compile_gpu(func, out_idx, target):
    if target.startswith("rocm"):
        pytest.importorskip("llvmlite.binding")
        pytest.importorskip("ziglang")
    return tl.compile(func, out_idx=out_idx, target=target,
                      pass_configs={"tl.disable_cache": True})


# ---------------------------------------------------------------------------
# Point-index copies take the tile's shape (TileLang's rule): X[0, 2] into an
# (8, 1) tile is a column, not a row.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape,index", [((8, 1), (0, 2)), ((1, 8), (3, 0)), ((8,), (2, 4)),
                                         ((4, 1, 8), (1, 2, 0)), ((1, 1), (5, 7)),
                                         ((8, 4), (3, 5))])
def test_point_copy_takes_the_tile_shape(shape, index, target, rng):
    R = (16, 16) if len(index) == 2 else (4, 16, 16)

    @T.prim_func
    def main(X: T.Tensor(R, "float32"), Y: T.Tensor(shape, "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment(shape, "float32")
            T.copy(X[index], x)
            T.copy(x, Y[tuple(0 for _ in shape)])

    kernel = tl.compile(main, out_idx=[1], target=target)
    X = rng.standard_normal(R).astype(np.float32)
    # The region: the tile's extents aligned to X's trailing dimensions.
    ext = [1] * (len(R) - len(shape)) + list(shape) if len(shape) <= len(R) else None
    region = X[tuple(slice(i, i + e) for i, e in zip(index, ext))]
    want = np.zeros(ext, np.float32)
    want[tuple(slice(0, s) for s in region.shape)] = region
    got = kernel(_put(X, target))
    np.testing.assert_array_equal(_get(got), want.reshape(shape))


def test_row_into_column_is_an_error():
    @T.prim_func
    def main(X: T.Tensor((16, 16), "float32"), Y: T.Tensor((8, 1), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((8, 1), "float32")
            T.copy(X[0, 0:8], x)
            T.copy(x, Y[0, 0])

    with pytest.raises(TileLangError, match=r"the region of 'X' has shape 1x8 but the region "
                                            r"of '\w+' has shape 8x1"):
        tl.compile(main, out_idx=[1], target="cpu")


@pytest.mark.parametrize("op,ref", [("sum", np.sum), ("abssum", lambda a, axis: np.abs(a).sum(axis)),
                                    ("max", np.max), ("min", np.min)])
def test_reduce_over_unit_dimension(op, ref, target, rng):
    M = 8

    @T.prim_func
    def main(X: T.Tensor((M, 1), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((M, 1), "float32")
            r = T.alloc_fragment((M,), "float32")
            T.copy(X[0, 0], x)
            getattr(T, f"reduce_{op}")(x, r, dim=1)
            T.copy(r, Y[0])

    kernel = tl.compile(main, out_idx=[1], target=target)
    X = rng.standard_normal((M, 1)).astype(np.float32)
    np.testing.assert_allclose(_get(kernel(_put(X, target))), ref(X, axis=1), rtol=1e-6)


# ---------------------------------------------------------------------------
# Converting copies compile on every GPU target (they aborted in the
# lowering); test_conversions.py checks every dtype pair.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("tgt", GPU_TARGETS)
def test_converting_copy_compiles(tgt):
    @T.prim_func
    def main(A: T.Tensor((16, 64), "float32"), C: T.Tensor((16, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((16, 64), "float16")
            T.copy(A[0, 0], s)
            T.copy(s, C[0, 0])

    assert _compile_gpu(main, [1], tgt).get_source()


# ---------------------------------------------------------------------------
# Thread counts that are not powers of two (the layout search never ended).
# ---------------------------------------------------------------------------

def _matmul(M, N, K, bM, bN, bK, threads, stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            As = T.alloc_shared((bM, bK), "float16")
            Bs = T.alloc_shared((bK, bN), "float16")
            Cl = T.alloc_fragment((bM, bN), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], As)
                T.copy(B[k * bK, bx * bN], Bs)
                T.gemm(As, Bs, Cl)
            for i, j in T.Parallel(bM, bN):
                Cl[i, j] = Cl[i, j] * 2.0
            T.copy(Cl, C[by * bM, bx * bN])

    return main


@pytest.mark.parametrize("threads", [3, 48, 96, 160])
def test_odd_thread_counts(threads, target, rng):
    kernel = tl.compile(_matmul(64, 48, 64, 16, 16, 16, threads), out_idx=[2], target=target)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 48)).astype(np.float16)
    got = _get(kernel(_put(a, target), _put(b, target)))
    if target == "cpu":  # float32 sums of exact float16 products: the summation bound
        assert_float32_matmul(got, a, b, scale=2)
    else:
        np.testing.assert_allclose(got, 2 * a.astype(np.float32) @ b.astype(np.float32),
                                   rtol=1e-2, atol=1e-2)


# (3 threads compile too, but every thread then holds the whole replicated
# tile and LLVM takes 10-50 s on the unrolled SIMT gemm: checked on the CPU.)
@pytest.mark.parametrize("tgt", GPU_TARGETS)
@pytest.mark.parametrize("threads", [48, 96, 160])
def test_odd_thread_counts_compile(threads, tgt):
    start = time.monotonic()
    _compile_gpu(_matmul(64, 48, 64, 16, 16, 16, threads), [2], tgt)
    assert time.monotonic() - start < 60


# ---------------------------------------------------------------------------
# A pipelined loop that runs once (K <= block_K), warp-specialized on sm_90a
# (issue 44): canonicalize folds the one-trip loop and the consumer's release
# of the `empty` slot with it; the producer's parity-1 wait on the fresh slot
# passes at once, so the kernel is valid (it was refused as "waits on a
# barrier that nothing arrives on").
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("k_tiles", [1, 2])
def test_single_iteration_pipelined_gemm_compiles_on_hopper(stages, k_tiles):
    ptx = _compile_gpu(_matmul(64, 64, 32 * k_tiles, 64, 64, 32, 128, stages), [2],
                       "cuda:sm_90a").get_source()
    assert "wgmma.mma_async" in ptx and "mbarrier.try_wait.parity" in ptx


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("K", [16, 32, 64])
def test_single_iteration_pipelined_gemm(stages, K, target, rng):
    M, N = 128, 64
    kernel = tl.compile(_matmul(M, N, K, 64, 64, 32, 128, stages), out_idx=[2], target=target,
                        pass_configs={"tl.disable_cache": True})
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    want = 2 * a.astype(np.float32) @ b.astype(np.float32)
    for _ in range(2):
        got = _get(kernel(_put(a, target), _put(b, target)))
        if target == "cpu":  # float32 sums of exact float16 products: the summation bound
            assert_float32_matmul(got, a, b, scale=2)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


# A gemm on one stage of a staged shared buffer (`S[k % 2, :, :]`): on the
# CPU the loops read through the view, which convert-to-llvm did not lower
# (an unrealized cast, "translation to LLVM IR failed"; the tile-opt fuzzer
# found it, issue 44).
@pytest.mark.parametrize("stages", [2, 3])
def test_gemm_on_a_stage_of_a_shared_buffer(stages, target, rng):
    M, N, K, bK = 64, 48, 32 * int(rng.integers(2, 6)), 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((stages, M, bK), "float16")
            Bs = T.alloc_shared((stages, bK, N), "float16")
            Cl = T.alloc_fragment((M, N), "float32")
            T.clear(Cl)
            for k in T.serial(K // bK):
                T.copy(A[0, k * bK], As[k % stages, :, :])
                T.copy(B[k * bK, 0], Bs[k % stages, :, :])
                T.gemm(As[k % stages, :, :], Bs[k % stages, :, :], Cl)
            T.copy(Cl, C[0, 0])

    kernel = tl.compile(main, out_idx=[2], target=target)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    got = _get(kernel(_put(a, target), _put(b, target)))
    if target == "cpu":  # float32 sums of exact float16 products: the summation bound
        assert_float32_matmul(got, a, b)
    else:
        np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                                   atol=1e-2)


# ---------------------------------------------------------------------------
# Out-of-bounds element indexing on the CPU backend: a clear error at the
# user's line, not a segfault.
# ---------------------------------------------------------------------------

def test_out_of_bounds_index_is_a_device_assertion():
    """Global element accesses are bounds-safe by TileLang's rule (an
    out-of-range read gives 0: test_safe_access.py); with the checks turned
    off, the CPU reference backend still stops an out-of-range read with a
    device assertion instead of reading past the buffer."""
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(64):
                B[i] = A[i + 100000000]

    np.testing.assert_array_equal(
        tl.compile(main, out_idx=[1], target="cpu")(np.ones(64, np.float32)),
        np.zeros(64, np.float32))
    kernel = tl.compile(main, out_idx=[1], target="cpu",
                        pass_configs={"tl.disable_safe_memory_legalize": True})
    with pytest.raises(DeviceAssertionError, match=r"index out of bounds: load from a buffer of "
                                                   r"shape \(64,\)"):
        kernel(np.ones(64, np.float32))


def test_out_of_bounds_store_and_negative_index(rng):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(64):
                A[i - n] = 1.0

    kernel = tl.compile(main, target="cpu")
    a = rng.standard_normal(64).astype(np.float32)
    kernel(a, 0)
    np.testing.assert_array_equal(a, np.ones(64, np.float32))
    a = rng.standard_normal(64).astype(np.float32)
    before = a.copy()
    kernel(a, 1)  # index -1 is dropped, the others land one lower
    np.testing.assert_array_equal(a[:63], np.ones(63, np.float32))
    assert a[63] == before[63]
    unchecked = tl.compile(main, target="cpu",
                           pass_configs={"tl.disable_safe_memory_legalize": True})
    with pytest.raises(DeviceAssertionError, match="store to a buffer of shape"):
        unchecked(a, 1)  # index -1


def test_in_bounds_indexing_is_unchanged(rng):
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float32"), B: T.Tensor((32, 64), "float32")):
        with T.Kernel(2, threads=32) as bx:
            for i, j in T.Parallel(32, 32):
                B[j, bx * 32 + i] = A[bx * 32 + i, j] + 1.0

    kernel = tl.compile(main, out_idx=[1], target="cpu")
    a = rng.standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a.T + 1)


# ---------------------------------------------------------------------------
# Limits are verifier errors at the user's line, quickly.
# ---------------------------------------------------------------------------

def _compile_error(func, target="cpu"):
    """The TileLangError `tl.compile(func)` raises, and the seconds it took."""
    start = time.monotonic()
    with pytest.raises(TileLangError) as info:
        tl.compile(func, target=target)
    return str(info.value), time.monotonic() - start


def test_huge_parallel_extent_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i, j in T.Parallel(2 ** 31, 64):
                A[j] = 1.0

    text, seconds = _compile_error(main, "cuda:sm_80")
    assert "iteration space (2147483648x64) has more than 1048576 iterations" in text, text
    assert "test_reliability.py" in text and "T.Parallel(2 ** 31, 64)" in text  # the user's line
    assert seconds < 10


def test_huge_stage_count_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((16, 64), "float16")
            for k in T.Pipelined(4, num_stages=65536):
                T.copy(A[k * 16, 0], s)

    text, seconds = _compile_error(main)
    assert "num_stages must be in [0, 32], got 65536" in text, text
    assert "test_reliability.py" in text and "num_stages=65536" in text  # the user's line
    assert seconds < 10


@pytest.mark.parametrize("shape, message", [
    ((0, 16), "dimension 0 must be positive, got 0"),
    ((100000, 100000), "has 10000000000 elements, more than the 131072"),
])
def test_zero_and_huge_tiles_are_errors(shape, message):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment(shape, "float32")
            T.clear(f)

    text, seconds = _compile_error(main)
    assert message in text, text
    assert "test_reliability.py" in text and "T.alloc_fragment(shape" in text  # the user's line
    assert seconds < 10


# ---------------------------------------------------------------------------
# tile-opt on the crashers: a diagnostic and exit status 1, within seconds.
# ---------------------------------------------------------------------------

CRASHERS = {
    "zero_size_gemm": ("""
func.func @f(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<0x0xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<0x0xf32, #tile.scope<fragment>>
    tile.gemm %a, %a, %c : memref<0x0xf16, #tile.scope<shared>>, memref<0x0xf16, #tile.scope<shared>> -> memref<0x0xf32, #tile.scope<fragment>>
  }
  return
}""", "builtin.module(func.func(tile-layout-inference))", "dimensions must be positive"),
    "print_huge_fragment": ("""
func.func @f(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %c = tile.alloc_fragment : memref<100000x100000xf32, #tile.scope<fragment>>
  }
  return
}""", "builtin.module(func.func(tile-layout-inference,tile-print-layouts))", "more than the 131072"),
    "parallel_2_32": ("""
func.func @f(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    tile.parallel (%i, %j) in (64, 4294967296) {
    }
  }
  return
}""", "builtin.module(func.func(tile-layout-inference))", "has more than 1048576 iterations"),
}


@pytest.mark.parametrize("name", sorted(CRASHERS))
def test_tile_opt_crashers_end_with_a_diagnostic(name, tmp_path):
    text, pipeline, message = CRASHERS[name]
    path = tmp_path / "input.mlir"
    path.write_text(text)
    tile_opt = [sys.executable, "-m", "tilelang_mlir.tools.tile_opt"]
    start = time.monotonic()
    proc = subprocess.run(tile_opt + [str(path), f"--pass-pipeline={pipeline}"],
                          capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20
    assert proc.returncode == 1, proc.stderr
    assert message in proc.stderr
    assert "PLEASE submit a bug report" not in proc.stderr


# ---------------------------------------------------------------------------

def _put(x, target):
    return put(x, target)


def _get(x):
    return get(x)


# ---------------------------------------------------------------------------
# A process that compiles kernels without end stays bounded.
# ---------------------------------------------------------------------------

def _threads() -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("Threads:")).split()[1])


def _scale_kernel(n):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                Y[i] = X[i] * 2.0

    return main


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_cpu_kernels_do_not_keep_threads(rng):
    kernels_ = [tl.compile(_scale_kernel(8 + i), out_idx=[1], target="cpu") for i in range(2)]
    before = _threads()
    for i in range(2, 10):
        k = tl.compile(_scale_kernel(8 + i), out_idx=[1], target="cpu")
        x = rng.standard_normal(8 + i).astype(np.float32)
        np.testing.assert_array_equal(k(x), 2 * x)
        kernels_.append(k)
    assert _threads() <= before + 1  # was two more threads per kernel


def test_memory_cache_is_bounded(monkeypatch):
    from collections import OrderedDict

    from tilelang_mlir.compiler import compile as compile_mod

    monkeypatch.setattr(compile_mod, "_MEMORY_CACHE", OrderedDict())
    monkeypatch.setattr(compile_mod, "_MEMORY_CACHE_SIZE", 3)
    first = tl.compile(_scale_kernel(100), out_idx=[1], target="cpu")
    for n in (101, 102):
        tl.compile(_scale_kernel(n), out_idx=[1], target="cpu")
    assert tl.compile(_scale_kernel(100), out_idx=[1], target="cpu") is first  # a hit, now newest
    tl.compile(_scale_kernel(103), out_idx=[1], target="cpu")  # evicts 101, the oldest
    assert len(compile_mod._MEMORY_CACHE) == 3
    assert tl.compile(_scale_kernel(100), out_idx=[1], target="cpu") is first


# ---------------------------------------------------------------------------
# Found by the fuzzers (test/fuzz): each a class, each compiled or run.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_integer_abs_on_every_target(dtype, rng):
    @T.prim_func
    def main(X: T.Tensor((64,), dtype), Y: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                Y[i] = T.abs(X[i])

    x = rng.integers(-100, 100, 64).astype(dtype)
    np.testing.assert_array_equal(tl.compile(main, out_idx=[1], target="cpu")(x), np.abs(x))
    for tgt in GPU_TARGETS:  # math.absi on i8/i16/i64 reached LLVM translation on CUDA
        assert _compile_gpu(main, [1], tgt).get_source()


@pytest.mark.parametrize("dtype", ["float8_e4m3", "float8_e5m2"])
def test_float8_gemm_on_the_cpu(dtype, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    np_dtype = {"float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}[dtype]

    @T.prim_func
    def main(A: T.Tensor((32, 64), dtype), B: T.Tensor((48, 64), dtype),
             C: T.Tensor((32, 48), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((32, 64), dtype)
            Bs = T.alloc_shared((48, 64), dtype)
            Cl = T.alloc_fragment((32, 48), "float32")
            T.copy(A[0, 0], As)
            T.copy(B[0, 0], Bs)
            T.gemm(As, Bs, Cl, transpose_B=True, clear_accum=True)
            T.copy(Cl, C[0, 0])

    a = rng.standard_normal((32, 64)).astype(np_dtype)
    b = rng.standard_normal((48, 64)).astype(np_dtype)
    want = a.astype(np.float32) @ b.astype(np.float32).T
    got = tl.compile(main, out_idx=[2], target="cpu")(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_affine_index_arithmetic_in_tile_ir(tmp_path):
    """tile-opt input with affine.apply in a kernel goes through the
    pipelines tl.compile uses (lower-affine first)."""
    from tilelang_mlir import ir
    from tilelang_mlir.compiler.cpu import cpu_stages
    from tilelang_mlir.compiler.context import make_context
    from tilelang_mlir.compiler.cuda import cuda_stages
    from tilelang_mlir.compiler.pipeline import PipelineRunner
    from tilelang_mlir.compiler.target import parse_target

    text = """
func.func @affine_offset(%C: memref<4096x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  tile.kernel blocks(%bx) in (%c16) threads(128) {
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %z = arith.constant 0.0 : f32
    tile.fill %c, %z : memref<128x128xf32, #tile.scope<fragment>>, f32
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.copy %c[%c0, %c0] [128, 128] to %C[%m0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
  }
  return
}"""
    for stages in (cpu_stages(), cuda_stages(parse_target("cuda:sm_80"), {})):
        with make_context():
            module = ir.Module.parse(text)
            out = PipelineRunner().run(module, stages)
            assert "affine.apply" not in list(out.values())[-1]


def _fill_between_allocs():
    @T.prim_func
    def main(A: T.Tensor((64, 1024), "float16"), C: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), "float16")
            g = T.alloc_fragment((64, 32), "float32")
            T.fill(g, 0)
            f = T.alloc_fragment((64, 32), "float32")
            for k in T.Pipelined(32, num_stages=2):
                T.copy(A[0, k * 32], a)
                T.copy(a, f)
                for i, j in T.Parallel(64, 32):
                    g[i, j] = g[i, j] + f[i, j]
            T.copy(g, C[0, 0])

    return main


def test_statement_between_allocations(target, rng):
    """An op between two T.alloc_* (warp specialization on sm_90a once left
    the second allocation after the region that uses it)."""
    kernel = tl.compile(_fill_between_allocs(), out_idx=[1], target=target)
    a = rng.standard_normal((64, 1024)).astype(np.float16)
    got = get(kernel(put(a, target)))
    if target == "cpu":  # float32 sums of 32 exact float16 values: the summation bound
        assert_float32_sum(got, a.reshape(64, 32, 32), axis=1)
    else:
        want = a.astype(np.float32).reshape(64, 32, 32).sum(axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    assert _compile_gpu(_fill_between_allocs(), [1], "cuda:sm_90a").get_source()
