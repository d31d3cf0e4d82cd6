"""The eager program style: `@tl.jit` on the tile program itself, with
`T.const` sizes, parameters declared by annotation statements in the body
and `T.empty` outputs (frontend/eager.py).

Each program runs on the CPU on random inputs and is checked against NumPy
or torch: compiled with `f.compile(M=..., ...)`, and called with tensors,
which binds the sizes from their shapes and compiles once per new shape.
"""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir import TileLangError


def _matmul(A, B, block_M, block_N, block_K, dtype=T.float32, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])

    return C


matmul = tl.jit(target="cpu")(_matmul)

@tl.jit(target="cpu")
def add_sub(A, B, block_M, block_N, in_dtype, out_dtype, threads=64):
    M, N = T.const("M, N")

    A: T.Tensor((M, N), in_dtype)
    Sum = T.empty([M, N], out_dtype)  # a list shape, between the annotations
    B: T.Tensor((M, N), in_dtype)
    Diff = T.empty((M, N), dtype=out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            a = A[by * block_M + i, bx * block_N + j]
            b = B[by * block_M + i, bx * block_N + j]
            Sum[by * block_M + i, bx * block_N + j] = a + b
            Diff[by * block_M + i, bx * block_N + j] = a - b

    return Diff, Sum


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_compile_with_sizes_by_name(rng):
    kernel = matmul.compile(M=64, N=96, K=32, block_M=32, block_N=32, block_K=16)
    assert [p.name for p in kernel.params] == ["A", "B", "C"]
    assert kernel.out_idx == [2]
    a, b = _rand(rng, 64, 32), _rand(rng, 32, 96)
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_call_with_tensors_binds_sizes_and_caches(rng):
    matmul._kernels.clear()
    a, b = _rand(rng, 64, 32), _rand(rng, 32, 64)
    np.testing.assert_allclose(matmul(a, b, 32, 32, 16), a @ b, rtol=1e-4, atol=1e-4)
    assert len(matmul._kernels) == 1
    # The same shapes and values: the same kernel, no new compile.
    a2, b2 = _rand(rng, 64, 32), _rand(rng, 32, 64)
    np.testing.assert_allclose(matmul(a2, b2, block_M=32, block_N=32, block_K=16), a2 @ b2,
                               rtol=1e-4, atol=1e-4)
    assert len(matmul._kernels) == 1
    # A new M: compiled again, for that shape.
    a3 = _rand(rng, 96, 32)
    np.testing.assert_allclose(matmul(a3, b, 32, 32, 16), a3 @ b, rtol=1e-4, atol=1e-4)
    assert len(matmul._kernels) == 2
    kernels = [k for k, _, _ in matmul._kernels.values()]
    assert sorted(k.params[0].shape for k in kernels) == [(64, 32), (96, 32)]
    # compile() with the same sizes finds the kernel of the call.
    assert matmul.compile(M=96, N=64, K=32, block_M=32, block_N=32, block_K=16) in kernels


def test_call_with_torch_tensors(rng):
    a = torch.from_numpy(_rand(rng, 32, 64))
    b = torch.from_numpy(_rand(rng, 64, 32))
    c = matmul(a, b, 16, 16, 32)
    assert isinstance(c, torch.Tensor)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)


def test_several_outputs_in_return_order(rng):
    a, b = _rand(rng, 48, 32), _rand(rng, 48, 32)
    # The dtypes as T.float32 and as a string: both spellings.
    diff, total = add_sub(a, b, 16, 16, T.float32, "float32")
    np.testing.assert_allclose(diff, a - b, rtol=1e-6)
    np.testing.assert_allclose(total, a + b, rtol=1e-6)
    kernel = add_sub.compile(M=48, N=32, block_M=16, block_N=16, in_dtype="float32",
                             out_dtype=T.float32)
    # Inputs in the order of their annotations, then the outputs; the kernel
    # returns them in the order of the `return`.
    assert [p.name for p in kernel.params] == ["A", "B", "Sum", "Diff"]
    assert kernel.out_idx == [3, 2]
    diff, total = kernel(a, b)
    np.testing.assert_allclose(total, a + b, rtol=1e-6)


