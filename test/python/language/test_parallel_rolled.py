"""A T.Parallel with many iterations per thread whose body touches no
fragment runs its registers as a loop on GPUs (ParallelLoops.cpp,
lowerRolledParallel) instead of one copy of the body per register (128
unrolled float64 normal samples took 18 s to compile; TileLang's rand test
timed out). The indices come from the loop's register: padding past the
extents is masked, replicated instances write once, a loop-invariant local
scalar is read in every iteration. CPU and GPU (marked `gpu`) runs against
NumPy; compile-only for sm_80 and sm_90a."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put


def _scaled(rows, cols, threads):
    """B[i, j] = A[i, j] * s + i - j, with s a local scalar set before the
    loop; rows * cols / threads iterations per thread."""
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_local((1,), "float32")
            s[0] = 3.0
            for i, j in T.Parallel(rows, cols):
                B[i, j] = A[i, j] * s[0] + T.cast(i, "float32") - T.cast(j, "float32")

    return main


@pytest.mark.parametrize("rows, cols, threads", [(1, 200, 1), (8, 100, 32), (16, 130, 16), (3, 70, 2)])
def test_many_iterations_per_thread(rows, cols, threads, target, rng):
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    kernel = tl.compile(_scaled(rows, cols, threads), out_idx=[1], target=target)
    b = get(kernel(put(a, target)))
    i, j = np.indices((rows, cols))
    np.testing.assert_allclose(b, a * 3.0 + i - j, rtol=1e-6, atol=1e-5)


def _normal_samples(n):
    @T.prim_func
    def main(E: T.Tensor((n,), "float64")):
        with T.Kernel(1, threads=1):
            T.rng_init(42, 0, 0)
            for i in T.Parallel(n):
                E[i] = T.rng_rand_float(bit=64, dist="normal")

    return main


def test_a_long_loop_of_heavy_bodies_is_one_loop_body():
    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        ptx = tl.compile(_normal_samples(256), target=arch).get_source()
        # One store of a sample per loop body (unrolled: 256 of them, and
        # about 35 s of compile time here).
        stores = re.findall(r"st\.global\.(?:b|f)64", ptx)
        assert 1 <= len(stores) <= 4, (arch, len(stores))
        ptx = tl.compile(_scaled(16, 130, 16), target=arch).get_source()
        assert 1 <= len(re.findall(r"st\.global\.(?:b|f)32", ptx)) <= 4


def _strided_rows(tokens, features, threads):
    """TileLang's issue 2883: a T.Parallel of 64 x 8192 iterations (past the
    register budget of a thread, and once past the verifier's limit) over
    tensors with a symbolic row stride, copying the first row only."""
    stride = T.dynamic("stride")

    @T.prim_func
    def main(dst: T.StridedTensor((1, features), (stride, 1), "uint8"),
             src: T.StridedTensor((1, features), (stride, 1), "uint8")):
        with T.Kernel(1, threads=threads):
            for token, feature in T.Parallel(tokens, features):
                if token < 1:
                    dst[token, feature] = src[token, feature] + T.uint8(1)

    return main


@pytest.mark.parametrize("tokens, features, threads", [(64, 8192, 128), (4, 2000, 32)])
def test_loop_past_the_register_budget_runs_rolled(tokens, features, threads, target, rng):
    src = rng.integers(0, 255, size=(2, features), dtype=np.uint8)
    dst = np.zeros((2, features), dtype=np.uint8)
    kernel = tl.compile(_strided_rows(tokens, features, threads), target=target)
    src_d, dst_d = put(src[:1], target), put(dst[:1], target)
    kernel(dst_d, src_d)
    np.testing.assert_array_equal(get(dst_d), src[:1] + 1)


def test_loop_past_the_register_budget_compiles():
    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        ptx = tl.compile(_strided_rows(64, 8192, 128), target=arch).get_source()
        assert 1 <= len(re.findall(r"st\.global\.u8|st\.global\.b8", ptx)) <= 4, arch
