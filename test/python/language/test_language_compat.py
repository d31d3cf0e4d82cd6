"""TileLang's long tail of T.* names, with TileLang's meanings: dtype
objects, casts and bit helpers, allocation forms, loop forms, block
bindings, user layouts, and the TVM-level names that are an error naming
the missing feature."""

import re

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put
from tilelang_mlir.frontend.errors import TileLangError
from tilelang_mlir.base.errors import CompilationError


# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------


def test_dtype_objects_behave_as_tilelangs():
    assert T.dtype("float16") is T.float16
    assert T.dtype("float") == T.float32 == "float32"
    assert T.float16 == "float16" and T.float16 != "float32" and "bfloat16" == T.bfloat16
    assert T.float16 in ["float16", "bfloat16"]
    assert {T.float16: 1}["float16"] == 1
    assert str(T.dtype("half")) == "float16"
    assert T.dtype(torch.bfloat16) is T.bfloat16
    assert T.dtype(np.int8) is T.int8
    assert T.dtype(int) is T.int32 and T.dtype(float) is T.float32 and T.dtype(bool) is T.bool
    assert isinstance(T.float16, T.dtype) and not isinstance("float16", T.dtype)
    assert (T.float16.bits, T.uint32.bits, T.uint64.bits, T.float4_e2m1fn.bits) == (16, 32, 64, 4)
    assert (T.float16.bytes, T.uint16.bytes, T.int64.bytes) == (2, 2, 8)
    assert T.dtype("float16").as_torch() is torch.float16
    assert T.float8_e4m3fn.as_torch() is torch.float8_e4m3fn
    assert T.uint16.as_torch() is torch.uint16
    assert T.dtype("uint") is T.uint32 and T.long is T.int64 and T.double is T.float64
    with pytest.raises(TypeError, match="unknown dtype 'float17'"):
        T.dtype("float17")


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_unsigned_tensors_compute_unsigned(dtype, rng):
    """Shifts, division and comparisons of unsigned values are unsigned."""
    d = T.dtype(dtype)

    @T.prim_func
    def main(A: T.Tensor((32,), d), S: T.Tensor((32,), d), Q: T.Tensor((32,), d),
             G: T.Tensor((32,), "bool")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                S[i] = T.shift_right(A[i], 3)
                Q[i] = A[i] // 7
                G[i] = A[i] > T.shift_left(T.cast(1, d), d.bits - 1)

    kernel = tl.compile(main, target="cpu")
    top = 1 << d.bits
    a = rng.integers(0, top, 32, dtype=np.uint64).astype(np.dtype(dtype))
    a[0] = top - 1
    s, q = np.zeros_like(a), np.zeros_like(a)
    g = np.zeros(32, np.bool_)
    kernel(a, s, q, g)
    np.testing.assert_array_equal(s, a >> 3)
    np.testing.assert_array_equal(q, a // 7)
    np.testing.assert_array_equal(g, a > (np.dtype(dtype).type(1) << (d.bits - 1)))


def test_narrow_dtypes_without_arithmetic_are_an_error():
    @T.prim_func
    def main(A: T.Tensor((32,), T.float8_e4m3fnuz)):
        with T.Kernel(1, threads=32) as bx:
            pass

    with pytest.raises(TileLangError, match="not supported by tilelang-mlir: values and "
                                            "buffers of dtype float8_e4m3fnuz"):
        tl.compile(main, target="cpu")


# ---------------------------------------------------------------------------
# Scalar helpers
# ---------------------------------------------------------------------------


def test_cast_clamp_and_bit_helpers(target, rng):
    @T.prim_func
    def main(X: T.Tensor((64,), "float16"), N: T.Tensor((64,), "int32"),
             Y: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32"),
             B: T.Tensor((64, 6), "int32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                Y[i] = T.Cast(T.float32, X[i]) * 2
                C[i] = T.clamp(T.Cast("float32", X[i]), -0.5, 0.75)
                B[i, 0] = T.shift_left(1, N[i] % 16)
                B[i, 1] = T.shift_right(N[i], 2)
                B[i, 2] = T.bitwise_and(N[i], 0xF0)
                B[i, 3] = T.bitwise_or(N[i], 5)
                B[i, 4] = T.bitwise_xor(N[i], 0x55)
                B[i, 5] = T.bitwise_not(N[i])

    kernel = tl.compile(main, out_idx=[2, 3, 4], target=target)
    x = rng.standard_normal(64).astype(np.float16)
    n = rng.integers(-1000, 1000, 64).astype(np.int32)
    y, c, b = (get(t) for t in kernel(put(x, target), put(n, target)))
    np.testing.assert_allclose(y, x.astype(np.float32) * 2)
    np.testing.assert_allclose(c, np.clip(x.astype(np.float32), -0.5, 0.75))
    want = np.stack([1 << (n % 16), n >> 2, n & 0xF0, n | 5, n ^ 0x55, ~n], axis=1)
    np.testing.assert_array_equal(b, want)


def test_call_extern_maps_c_math_and_names_other_externs(target, rng):
    @T.prim_func
    def main(X: T.Tensor((32,), "float32"), Y: T.Tensor((32, 3), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                Y[i, 0] = T.call_extern("float32", "__expf", X[i])
                Y[i, 1] = T.call_extern("float32", "fmaxf", X[i], 0.25)
                Y[i, 2] = T.call_extern("float32", "sqrtf", X[i] * X[i])

    kernel = tl.compile(main, out_idx=[1], target=target)
    x = rng.standard_normal(32).astype(np.float32)
    y = get(kernel(put(x, target)))
    np.testing.assert_allclose(y[:, 0], np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(y[:, 1], np.maximum(x, 0.25))
    np.testing.assert_allclose(y[:, 2], np.abs(x), rtol=1e-6)

    @T.prim_func
    def bad(X: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                T.call_extern("handle", "my_plugin_decode", T.access_ptr(X[i], "rw"))

    # Element values are fine inside T.Parallel (each thread calls it for
    # its elements: TileKernels' __float2half_rz); a pointer is not.
    with pytest.raises(TileLangError, match="T.call_extern of 'my_plugin_decode' inside "
                                            "T.Parallel with a pointer argument"):
        tl.compile(bad, target="cpu")

    @T.prim_func
    def on_cpu(X: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(32):
                X[i] = T.call_extern("float32", "my_plugin_decode", X[i])

    # Any other name is a CUDA device function: the CPU target has none.
    with pytest.raises(CompilationError, match="`my_plugin_decode` of the program's CUDA C\\+\\+ "
                                               "source .*CPU backend"):
        tl.compile(on_cpu, target="cpu")


def test_dp4a_accumulates_four_int8_products(target, rng):
    @T.prim_func
    def main(A: T.Tensor((16,), "int8"), B: T.Tensor((16,), "int8"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            a = T.alloc_local((16,), "int8")
            b = T.alloc_local((16,), "int8")
            acc = T.alloc_local((1,), "int32")
            for k in T.serial(16):
                a[k] = A[k]
                b[k] = B[k]
            acc[0] = 7
            for k in T.serial(4):
                T.dp4a(a[k * 4], b[k * 4], acc[0])
            C[0] = acc[0]

    kernel = tl.compile(main, out_idx=[2], target=target)
    a = rng.integers(-128, 128, 16).astype(np.int8)
    b = rng.integers(-128, 128, 16).astype(np.int8)
    c = get(kernel(put(a, target), put(b, target)))
    assert c[0] == 7 + int(np.dot(a.astype(np.int32), b.astype(np.int32)))


def test_assume_checks_constants_and_accepts_runtime_facts(rng):
    @T.prim_func
    def main(X: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=8) as bx:
            T.assume(8 % 4 == 0)
            for i in T.Parallel(8):
                T.assume(X[i] >= 0)
                X[i] = X[i] + 1

    kernel = tl.compile(main, target="cpu")
    x = rng.integers(0, 9, 8).astype(np.int32)
    y = x.copy()
    kernel(y)
    np.testing.assert_array_equal(y, x + 1)

    @T.prim_func
    def bad(X: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=8) as bx:
            T.assume(8 % 3 == 0)

    with pytest.raises(TileLangError, match="T.assume: the condition is false"):
        tl.compile(bad, target="cpu")


# ---------------------------------------------------------------------------
# Allocation forms
# ---------------------------------------------------------------------------


def test_alloc_var_and_local_forms(target, rng):
    @T.prim_func
    def main(X: T.Tensor((4,), "int32"), Y: T.Tensor((7,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            a = T.alloc_var("int32", 3)
            b = T.alloc_var(T.int32, "local.var")
            c = T.alloc_var("int32", 5, "local.var")
            d = T.alloc_var("int32", init=X[0])
            e = T.alloc_local((4,), "int32", "local")
            f = T.alloc_buffer((4,), "int32", scope="shared")
            g = T.alloc_fragment((1,), "int32", "local")  # the scope wins, as in TileLang
            b = 11
            for k in T.serial(4):
                e[k] = X[k] * 2
                f[k] = X[k] + 1
            Y[0] = a
            Y[1] = b
            Y[2] = c
            Y[3] = d
            Y[4] = e[3]
            g[0] = X[1] - 1
            Y[5] = f[2]
            Y[6] = g[0]

    kernel = tl.compile(main, out_idx=[1], target=target)
    x = rng.integers(-50, 50, 4).astype(np.int32)
    y = get(kernel(put(x, target)))
    np.testing.assert_array_equal(y, [3, 11, 5, x[0], 2 * x[3], x[2] + 1, x[1] - 1])


@pytest.mark.parametrize("call, match", [
    ("T.alloc_global((8,), 'float32')", "call it outside `with T.Kernel"),
    ("T.alloc_buffer((8,), 'float32')", "T.alloc_buffer in scope 'global'"),
    ("T.alloc_local((8,), 'float32', 'texture')", "unknown scope 'texture'"),
    ("T.alloc_var('int32', 1, 'local.var', init=2)", "initial value is given twice"),
    ("T.alloc_reducer(8, 'float32', op='prod')", "op must be one of"),
])
def test_allocation_errors(call, match):
    err = _error_in_kernel(call)
    assert re.search(match, err.message), err.message
    assert err.location is not None and err.location.filename == __file__


def _error_in_kernel(call: str) -> TileLangError:
    """The error of compiling a kernel whose body is `call` (a T.* call as
    text) alone; the test fails if it compiles."""
    fn = eval(f"lambda: {call}")  # noqa: S307 (fixed test strings)

    @T.prim_func
    def main(X: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            fn()

    with pytest.raises(TileLangError) as info:
        tl.compile(main, target="cpu")
    return info.value


# ---------------------------------------------------------------------------
# Loops and block bindings
# ---------------------------------------------------------------------------


def test_serial_loop_and_block_binding(target, rng):
    @T.prim_func
    def main(X: T.Tensor((4, 16), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=32) as _:
            row = T.get_block_binding(0)
            acc = T.alloc_var("float32", 0.0)
            for k in T.Serial(16):
                acc = acc + X[row, k]
            for k in T.Serial(0, 16, 4, annotations={"pragma": 1}):
                acc = acc + X[row, k]
            Y[row] = acc + T.get_block_binding(2)

    kernel = tl.compile(main, out_idx=[1], target=target)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    y = get(kernel(put(x, target)))
    # float32 sums of 20 standard normals: a row summing near zero needs atol.
    np.testing.assert_allclose(y, x.sum(1) + x[:, ::4].sum(1), rtol=1e-5, atol=1e-5)


def persistent_kernel(M, N, blk, waves_of):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(waves_of, threads=64) as block_id:
            for bx, by in T.Persistent([T.ceildiv(M, blk), T.ceildiv(N, blk)], waves_of,
                                       block_id):
                for i, j in T.Parallel(blk, blk):
                    if bx * blk + i < M and by * blk + j < N:
                        C[bx * blk + i, by * blk + j] = A[bx * blk + i, by * blk + j] + 1

    return main


@pytest.mark.parametrize("sms", [1, 3, 7])
def test_persistent_loop_visits_every_tile_once(sms, target, rng):
    kernel = tl.compile(persistent_kernel(40, 56, 16, sms), target=target)
    a = rng.standard_normal((40, 56)).astype(np.float32)
    c = put(np.zeros_like(a), target)
    kernel(put(a, target), c)
    np.testing.assert_allclose(get(c), a + 1)


def parallel_nests(M=16, N=64):
    """TileLang's parallel loops written as nests: `for i in T.Parallel(M):
    for j in T.Parallel(N)` and TVM's lowercase `T.parallel` (the dsa_hisa
    pooling kernel) are one T.Parallel over (M, N), a fragment's elements
    spread over the threads; a T.parallel inside a T.Parallel body is the
    thread's own loop; T.parallel(start, stop) starts at `start`."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
             C: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((M, N), "float32")
            s = T.alloc_fragment((M,), "float32")
            T.copy(A, f)
            for i in T.Parallel(M):
                for j in T.Parallel(N):
                    f[i, j] = f[i, j] * 2 + i
            for i in T.parallel(M):
                for j in T.parallel(4, N):
                    if j >= N - 4:
                        f[i, j] = -j
            T.copy(f, B)
            for i in T.Parallel(M):
                s[i] = 0
                for k in T.parallel(4):
                    s[i] += A[i, k]
            T.copy(s, C)

    return main


def test_parallel_nests_are_one_parallel_loop(target, rng):
    M, N = 16, 64
    k = tl.compile(parallel_nests(M, N), target=target)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = put(np.zeros((M, N), np.float32), target)
    c = put(np.zeros(M, np.float32), target)
    k(put(a, target), b, c)
    want = a * 2 + np.arange(M, dtype=np.float32)[:, None]
    want[:, N - 4:] = -np.arange(N - 4, N, dtype=np.float32)
    np.testing.assert_allclose(get(b), want, rtol=1e-6)
    np.testing.assert_allclose(get(c), a[:, :4].sum(1), rtol=1e-5)
    if target == "cpu":
        for arch in ("cuda:sm_80", "cuda:sm_90a"):
            tl.compile(parallel_nests(M, N), target=arch)


def thread_bound(N=64, threads=32, loop=False):
    """TVM's thread loops inside T.Kernel (TileLang's dsa_hisa and gemv
    examples): `tx = T.thread_binding(...)` binds the thread index for the
    rest of the kernel, `for ty in T.thread_binding(...)` runs its body once
    in every thread; each row keeps its first Y[row] elements as -1."""

    @T.prim_func
    def main(X: T.Tensor((4, 2, N), "float32"), Y: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=(threads, 2)) as bx:
            tx = T.thread_binding(0, threads, thread="threadIdx.x")
            for ty in T.thread_binding(2, thread="threadIdx.y"):
                for j in T.serial(N // threads):
                    if j * threads + tx < Y[bx]:
                        X[bx, ty, j * threads + tx] = -1.0 - ty

    return main


def test_thread_binding_binds_the_thread_index():
    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        ptx = tl.compile(thread_bound(), target=arch).get_source()
        assert "%tid.x" in ptx and "%tid.y" in ptx

    @T.prim_func
    def other_extent(X: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.thread_binding(0, 64, thread="threadIdx.x")
            X[0] = tx

    with pytest.raises(TileLangError, match="the kernel has 32 along threadIdx.x"):
        tl.compile(other_extent, target="cuda:sm_90a")


@pytest.mark.gpu
def test_thread_binding_on_the_gpu(rng):
    N = 64
    x = torch.from_numpy(rng.standard_normal((4, 2, N)).astype(np.float32)).cuda()
    y = torch.tensor([3, 40, 64, 0], dtype=torch.int32, device="cuda")
    want = x.clone()
    for i in range(4):
        for t in range(2):
            want[i, t, :int(y[i])] = -1.0 - t
    tl.compile(thread_bound(N), target="cuda")(x, y)
    assert torch.equal(x, want)


# ---------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------


def dq_layout(dQ):
    # The fragment-friendly placement of TileLang's attention backward.
    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, d % 2,
                                                 4 * (l % 8) + (d % 8) // 2])


def layout_kernels(shape, make_layout):
    B, L, H, D = shape

    @T.prim_func
    def scatter(X: T.Tensor(shape, "float32"), dQ: T.Tensor(shape, "float32")):
        with T.Kernel(H, B, threads=64) as (bx, bz):
            T.annotate_layout({dQ: make_layout(dQ)})
            for i, j in T.Parallel(L, D):
                dQ[bz, i, bx, j] = X[bz, i, bx, j]

    @T.prim_func
    def gather(dQ: T.Tensor(shape, "float32"), O: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(L, 8), H, B, threads=64) as (bx, by, bz):
            T.annotate_layout({dQ: make_layout(dQ)})
            T.copy(dQ[bz, bx * 8:(bx + 1) * 8, by, :], O[bz, bx * 8:(bx + 1) * 8, by, :])

    return scatter, gather


def test_layout_places_the_elements_of_a_global_tensor(target, rng):
    shape = (2, 16, 3, 16)
    scatter, gather = layout_kernels(shape, dq_layout)
    k1 = tl.compile(scatter, target=target)
    k2 = tl.compile(gather, out_idx=[1], target=target)
    x = rng.standard_normal(shape).astype(np.float32)
    dq = put(np.zeros(shape, np.float32), target)
    k1(put(x, target), dq)
    stored = get(dq)
    # Where TileLang's layout puts each element, linearized in its output shape.
    b, l, h, d = np.indices(shape)
    out = [b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2]
    linear = np.zeros(shape, np.int64)
    for o, e in zip(out, [2, 2, 3, 2, 2, 32]):
        linear = linear * e + o
    want = np.empty(x.size, np.float32)
    want[linear.ravel()] = x.ravel()
    np.testing.assert_array_equal(stored.ravel(), want)
    o = get(k2(dq))
    np.testing.assert_array_equal(o, x.astype(np.float16))


def test_layout_copy_reads_zero_past_the_end(rng):
    # L = 12 is not a multiple of the 8-row tiles: the last tile reads past the end.
    shape = (1, 12, 1, 4)
    perm = lambda dQ: T.Layout(dQ.shape, lambda b, l, h, d: [b, h, d, l])  # noqa: E731
    scatter, gather = layout_kernels(shape, perm)
    x = rng.standard_normal(shape).astype(np.float32)
    dq = np.zeros(shape, np.float32)
    tl.compile(scatter, target="cpu")(x, dq)
    np.testing.assert_array_equal(dq.ravel(), x.transpose(0, 2, 3, 1).ravel())
    o = tl.compile(gather, out_idx=[1], target="cpu")(dq)
    np.testing.assert_array_equal(get(o), x.astype(np.float16))


@pytest.mark.parametrize("fn, match", [
    (lambda b, l, h, d: [b, l, h, d // 2], "one-to-one map onto a shape of the same size"),
    (lambda b, l, h, d: [b, l, h, d % 2, d % 2 + 0 * d], "sends two elements to the same"),
])
def test_layout_must_be_one_to_one(fn, match):
    @T.prim_func
    def main(dQ: T.Tensor((1, 8, 1, 4), "float32")):
        with T.Kernel(1, threads=32) as bx:
            T.annotate_layout({dQ: T.Layout(dQ.shape, fn)})

    with pytest.raises(TileLangError, match=match):
        tl.compile(main, target="cpu")


def test_fragment_layout_is_respected_by_layout_inference():
    @T.prim_func
    def main(X: T.Tensor((16, 8), "float32"), Y: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            f = T.alloc_fragment((16, 8), "float32")
            T.annotate_layout({f: T.Fragment((16, 8), forward_fn=lambda i, j: (
                (i % 8) * 4 + j // 2, (i // 8) * 2 + j % 2))})
            T.copy(X, f)
            T.copy(f, Y)

    kernel = tl.compile(main, target="cuda:sm_90a")
    ir = kernel.mlir("layout")
    assert "(d0 mod 8) * 4 + d1 floordiv 2" in ir
    x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    y = np.zeros_like(x)
    tl.compile(main, target="cpu")(x, y)
    np.testing.assert_array_equal(y, x)


# ---------------------------------------------------------------------------
# TVM-level names: errors that name the feature
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("call, match", [
    ("T.attr(0, 'reduce_scope', 0)", "T.attr"),
])
def test_tvm_level_names_are_errors(call, match):
    err = _error_in_kernel(call)
    assert f"not supported by tilelang-mlir: {match}" in err.message, err.message
    assert err.location is not None and err.location.filename == __file__


def test_layout_and_persistent_compile_for_sm90a():
    _, gather = layout_kernels((1, 16, 2, 16), dq_layout)
    k = tl.compile(gather, out_idx=[1], target="cuda:sm_90a")
    # The copy out of the laid-out tensor is a T.Parallel of placed loads.
    assert k.mlir("tile").count("tile.copy") == 0
    assert k.mlir("tile").count("tile.parallel") == 1
    assert k.get_source().count(".entry") == 1
    assert [g["const"] for g in k.grid] == [2, 2, 1]
    p = tl.compile(persistent_kernel(40, 56, 16, 3), target="cuda:sm_90a")
    # Three blocks walk the 3 x 4 tiles in a loop.
    assert [g["const"] for g in p.grid] == [3, 1, 1]
    assert "scf.for" in p.mlir("tile")


# ---------------------------------------------------------------------------
# im2col
# ---------------------------------------------------------------------------


def conv_kernel(N, H, W, C, F, K, S, D, P, block_M=32, block_N=16, block_K=16):
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), "float32"),
             kernel_flat: T.Tensor((K * K * C, F), "float32"),
             out_flat: T.Tensor((N * OH * OW, F), "float32")):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M),
                      threads=64) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), "float32")
            kernel_shared = T.alloc_shared((block_K, block_N), "float32")
            out_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(K * K * C, block_K), num_stages=2):
                T.im2col(data, data_shared, by, k_iter, K, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out_flat[by * block_M, bx * block_N])

    return main, OH, OW


@pytest.mark.parametrize("stride, dilation, pad", [(1, 1, 1), (2, 1, 0), (1, 2, 2)])
def test_im2col_convolution_matches_torch(stride, dilation, pad, target, rng):
    N, H, W, C, F, K = 2, 9, 7, 5, 16, 3
    main, OH, OW = conv_kernel(N, H, W, C, F, K, stride, dilation, pad)
    kernel = tl.compile(main, out_idx=[2], target=target)
    x = rng.standard_normal((N, H, W, C)).astype(np.float32)
    w = rng.standard_normal((K, K, C, F)).astype(np.float32)
    out = get(kernel(put(x, target), put(w.reshape(K * K * C, F), target)))
    ref = torch.nn.functional.conv2d(torch.from_numpy(x).permute(0, 3, 1, 2),
                                     torch.from_numpy(w).permute(3, 2, 0, 1),
                                     stride=stride, padding=pad, dilation=dilation)
    # On NVIDIA GPUs the float32 gemm runs on tf32 tensor cores (10 mantissa
    # bits): sums of 45 products are then good to ~1e-2; a wrong gather is O(1).
    tol = dict(rtol=1e-4, atol=1e-4) if target == "cpu" else dict(rtol=5e-3, atol=5e-2)
    np.testing.assert_allclose(out.reshape(N, OH, OW, F), ref.permute(0, 2, 3, 1).numpy(),
                               **tol)


def test_im2col_compiles_for_sm90a():
    main, _, _ = conv_kernel(2, 16, 16, 16, 32, 3, 1, 1, 1, block_M=64, block_N=32,
                             block_K=32)
    k = tl.compile(main, out_idx=[2], target="cuda:sm_90a")
    # im2col fills the shared tile in the frontend; the gemm stays a tensor-core gemm.
    assert k.mlir("tile").count("tile.gemm") == 1
    assert "mma.sync" in k.get_source()
    assert [g["const"] for g in k.grid] == [1, 8, 1]  # 32 filters, 2*16*16 pixels / 64


def test_layout_with_a_dynamic_dimension(rng):
    """A run-time size may be passed through a layout (bshd -> hsd in the
    varlen backward); copies past the end read zero and drop the writes."""
    UQ = T.dynamic("UQ")
    H, D = 2, 8
    perm = lambda dQ: T.Layout(dQ.shape, lambda l, h, d: [h, l, d])  # noqa: E731

    @T.prim_func
    def scatter(X: T.Tensor((UQ, H, D), "float32"), dQ: T.Tensor((UQ, H, D), "float32")):
        with T.Kernel(T.ceildiv(UQ, 4), threads=32) as bx:
            T.annotate_layout({dQ: perm(dQ)})
            for i, h, d in T.Parallel(4, H, D):
                if bx * 4 + i < UQ:
                    dQ[bx * 4 + i, h, d] = X[bx * 4 + i, h, d]

    @T.prim_func
    def gather(dQ: T.Tensor((UQ, H, D), "float32"), O: T.Tensor((UQ, H, D), "float32")):
        with T.Kernel(T.ceildiv(UQ, 4), H, threads=32) as (bx, by):
            T.annotate_layout({dQ: perm(dQ)})
            T.copy(dQ[bx * 4:(bx + 1) * 4, by, :], O[bx * 4:(bx + 1) * 4, by, :])

    x = rng.standard_normal((10, H, D)).astype(np.float32)
    dq, o = np.zeros_like(x), np.zeros_like(x)
    tl.compile(scatter, target="cpu")(x, dq)
    tl.compile(gather, target="cpu")(dq, o)
    np.testing.assert_array_equal(dq.ravel(), x.transpose(1, 0, 2).ravel())
    np.testing.assert_array_equal(o, x)


def test_atomic_add_keywords(rng):
    """A scalar atomic outside T.Parallel is every thread's (TileLang's
    meaning): with 16 threads each X[i] is added 16 times; memory orders
    are accepted, a previous value outside T.Parallel is refused on the
    CPU (each thread would get its own)."""
    @T.prim_func
    def main(X: T.Tensor((16,), "float32"), Y: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.serial(16):
                T.atomic_add(Y[0], X[i], memory_order="relaxed")
                T.atomic_add(Y[0], X[i], memory_order="seq_cst")

    x = rng.standard_normal(16).astype(np.float32)
    y = np.zeros(1, np.float32)
    tl.compile(main, target="cpu")(x, y)
    # (A float32 sum in another order: the error scales with the terms, not
    # with a sum that may cancel to near zero.)
    np.testing.assert_allclose(y[0], 32 * x.sum(), rtol=1e-5, atol=1e-5 * 32 * np.abs(x).sum())

    @T.prim_func
    def prev(Y: T.Tensor((1,), "float32"), Z: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            Z[0] = T.atomic_add(Y[0], 1.0, return_prev=True)

    with pytest.raises(TileLangError, match="previous value to each of the 16 threads"):
        tl.compile(prev, target="cpu")

    @T.prim_func
    def bad(Y: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            T.atomic_add(Y[0], 1.0, memory_order="sequential")

    with pytest.raises(TileLangError, match="does not support memory_order='sequential'"):
        tl.compile(bad, target="cpu")


# ---------------------------------------------------------------------------
# Views of global tensors
# ---------------------------------------------------------------------------


def test_reshape_view_and_tensor_data_views(target, rng):
    @T.prim_func
    def main(X: T.Tensor((4, 6, 8), "float32"), Y: T.Tensor((24, 8), "float32"),
             Z: T.Tensor((8, 24), "float32"), W: T.Tensor((4, 48), "float32")):
        with T.Kernel(1, threads=64) as bx:
            flat = T.reshape(X, (24, 8))
            rows = T.Tensor((8, 24), "float32", X.data)
            same = T.view(W)
            s = T.alloc_shared((24, 8), "float32")
            T.copy(flat, s)
            T.copy(s, Y)
            for i, j in T.Parallel(8, 24):
                Z[i, j] = rows[i, j] * 2
            T.copy(T.reshape(X, (4, 48)), same)

    kernel = tl.compile(main, out_idx=[1, 2, 3], target=target)
    x = rng.standard_normal((4, 6, 8)).astype(np.float32)
    y, z, w = (get(t) for t in kernel(put(x, target)))
    np.testing.assert_array_equal(y, x.reshape(24, 8))
    np.testing.assert_array_equal(z, x.reshape(8, 24) * 2)
    np.testing.assert_array_equal(w, x.reshape(4, 48))


def test_a_var_assigned_a_var_takes_its_value(target, rng):
    # TileLang's var names stand for values: `top2 = top1` copies
    # (deepseek-ai/TileKernels' top-2 scan); `x = T.alloc_var(...)` is a new
    # var, the branch's own.
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), O: T.Tensor((3,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            top1 = T.alloc_var("float32", init=-T.infinity("float32"))
            top2 = T.alloc_var("float32", init=-T.infinity("float32"))
            for i in T.serial(64):
                if A[i] > top1:
                    top2 = top1
                    top1 = A[i]
                elif A[i] > top2:
                    top2 = A[i]
            x = T.alloc_var("float32", init=1.0)
            if A[0] > -100.0:
                x = T.alloc_var("float32", init=5.0)  # the branch's own var
                O[2] = x
            O[0] = top1
            O[1] = top2

    kernel = tl.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal(64).astype(np.float32)
    o = get(kernel(put(a, target)))
    np.testing.assert_array_equal(o, [np.sort(a)[-1], np.sort(a)[-2], 5.0])


def test_view_of_vector_elements_as_lanes(target, rng):
    # deepseek-ai/TileKernels keeps an amax in bfloat16x2 pairs and reads it
    # as T.view(amax, (2 n,), T.bfloat16); the lanes and the pairs are one
    # storage.
    @T.prim_func
    def main(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32"),
             Z: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            pair = T.alloc_local((2, 2), T.float32x2)
            flat = T.view(pair, (8,), T.float32)
            one = T.alloc_var(T.float32x2)
            both = T.view(one, (2,), "float32")
            for i in T.serial(8):
                flat[i] = X[i] * 2
            both[0] = X[0]
            both[1] = X[7]
            for i in T.serial(4):
                Y[2 * i] = flat[2 * i + 1]
                Y[2 * i + 1] = flat[2 * i]
                Z[i] = both[i % 2]

    kernel = tl.compile(main, out_idx=[1, 2], target=target)
    x = rng.standard_normal(8).astype(np.float32)
    y, z = (get(t) for t in kernel(put(x, target)))
    np.testing.assert_array_equal(y, (x * 2).reshape(4, 2)[:, ::-1].reshape(8))
    np.testing.assert_array_equal(z, [x[0], x[7], x[0], x[7]])
    with pytest.raises(TileLangError, match="does not hold the 8 lanes"):
        @T.prim_func
        def bad(X: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                pair = T.alloc_local((4,), T.float32x2)
                T.view(pair, (6,), T.float32)

        tl.compile(bad, target="cpu")


def test_view_of_a_symbolic_shape(target, rng):
    # deepseek-ai/TileKernels flattens a (num_tokens, num_topk) tensor,
    # num_tokens dynamic, and walks it with a thread-strided loop.
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n, 3), "int32"), B: T.Tensor((n, 3), "int32")):
        with T.Kernel(2, threads=32) as bx:
            flat_a = T.view(A, (n * 3,))
            flat_b = T.reshape(B, (n * 3,))
            for i in T.Parallel(32):
                for k in T.serial(bx * 32 + i, n * 3, 64):
                    flat_b[k] = flat_a[k] * 2 + k

    kernel = tl.compile(main, out_idx=[1], target=target)
    for rows in (37, 5):
        a = rng.integers(-100, 100, (rows, 3)).astype(np.int32)
        b = get(kernel(put(a, target)))
        np.testing.assert_array_equal(b, a * 2 + np.arange(rows * 3).reshape(rows, 3))


@pytest.mark.parametrize("body, match", [
    (lambda X: T.reshape(X, (5, 8)), "does not have the size of"),
    (lambda X: T.view(X, (4, 8), "int16"), "do not cover 'X'"),
    (lambda X: T.reshape(T.alloc_var("float32"), (1,)), "a scalar has no shape"),
    (lambda X: T.view(0, (2, 4)), "T.view takes a buffer, got int 0"),
])
def test_view_errors(body, match):
    @T.prim_func
    def main(X: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            body(X)

    with pytest.raises(TileLangError, match=match):
        tl.compile(main, target="cpu")


def test_slice_bounds_from_loads_through_a_loaded_index(target, rng):
    """`K[bos + s : bos + s + 32]` with `bos = Offsets[i_n]` and i_n itself
    loaded (DeepSeek's NSA varlen forward): both bounds read the same loads,
    so the extent is the constant 32 (it was an unknown `%v - %v`)."""
    @T.prim_func
    def gather(K: T.Tensor((256, 16), "float32"), Off: T.Tensor((4,), "int32"),
               Idx: T.Tensor((8,), "int32"), O: T.Tensor((8, 32, 16), "float32")):
        with T.Kernel(1, threads=32):
            Ks = T.alloc_shared((32, 16), "float32")
            i_n = Idx[0]
            bos = Off[i_n]
            for i in T.Pipelined(8, num_stages=2):
                s = Idx[i] * 32
                if s >= 0:
                    T.copy(K[bos + s:bos + s + 32, :], Ks)
                    T.copy(Ks, O[i, :, :])

    k = rng.standard_normal((256, 16)).astype(np.float32)
    off = np.array([0, 16, 40, 64], np.int32)
    idx = np.array([2, 0, 3, 5, -1, 1, 4, 0], np.int32)
    out = put(np.zeros((8, 32, 16), np.float32), target)
    tl.compile(gather, target=target)(put(k, target), put(off, target), put(idx, target), out)
    want = np.zeros((8, 32, 16), np.float32)
    for i, v in enumerate(idx):
        if v >= 0:
            start = off[idx[0]] + v * 32
            want[i] = k[start:start + 32]
    np.testing.assert_array_equal(get(out), want)