def test_trace_time_arithmetic_defaults_and_scalar_parameter(rng):
    @tl.jit(target="cpu")
    def pool_rows(X, alpha, block=16, dtype="float32"):
        M, N = T.const("M, N")
        half = N // 2  # Python arithmetic on a size
        assert N % 2 == 0, "N must be even"
        X: T.Tensor((M, N), dtype)
        alpha: T.float32  # a runtime scalar argument
        Y = T.empty((M, half), dtype)
        with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
            for i, j in T.Parallel(block, half):
                Y[bx * block + i, j] = (X[bx * block + i, 2 * j] + X[bx * block + i, 2 * j + 1]) * alpha
        return Y

    x = _rand(rng, 32, 16)
    y = pool_rows(x, 0.5)
    np.testing.assert_allclose(y, (x[:, 0::2] + x[:, 1::2]) * 0.5, rtol=1e-6)
    kernel = pool_rows.compile(M=32, N=16)
    assert [p.name for p in kernel.params] == ["X", "alpha", "Y"]
    np.testing.assert_allclose(kernel(x, 2.0), (x[:, 0::2] + x[:, 1::2]) * 2.0, rtol=1e-6)
    with pytest.raises(TileLangError, match="N must be even"):
        pool_rows.compile(M=32, N=15)


def test_single_const_with_dtype_and_in_place_tensor(rng):
    @tl.jit(target="cpu")
    def axpy(X, Y, a):
        n = T.const("n", T.int32)
        X: T.Tensor((n,), T.float32)
        Y: T.Tensor((n,), T.float32)  # written in place; nothing returned
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    Y[bx * 32 + i] = a * X[bx * 32 + i] + Y[bx * 32 + i]

    x, y = _rand(rng, 100), _rand(rng, 100)
    want = 3.0 * x + y
    assert axpy(x, y, 3.0) is None
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_dynamic_size_in_eager_program_compiles_once(rng):
    @tl.jit(target="cpu")
    def row_sums(X, block):
        N = T.const("N")
        M = T.dynamic("m")
        X: T.Tensor((M, N), T.float32)
        R = T.empty((M,), T.float32)
        with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
            tile = T.alloc_fragment((block, N), T.float32)
            r = T.alloc_fragment((block,), T.float32)
            T.copy(X[bx * block, 0], tile)
            T.reduce_sum(tile, r, dim=1)
            T.copy(r, R[bx * block])
        return R

    for m in (32, 64):
        x = _rand(rng, m, 8)
        np.testing.assert_allclose(row_sums(x, 16), x.sum(1), rtol=1e-5, atol=1e-5)
    # m is a runtime size: one kernel serves both.
    assert len({id(k) for k, _, _ in row_sums._kernels.values()}) == 1


