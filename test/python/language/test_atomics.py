"""Atomics with TileLang's meanings: T.atomic_add (element and tile forms,
return_prev, memory_order), T.atomic_max / atomic_min (fetch_max's rule on
NaN, unsigned integers), T.atomic_or, T.atomic_addx2 / x4, T.atomic_load /
atomic_store, on global and shared memory. Element updates outside
T.Parallel are every thread's (the CPU repeats them once per thread).
Results on random inputs against NumPy (CPU) and PyTorch (GPU)."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_sum
from support.devices import get, put
from tilelang_mlir.base.errors import CompilationError, TileLangError

N = 256


def scatter(kind, dtype, order=None):
    """Out[Idx[i]] <kind>= X[i] for every i (duplicate indices race)."""
    fn = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min,
          "or": T.atomic_or}[kind]

    @T.prim_func
    def main(Idx: T.Tensor((N,), "int32"), X: T.Tensor((N,), dtype),
             Out: T.Tensor((32,), dtype)):
        with T.Kernel(N // 64, threads=64) as bx:
            for i in T.Parallel(64):
                fn(Out[Idx[bx * 64 + i]], X[bx * 64 + i], memory_order=order)

    return main


def reference(kind, idx, x, out):
    out = out.copy()
    if kind == "add":
        np.add.at(out, idx, x)
    elif kind == "or":
        np.bitwise_or.at(out, idx, x)
    else:
        for i, v in zip(idx, x):  # fetch_max: replace only when v wins
            if (v > out[i]) if kind == "max" else (v < out[i]):
                out[i] = v
    return out


def random(dtype, rng, n):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -10**6), min(info.max, 10**6), n).astype(dtype)


@pytest.mark.parametrize("kind,dtype,order", [
    ("max", "float32", None), ("min", "float32", "acquire"), ("max", "int32", "seq_cst"),
    ("min", "uint32", None), ("max", "int64", "relaxed"), ("or", "int32", None),
    ("or", "uint8", "release"), ("add", "int32", "acq_rel"), ("add", "float32", "seq_cst"),
    ("max", "float16", None)])
def test_scatter_atomics(kind, dtype, order, target, rng):
    kernel = tl.compile(scatter(kind, dtype, order), target=target)
    idx = rng.integers(0, 32, N).astype(np.int32)
    x = random(dtype, rng, N)
    out0 = random(dtype, rng, 32)
    if kind == "or":
        x, out0 = np.abs(x), np.abs(out0)
    out = put(out0.copy(), target)
    kernel(put(idx, target), put(x, target), out)
    ref = reference(kind, idx, x, out0)
    if kind == "add" and dtype == "float32":
        np.testing.assert_allclose(get(out), ref, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(get(out), ref)


def test_max_follows_fetch_max_on_nan(target):
    """A NaN value never replaces the element; a NaN element stays."""
    @T.prim_func
    def main(X: T.Tensor((4,), "float32"), Out: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(4):
                T.atomic_max(Out[i], X[i])

    kernel = tl.compile(main, target=target)
    x = np.array([np.nan, 1.0, 5.0, np.nan], np.float32)
    out = put(np.array([2.0, np.nan, 3.0, np.nan], np.float32), target)
    kernel(put(x, target), out)
    np.testing.assert_array_equal(get(out), [2.0, np.nan, 5.0, np.nan])


def test_return_prev_in_parallel(target, rng):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
             Old: T.Tensor((N,), "float32"), M: T.Tensor((N,), "int32")):
        with T.Kernel(N // 128, threads=128) as bx:
            for i in T.Parallel(128):
                Old[bx * 128 + i] = T.atomic_add(B[bx * 128 + i], X[bx * 128 + i],
                                                 return_prev=True)
                M[bx * 128 + i] = T.atomic_max(M[bx * 128 + i], 7, return_prev=True)

    kernel = tl.compile(main, target=target)
    x = rng.standard_normal(N).astype(np.float32)
    b0 = rng.standard_normal(N).astype(np.float32)
    m0 = rng.integers(0, 14, N).astype(np.int32)
    b, old, m = put(b0.copy(), target), put(np.zeros(N, np.float32), target), put(m0, target)
    kernel(put(x, target), b, old, m)
    np.testing.assert_array_equal(get(old), b0)
    np.testing.assert_allclose(get(b), b0 + x, rtol=1e-6)
    # M[i] = prev(M[i]) after the update: the previous value
    np.testing.assert_array_equal(get(m), m0)


def test_element_atomics_outside_parallel_are_every_threads(target, rng):
    """TileLang's meaning: each of the block's 64 threads makes the update
    (the CPU repeats it once per thread)."""
    @T.prim_func
    def main(X: T.Tensor((2,), "int32"), Out: T.Tensor((4,), "int32")):
        with T.Kernel(3, threads=64) as bx:
            T.atomic_add(Out[0], X[0])
            T.atomic_max(Out[1], X[1] + bx)
            T.atomic_or(Out[2], 1 << bx)
            T.atomic_addx2(Out[2], X[0:2])

    kernel = tl.compile(main, target=target)
    x = rng.integers(1, 50, 2).astype(np.int32)
    out = put(np.zeros(4, np.int32), target)
    kernel(put(x, target), out)
    np.testing.assert_array_equal(
        get(out), [3 * 64 * x[0] + 0, x[1] + 2, 7 + 3 * 64 * x[0], 3 * 64 * x[1]])


@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("src,dst", [("float32", "float32"), ("float32", "float16"),
                                     ("float16", "float16")])
def test_atomic_add_vectors(lanes, src, dst, target, rng):
    M, C = 8, 16
    fn = T.atomic_addx2 if lanes == 2 else T.atomic_addx4

    @T.prim_func
    def main(A: T.Tensor((M, C), src), B: T.Tensor((M, C), dst)):
        with T.Kernel(2, threads=32) as bx:
            for i, j in T.Parallel(M, C // lanes):
                fn(B[i, j * lanes], A[i, j * lanes])

    kernel = tl.compile(main, target=target)
    a = rng.standard_normal((M, C)).astype(src)
    b0 = rng.standard_normal((M, C)).astype(dst)
    b = put(b0.copy(), target)
    kernel(put(a, target), b)
    if dst == "float32" and target == "cpu":  # b0 + a + a in float32: the summation bound
        assert_float32_sum(b, np.stack([b0, a, a]), axis=0)
    else:
        ref = (b0.astype(np.float64) + 2 * a.astype(np.float64))
        np.testing.assert_allclose(np.asarray(get(b), np.float64), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_atomic_add_vectors_return_prev(dtype, target, rng):
    """TileLang's AtomicAddx2/x4 with return_prev=True: the destination's
    previous values as a vector (a slice, a let-bound slice or a T.Ramp
    index), stored into a slice; the destination is still updated."""
    @T.prim_func
    def main(Dst: T.Tensor((8,), dtype), Val: T.Tensor((8,), dtype), Prev: T.Tensor((8,), dtype)):
        with T.Kernel(1, threads=1):
            Prev[0:2] = T.atomic_addx2(Dst[0:2], Val[0:2], return_prev=True)
            dst = Dst[2:4]
            val = Val[2:4]
            Prev[2:4] = T.atomic_addx2(dst, val, return_prev=True)
            Prev[4:8] = T.atomic_addx4(Dst[T.Ramp(4, 1, 4)], Val[T.Ramp(4, 1, 4)],
                                       return_prev=True)

    d0 = rng.integers(-8, 8, 8).astype(dtype)  # (small integers: every sum is exact)
    v = rng.integers(-8, 8, 8).astype(dtype)
    d, prev = put(d0.copy(), target), put(np.zeros(8, dtype), target)
    tl.compile(main, target=target)(d, put(v, target), prev)
    np.testing.assert_array_equal(get(prev), d0)
    np.testing.assert_array_equal(get(d), d0 + v)


def test_tile_region_atomics(target, rng):
    """T.atomic_max of a fragment into a region; T.atomic_add of a global
    region with a memory order (element by element)."""
    @T.prim_func
    def main(X: T.Tensor((64, 32), "float32"), Out: T.Tensor((128, 32), "float32"),
             S: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            f = T.alloc_fragment((64, 32), "float32")
            T.copy(X, f)
            T.atomic_max(Out[bx * 64:(bx + 1) * 64, 0:32], f)
            T.atomic_min(Out[0:64, 0:32], X)
            T.atomic_add(S[0:64], X[0:64, 3], memory_order="release")

    kernel = tl.compile(main, target=target)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    out0 = rng.standard_normal((128, 32)).astype(np.float32)
    out, s = put(out0.copy(), target), put(np.zeros(64, np.float32), target)
    kernel(put(x, target), out, s)
    ref = np.maximum(out0, np.concatenate([x, x]))
    ref[:64] = np.minimum(ref[:64], x)
    np.testing.assert_array_equal(get(out), ref)
    np.testing.assert_allclose(get(s), 2 * x[:, 3], rtol=1e-6)


def test_tile_atomics_of_a_scalar_update_each_element_once(target, rng):
    """A whole buffer or a region with a scalar value is a tile update:
    each element once, whatever the number of threads (TileLang's tile
    atomic; a whole buffer was updated at its first element by every
    thread). A local tile value updates element by element too."""
    @T.prim_func
    def main(A: T.Tensor((48, 16), "float32"), B: T.Tensor((5,), "float32"),
             C: T.Tensor((2,), "float32"), D: T.Tensor((3,), "float32")):
        with T.Kernel(3, threads=128) as bx:
            T.atomic_add(A[bx * 16:(bx + 1) * 16, 0:16], 1.5)
            T.atomic_max(A[bx * 16:(bx + 1) * 16, 8:16], 0.25)
            T.atomic_add(B, 2)
            loc = T.alloc_local((2,), "float32")
            T.copy(C, loc)
            T.atomic_add(D[1:3], loc, memory_order="relaxed")
            T.atomic_add(D[0:3], -1.0, memory_order="relaxed")

    kernel = tl.compile(main, target=target)
    a0 = rng.standard_normal((48, 16)).astype(np.float32)
    c = rng.standard_normal(2).astype(np.float32)
    a, b, d = put(a0.copy(), target), put(np.zeros(5, np.float32), target), \
        put(np.zeros(3, np.float32), target)
    kernel(a, b, put(c, target), d)
    ref = a0 + 1.5
    ref[:, 8:] = np.maximum(ref[:, 8:], 0.25)
    np.testing.assert_allclose(get(a), ref, rtol=1e-6)
    np.testing.assert_array_equal(get(b), np.full(5, 6.0, np.float32))  # 3 blocks x 2
    np.testing.assert_allclose(get(d), [-3.0, 3 * c[0] - 3, 3 * c[1] - 3], rtol=1e-5, atol=1e-5)


def test_atomics_on_shared_memory_and_load_store(target, rng):
    @T.prim_func
    def main(Idx: T.Tensor((128,), "int32"), Out: T.Tensor((16,), "int32"),
             Flag: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((16,), "int32")
            T.fill(s, 0)
            for i in T.Parallel(128):
                T.atomic_add(s[Idx[i]], 1, memory_order="relaxed")
            T.copy(s, Out)
            T.atomic_store(Flag[1], T.atomic_load(Flag[0], "acquire") + 5, "release")

    kernel = tl.compile(main, target=target)
    idx = rng.integers(0, 16, 128).astype(np.int32)
    out, flag = put(np.zeros(16, np.int32), target), put(np.array([7, 0], np.int32), target)
    kernel(put(idx, target), out, flag)
    np.testing.assert_array_equal(get(out), np.bincount(idx, minlength=16))
    np.testing.assert_array_equal(get(flag), [7, 12])


def test_out_of_range_updates_are_dropped(target):
    @T.prim_func
    def main(Out: T.Tensor((4,), "int32"), Prev: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                Prev[i] = T.atomic_add(Out[i], 1, return_prev=True)

    kernel = tl.compile(main, target=target)
    out, prev = put(np.full(4, 3, np.int32), target), put(np.full(8, -1, np.int32), target)
    kernel(out, prev)
    np.testing.assert_array_equal(get(out), [4, 4, 4, 4])
    np.testing.assert_array_equal(get(prev), [3, 3, 3, 3, 0, 0, 0, 0])


@pytest.mark.parametrize("target_name", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_atomics_compile_for_every_gpu(target_name):
    tl.compile(scatter("max", "float32", "seq_cst"), target=target_name)
    tl.compile(scatter("min", "uint32"), target=target_name)
    ptx = tl.compile(scatter("add", "int32", "acq_rel"), target=target_name).get_kernel_source()
    if target_name.startswith("cuda"):
        # release before, acquire after a relaxed update (NVPTX drops orderings
        # on atomicrmw)
        assert "fence.acq_rel.gpu" in ptx and "atom.global.add" in ptx


# -- errors --------------------------------------------------------------------


def compile_error(fn, target="cpu"):
    with pytest.raises((TileLangError, CompilationError)) as info:
        tl.compile(fn, target=target)
    return str(info.value)


@pytest.mark.parametrize("body,match", [
    ("T.atomic_or(A[0], 1.5)", "T.atomic_or needs an integer destination"),
    ("T.atomic_max(A[0:4], A[4:8], return_prev=True)", "a tile update has none"),
    ("T.atomic_addx2(A[T.Ramp(0, 1, 4)], A[4:6], return_prev=True)",
     "the index vector of the destination"),
    ("T.atomic_load(A[0], memory_order='release')",
     "T.atomic_load does not support memory_order='release'"),
    ("T.atomic_store(A[0], 1.0, memory_order='acquire')",
     "T.atomic_store does not support memory_order='acquire'"),
    ("T.atomic_max(L[0], 1.0)", "T.atomic_max updates global or shared memory"),
    ("T.atomic_addx4(A[0:3], A[4:7])", "must be 4 consecutive elements"),
])
def test_errors(body, match):
    fn = eval(f"lambda A, L: {body}")  # noqa: S307

    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            L = T.alloc_local((4,), "float32")
            fn(A, L)

    assert match in compile_error(main)