def test_classic_factory_still_works(rng):
    @tl.jit(out_idx=[1], target="cpu")
    def double(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(n):
                    B[i] = A[i] * 2.0

        return main

    assert double.style == "factory"
    a = _rand(rng, 64)
    np.testing.assert_allclose(double(64)(a), a * 2)
    assert matmul.style == "eager"


# -- errors --------------------------------------------------------------------------


@tl.jit(target="cpu")
def transpose_add(A, B, block):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B: T.Tensor((N, M), T.float32)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
        for i, j in T.Parallel(block, N):
            C[bx * block + i, j] = A[bx * block + i, j] + B[j, bx * block + i]
    return C


def test_error_const_never_bound():
    with pytest.raises(TileLangError, match=r"T.const 'N' of 'transpose_add' has no value"):
        transpose_add.compile(M=32, block=16)


def test_error_unknown_size_name():
    with pytest.raises(TileLangError, match=r"no parameter or T.const named 'P'"):
        transpose_add.compile(M=32, N=8, P=3, block=16)


def test_error_shared_size_mismatch():
    a = np.zeros((32, 8), np.float32)
    with pytest.raises(ValueError, match=r"size 'M' .* 32 in dimension 0 of argument 'A' but "
                                         r"16 in dimension 1 of argument 'B'"):
        transpose_add(a, np.zeros((8, 16), np.float32), 16)


def test_error_rank_and_dtype_name_the_parameter():
    a = np.zeros((32, 8), np.float32)
    with pytest.raises(ValueError, match=r"argument 'B' of 'transpose_add' must have rank 2"):
        transpose_add(a, np.zeros((8,), np.float32), 16)
    with pytest.raises(TypeError, match=r"argument 'B' .* must have dtype float32, got float64"):
        transpose_add(a, np.zeros((8, 32), np.float64), 16)


def test_error_tensor_parameter_without_annotation():
    a, b = np.zeros((32, 8), np.float32), np.zeros((8, 32), np.float32)
    with pytest.raises(TileLangError, match=r"argument 'block' .* is a tensor, but the body"):
        transpose_add(a, b, block=np.zeros(3, np.float32))
    with pytest.raises(TypeError, match=r"missing the runtime argument 'B'"):
        transpose_add(a, block=16)


def test_error_outputs_must_be_returned():
    @tl.jit(target="cpu")
    def not_returned(A):
        M = T.const("M")
        A: T.Tensor((M,), T.float32)
        C = T.empty((M,), T.float32)
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(M):
                C[i] = A[i]

    with pytest.raises(TileLangError, match=r"does not return its T.empty output\(s\) 'C'"):
        not_returned(np.zeros(8, np.float32))

    @tl.jit(target="cpu")
    def returns_input(A):
        M = T.const("M")
        A: T.Tensor((M,), T.float32)
        return A

    with pytest.raises(TileLangError, match=r"returns only tensors made by T.empty"):
        returns_input.compile(M=8)


def test_error_out_idx_on_eager_program():
    with pytest.raises(ValueError, match=r"declares its outputs with T.empty"):
        tl.jit(out_idx=[1], target="cpu")(transpose_add.__wrapped__).compile(M=8, N=8, block=8)


def test_error_const_and_empty_outside_eager_programs():
    with pytest.raises(TileLangError, match=r"T.const can only be used in the body of a "
                                            r"@tilelang.jit function written in the eager"):
        T.const("M")
    with pytest.raises(TileLangError, match=r"T.empty can only be used"):
        T.empty((4,), T.float32)

    @T.prim_func
    def classic(A: T.Tensor((8,), T.float32)):
        M = T.const("M")  # noqa: F841
        with T.Kernel(1, threads=32) as bx:  # noqa: F841
            pass

    with pytest.raises(TileLangError, match=r"T.const can only be used") as e:
        tl.compile(classic, target="cpu")
    assert e.value.location is not None and e.value.location.line > 0


def test_error_empty_inside_kernel():
    @tl.jit(target="cpu")
    def late(A):
        M = T.const("M")
        A: T.Tensor((M,), T.float32)
        with T.Kernel(1, threads=32) as bx:  # noqa: F841
            C = T.empty((M,), T.float32)
        return C

    with pytest.raises(TileLangError, match=r"T.empty must come before `with T.Kernel"):
        late.compile(M=8)


# -- CUDA: compiles without a GPU ------------------------------------------------------


def test_eager_program_reaches_ptx():
    gemm_fp16 = tl.jit(target="cuda:sm_90a")(_matmul)
    kernel = gemm_fp16.compile(M=512, N=512, K=256, block_M=128, block_N=128, block_K=32,
                               dtype=T.float16)
    assert str(kernel.target) == "cuda:sm_90a"
    assert kernel.params[0].dtype == T.float16
    assert kernel.out_idx == [2]
    assert ".entry" in kernel.ptx and "wgmma" in kernel.ptx


# -- autotuning an eager program ---------------------------------------------------------


def test_autotune_eager_program(tmp_path, monkeypatch, rng):
    from tilelang_mlir import autotuner

    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILELANG_MLIR_AUTOTUNE_QUIET", "1")
    monkeypatch.setattr(autotuner.cache, "_MEMORY", {})

    configs = [dict(block_M=16, block_N=16, block_K=16), dict(block_M=32, block_N=32, block_K=16)]
    tuned_mm = tl.autotune(configs=configs, warmup=1, rep=3,
                           ref_prog=lambda A, B: A @ B)(tl.jit(target="cpu")(_matmul))

    # Called with tensors: tuned for their shapes, the best kernel runs on them.
    a, b = _rand(rng, 64, 32), _rand(rng, 32, 64)
    np.testing.assert_allclose(tuned_mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
    # compile() with the sizes by name: the best kernel.
    kernel = tuned_mm.compile(M=64, N=64, K=32)
    result = kernel.autotune_result
    assert result.best_config in configs
    assert len(result.timings) == 2
    np.testing.assert_allclose(kernel(a, b), a @ b, rtol=1e-4, atol=1e-4)


@T.macro
def _copy_tiles(A, B):
    M, N = A.shape
    M_, N_ = B.shape
    assert M == M_, "the sizes are read from both tensors"
    assert N == N_
    with T.Kernel(T.ceildiv(M, 32), T.ceildiv(N, 32), threads=64) as (bx, by):
        T.copy(A[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32],
               B[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32])


@tl.jit(target="cpu")
def _copy_by_macro(A, B):
    N = T.dynamic("N")
    M = T.const("M")
    A: T.Tensor[[N, M], T.float32]
    B: T.Tensor[[N, M], T.float32]
    _copy_tiles(A, B)


def test_a_macro_that_opens_the_kernel_before_any_with(rng):
    """The body's first statement is a macro call whose body opens the
    T.Kernel: the size probe runs it (it aborted the interpreter), and the
    macro's asserts on one symbolic size read from two shapes hold at
    compile time."""
    for rows in (64, 96):
        a = torch.from_numpy(_rand(rng, rows, 64))
        b = torch.zeros_like(a)
        _copy_by_macro(a, b)
        assert torch.equal(a, b)


def test_packed_float4_tensor_binds_logical_sizes():
    """A float4 tensor comes as bytes holding two elements each (int8,
    uint8 or torch.float4_e2m1fn_x2): T.const sizes and strides bound from
    it count elements, as in TileLang (its issue 2292)."""

    @tl.jit(target="cpu")
    def sizes(A):
        M, K, S = T.const("M K S")
        A: T.StridedTensor((M, K), (S, 1), T.float4_e2m1fn)
        Out = T.empty((3,), T.int32)
        with T.Kernel(1, threads=1):
            Out[0] = M
            Out[1] = K
            Out[2] = S
        return Out

    packed = np.zeros((8, 24), dtype=np.uint8)
    np.testing.assert_array_equal(sizes(packed), [8, 48, 48])
    np.testing.assert_array_equal(sizes(packed[::2, :16]), [4, 32, 96])
    np.testing.assert_array_equal(sizes(torch.zeros((6, 5), dtype=torch.int8)), [6, 10, 10])


@tl.jit(target="cpu")
def scale_shift(A, block_M: int = 16, **opts):
    """**opts: the keywords that name no parameter, a compile-time dict in
    the body (TileLang's eager functions take one)."""
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
        for i, j in T.Parallel(block_M, N):
            if bx * block_M + i < M:
                B[bx * block_M + i, j] = (A[bx * block_M + i, j] * opts.get("factor", 1.0)
                                          + len(opts.get("axis", ())))
    return B


def test_eager_var_keyword_arguments():
    a = torch.randn(37, 8)
    torch.testing.assert_close(scale_shift(a), a)
    torch.testing.assert_close(scale_shift(a, factor=3.0, axis=[1, 2]), a * 3.0 + 2)
    torch.testing.assert_close(scale_shift(a, block_M=8, factor=-1.0), -a)
    # A tensor is no compile-time value.
    with pytest.raises(TypeError, match=r"'t' is a tensor.*\*\*opts holds compile-time values"):
        scale_shift(a, t=a)
