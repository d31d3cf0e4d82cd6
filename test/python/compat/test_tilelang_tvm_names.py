"""TileLang's T names that come from TVM's script namespace and its dtype
helpers (issue 43): T.break_loop / T.continue_loop, T.likely, T.cdiv,
T.broadcast / T.ramp, T.var, T.meta_var, T.boolean, the wider bfloat16
vectors, T.get_tvm_dtype and the float4/f8f6f4 predicates, T.AnyDType, and
the classes user code names (T.PrimFunc, T.JITFunc, T.KernelLaunchFrame).
Kernels run on random inputs against NumPy (CPU target; the same kernels
under the `gpu` marker) and compile for sm_80 / sm_90a; each misuse is a
named error."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir import TileLangError


def _device(target):
    return "cuda" if target == "cuda" else "cpu"


def _compiles_for_gpus(program):
    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        tl.compile(program, target=arch)


# ---------------------------------------------------------------------------
# T.break_loop / T.continue_loop
# ---------------------------------------------------------------------------


def _reference_exits(a):
    """Per row: the sum of the even values before the first negative one
    (odd values skipped)."""
    out = []
    for row in a:
        s = 0
        for v in row:
            if v < 0:
                break
            if v % 2:
                continue
            s += v
        out.append(s)
    return np.array(out, dtype=np.int32)


@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "evaluate"])
def test_break_and_continue_loop(target, rng, wrapped):
    R, N = 16, 24

    if wrapped:
        @T.prim_func
        def exits(A: T.Tensor((R, N), T.int32), B: T.Tensor((R,), T.int32)):
            with T.Kernel(1, threads=R) as _:
                for r in T.Parallel(R):
                    acc = T.alloc_var(T.int32, 0)
                    for j in T.serial(N):
                        if A[r, j] < 0:
                            T.evaluate(T.break_loop())
                        if A[r, j] % 2 != 0:
                            T.evaluate(T.continue_loop())
                        acc += A[r, j]
                    B[r] = acc
    else:
        @T.prim_func
        def exits(A: T.Tensor((R, N), T.int32), B: T.Tensor((R,), T.int32)):
            with T.Kernel(1, threads=R) as _:
                for r in T.Parallel(R):
                    acc = T.alloc_var(T.int32, 0)
                    for j in T.serial(N):
                        if A[r, j] < 0:
                            T.break_loop()
                        if A[r, j] % 2 != 0:
                            T.continue_loop()
                        acc += A[r, j]
                    B[r] = acc

    a = rng.integers(-3, 40, size=(R, N)).astype(np.int32)
    kernel = tl.compile(exits, target=target)
    A = torch.from_numpy(a).to(_device(target))
    B = torch.full((R,), -7, dtype=torch.int32, device=_device(target))
    kernel(A, B)
    np.testing.assert_array_equal(B.cpu().numpy(), _reference_exits(a))
    if target == "cpu":
        _compiles_for_gpus(exits)


def test_break_loop_errors():
    @T.prim_func
    def in_parallel(A: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=8) as _:
            for i in T.Parallel(8):
                if A[i] < 0:
                    T.continue_loop()

    with pytest.raises(TileLangError, match="`continue` outside a sequential loop"):
        tl.compile(in_parallel, target="cpu")

    @T.prim_func
    def as_value(A: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=8) as _:
            for i in T.serial(8):
                x = T.break_loop()  # noqa: F841
                A[i] = 0

    with pytest.raises(TileLangError, match=r"T.break_loop\(\) is a statement"):
        tl.compile(as_value, target="cpu")


# ---------------------------------------------------------------------------
# T.likely, T.cdiv, T.boolean
# ---------------------------------------------------------------------------


def test_likely_cdiv_boolean(target, rng):
    N = 64

    @T.prim_func
    def exprs(A: T.Tensor((N,), T.int32), B: T.Tensor((N,), T.int32),
              C: T.Tensor((N,), T.int32), D: T.Tensor((N,), T.int32)):
        with T.Kernel(T.cdiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                k = bx * 32 + i
                if T.likely(A[k] > 0):
                    B[k] = A[k]
                else:
                    B[k] = -A[k]
                C[k] = T.cdiv(T.abs(A[k]) + 1, 3)
                D[k] = T.if_then_else(T.boolean(A[k] % 3), 1, 0)

    a = rng.integers(-50, 50, size=N).astype(np.int32)
    kernel = tl.compile(exprs, target=target)
    dev = _device(target)
    ins = torch.from_numpy(a).to(dev)
    outs = [torch.zeros(N, dtype=torch.int32, device=dev) for _ in range(3)]
    kernel(ins, *outs)
    np.testing.assert_array_equal(outs[0].cpu().numpy(), np.abs(a))
    np.testing.assert_array_equal(outs[1].cpu().numpy(), -(-(np.abs(a) + 1) // 3))
    np.testing.assert_array_equal(outs[2].cpu().numpy(), (a % 3 != 0).astype(np.int32))
    if target == "cpu":
        _compiles_for_gpus(exprs)
    assert T.cdiv(7, 2) == 4 and T.cdiv(8, 2) == 4
    assert T.boolean == "bool" and T.boolean is T.bool
    assert T.likely(True) is True


def test_likely_errors():
    @T.prim_func
    def on_float(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=8) as _:
            for i in T.Parallel(8):
                if T.likely(A[i]):
                    A[i] = 0.0

    with pytest.raises(TileLangError, match="T.likely takes a boolean or integer condition"):
        tl.compile(on_float, target="cpu")

    @T.prim_func
    def on_vector(A: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            if T.likely(A[T.ramp(0, 1, 4)]):
                A[0] = 0

    with pytest.raises(TileLangError, match="T.likely takes a scalar condition"):
        tl.compile(on_vector, target="cpu")


# ---------------------------------------------------------------------------
# T.broadcast / T.ramp (TVM's lower-case vector nodes)
# ---------------------------------------------------------------------------


def test_broadcast_and_ramp(target, rng):
    @T.prim_func
    def vec(A: T.Tensor((32,), T.float32), s: T.Tensor((1,), T.float32),
            B: T.Tensor((8, 4), T.float32)):
        with T.Kernel(1, threads=1) as _:
            for t in T.serial(8):
                B[t, T.ramp(0, 1, 4)] = A[T.ramp(t * 4, 1, 4)] * T.broadcast(s[0], 4)

    a = rng.standard_normal(32).astype(np.float32)
    sc = rng.standard_normal(1).astype(np.float32)
    kernel = tl.compile(vec, target=target)
    dev = _device(target)
    B = torch.zeros((8, 4), dtype=torch.float32, device=dev)
    kernel(torch.from_numpy(a).to(dev), torch.from_numpy(sc).to(dev), B)
    np.testing.assert_allclose(B.cpu().numpy(), (a * sc[0]).reshape(8, 4), rtol=1e-6)
    assert T.broadcast is T.Broadcast and T.ramp is T.Ramp
    if target == "cpu":
        _compiles_for_gpus(vec)


# ---------------------------------------------------------------------------
# T.var, T.meta_var
# ---------------------------------------------------------------------------


def test_var_in_and_outside_a_program(target, rng):
    n = T.var("int32", "n")
    assert isinstance(n, T.Var) and n.name == "n"

    @T.prim_func
    def scaled(A: T.Tensor((n,), T.int32), k: T.int32, B: T.Tensor((n,), T.int32)):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            v = T.var(T.int32, "twice_k")
            T.let(v, k * 2)
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    B[bx * 32 + i] = A[bx * 32 + i] * v

    kernel = tl.compile(scaled, target=target)
    dev = _device(target)
    for size in (40, 97):
        a = rng.integers(-100, 100, size=size).astype(np.int32)
        B = torch.zeros(size, dtype=torch.int32, device=dev)
        kernel(torch.from_numpy(a).to(dev), 3, B)
        np.testing.assert_array_equal(B.cpu().numpy(), a * 6)
    with pytest.raises(TypeError, match="needs an integer dtype"):
        T.var("float32", "x")
    with pytest.raises(TypeError, match="unknown dtype"):
        T.var("float17", "x")


def test_meta_var(target, rng):
    rows, cols = T.meta_var((4, 8))
    assert isinstance(rows, T.meta_var) and rows.value == 4

    @T.prim_func
    def meta(A: T.Tensor((4, 8), T.float32), B: T.Tensor((4, 8), T.float32)):
        with T.Kernel(1, threads=32) as _:
            m, k = T.meta_var((4, 8))  # Python ints: usable as static shapes
            F = T.alloc_fragment((m, k), T.float32)
            scale = T.meta_var(2.5)
            shift: T.float32 = T.meta_var(0.5)
            T.copy(A, F)
            for i, j in T.Parallel(m, k):
                F[i, j] = F[i, j] * scale + shift
            T.copy(F, B)

    a = rng.standard_normal((4, 8)).astype(np.float32)
    kernel = tl.compile(meta, target=target)
    dev = _device(target)
    B = torch.zeros((4, 8), dtype=torch.float32, device=dev)
    kernel(torch.from_numpy(a).to(dev), B)
    # a * 2.5 + 0.5 may be one fused multiply-add on a GPU (rounded once):
    # near cancellation only an absolute bound holds (the H100 differed by
    # 1.5e-8 at -0.0097).
    np.testing.assert_allclose(B.cpu().numpy(), a * 2.5 + 0.5, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------
# dtypes: the wider bfloat16 vectors and TileLang's dtype helpers
# ---------------------------------------------------------------------------


def test_bfloat16_vectors():
    for lanes in (4, 8, 16, 32, 64):
        d = getattr(T, f"bfloat16x{lanes}")
        assert d == f"bfloat16x{lanes}" and d.lanes == lanes and d.bits == 16
        assert d.element is T.bfloat16 and d.itemsize == 2 * lanes
        assert T.dtype(f"bfloat16x{lanes}") is d


def test_bfloat16x4_value(target, rng):
    @T.prim_func
    def widen(A: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            v = T.bfloat16x4(A[0], A[1], A[2], A[3])
            B[0:4] = T.cast(v, T.float32x4)

    a = rng.standard_normal(4).astype(np.float32)
    kernel = tl.compile(widen, target=target)
    dev = _device(target)
    B = torch.zeros(4, dtype=torch.float32, device=dev)
    kernel(torch.from_numpy(a).to(dev), B)
    expect = torch.from_numpy(a).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(B.cpu().numpy(), expect)


def test_dtype_helpers():
    assert T.get_tvm_dtype(torch.float16) is T.float16
    assert T.get_tvm_dtype("half") is T.float16 and T.get_tvm_dtype(T.int8) is T.int8
    assert T.get_tvm_dtype(np.int16) is T.int16 and T.get_tvm_dtype(float) is T.float32
    with pytest.raises(TypeError, match="unknown dtype"):
        T.get_tvm_dtype("float17")
    assert T.is_float4_e2m1fn(T.float4_e2m1fn) and T.is_float4_e2m1fn("float4_e2m1fnx2")
    assert not T.is_float4_e2m1fn(T.float4_e2m1_unpacked)
    assert T.is_float4_e2m1_unpacked("float4_e2m1_unpacked")
    assert not T.is_float4_e2m1_unpacked(T.float4_e2m1fn)
    assert T.is_float4(T.float4_e2m1fn) and T.is_float4(T.float4_e2m1_unpacked)
    assert not T.is_float4(T.int4) and not T.is_float4(T.float8_e4m3fn)
    for d in (T.float8_e4m3fn, T.float8_e5m2, "float8_e8m0fnu", T.float6_e2m3fn,
              T.float6_e3m2fn, T.float4_e2m1fn, "float8_e4m3fnx4"):
        assert T.is_f8f6f4_family(d), d
    for d in (T.float16, T.bfloat16, T.int8, T.int4, T.uint8, T.float32):
        assert not T.is_f8f6f4_family(d), d


def test_validate_gemm_ab_dtypes():
    T.validate_gemm_ab_dtypes(T.float16, "float16")
    T.validate_gemm_ab_dtypes(T.float16, T.float32, a_in_tmem=True)
    T.validate_gemm_ab_dtypes(T.float8_e4m3fn, T.float4_e2m1fn, allow_f8f6f4_mixed=True)
    with pytest.raises(ValueError, match="A=float16, B=bfloat16"):
        T.validate_gemm_ab_dtypes(T.float16, T.bfloat16)
    with pytest.raises(ValueError, match="f8f6f4 family"):
        T.validate_gemm_ab_dtypes(T.float8_e4m3fn, T.float4_e2m1fn)
    with pytest.raises(ValueError, match="f8f6f4 family"):
        T.validate_gemm_ab_dtypes(T.float8_e4m3fn, T.int8, allow_f8f6f4_mixed=True)


def test_any_dtype():
    for x in ("float16", T.bfloat16, float, torch.float16, np.dtype("int8"), np.float32):
        assert isinstance(x, T.AnyDType), x
    for x in (3, 2.5, None, [T.float16], torch.zeros(1)):
        assert not isinstance(x, T.AnyDType), x
    assert isinstance(None, T.AnyDType | None)

    def annotated(d: T.AnyDType) -> T.dtype:
        return T.dtype(d)

    assert annotated(torch.int32) is T.int32


# ---------------------------------------------------------------------------
# The classes: T.PrimFunc, T.JITFunc, T.KernelLaunchFrame
# ---------------------------------------------------------------------------


def test_prim_func_and_jit_func_classes():
    @T.prim_func
    def f(A: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=4) as _:
            for i in T.Parallel(4):
                A[i] = 1.0

    assert isinstance(f, T.PrimFunc) and not isinstance(f, T.JITFunc)
    assert T.PrimFunc[[int], None] is T.PrimFunc and T.JITFunc[[int], None] is T.JITFunc

    @tl.jit
    def eager(A, scale: float = 2.0):
        n = T.const("n")
        A: T.Tensor((n,), T.float32)
        B = T.empty((n,), T.float32)
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(n):
                B[i] = A[i] * scale
        return B

    assert eager.style == "eager" and isinstance(eager._eager, T.JITFunc)
    assert not isinstance(eager, T.JITFunc) and not isinstance(f.fn, T.JITFunc)


@pytest.fixture
def compat_route():
    """The compat route (`import tilelang`) for one test, removed after it
    (it changes process-wide defaults such as the profiler's)."""
    from tilelang_mlir import compat

    compat.install(force=True)
    yield
    compat.uninstall()


def test_jit_func_through_compat(compat_route):
    import tilelang
    import tilelang.language as TL

    @tilelang.jit(out_idx=[-1])
    def factory(n: int = 8):
        @TL.prim_func
        def main(A: TL.Tensor((n,), TL.float32), B: TL.Tensor((n,), TL.float32)):
            with TL.Kernel(1, threads=n):
                for i in TL.Parallel(n):
                    B[i] = A[i] + 1.0

        return main

    assert isinstance(factory.func, TL.JITFunc) and TL.JITFunc is T.JITFunc


def test_kernel_launch_frame(target):
    assert isinstance(T.Kernel(4, threads=64), T.KernelLaunchFrame)
    assert T.KernelLaunchFrame.Current() is None

    @T.prim_func
    def frame(B: T.Tensor((3, 4), T.int32)):
        with T.Kernel(3, threads=64) as bx:
            f = T.KernelLaunchFrame.Current()
            assert isinstance(f, T.KernelLaunchFrame)
            B[bx, 0] = f.get_block_extent(0)
            B[bx, 1] = f.get_num_threads() + f.num_threads
            B[bx, 2] = f.get_block_binding(0) * 10 + f.blocks[0]
            B[bx, 3] = f.get_thread_extents()[0] + f.get_block_extents()[1]

    kernel = tl.compile(frame, target=target)
    dev = _device(target)
    B = torch.zeros((3, 4), dtype=torch.int32, device=dev)
    kernel(B)
    expect = np.array([[3, 128, 11 * b, 65] for b in range(3)], dtype=np.int32)
    np.testing.assert_array_equal(B.cpu().numpy(), expect)

    # The thread indices (a GPU notion: the CPU target has none).
    @T.prim_func
    def threads(C: T.Tensor((3, 64), T.int32)):
        with T.Kernel(3, threads=64) as bx:
            f = T.KernelLaunchFrame.Current()
            C[bx, f.get_thread_binding(0)] = f.threads[0] + bx * 1000

    if target == "cpu":
        _compiles_for_gpus(frame)
        _compiles_for_gpus(threads)
        return
    C = torch.zeros((3, 64), dtype=torch.int32, device=dev)
    tl.compile(threads, target=target)(C)
    np.testing.assert_array_equal(C.cpu().numpy(),
                                  np.arange(64)[None, :] + 1000 * np.arange(3)[:, None])


def test_ws_schedule_names_are_refused(compat_route):
    import tilelang.language as TL

    for name in ("WSSchedule", "annotate_ws_schedule", "ws_op", "WarpSpecialize"):
        with pytest.raises(AttributeError, match="MaterializeWSSchedule.*T.ws"):
            getattr(TL, name)


# ---------------------------------------------------------------------------
# T.launch_thread inside T.Kernel
# ---------------------------------------------------------------------------


def _launched_indices():
    @T.prim_func
    def main(A: T.Tensor((4, 256), "int32")):
        with T.Kernel(4, threads=256):
            tx = T.launch_thread("threadIdx.x", 256)
            b = T.launch_thread("blockIdx.x", 4)
            A[b, tx] = tx * 10 + b

    return main


def test_launch_thread_inside_a_kernel_reads_its_indices():
    _compiles_for_gpus(_launched_indices())

    @T.prim_func
    def other_extent(A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=256):
            A[0] = T.launch_thread("threadIdx.x", 128)

    with pytest.raises(TileLangError, match="the kernel has 256 along threadIdx.x"):
        tl.compile(other_extent, target="cuda:sm_90a")


@pytest.mark.gpu
def test_launch_thread_inside_a_kernel_on_the_gpu():
    out = torch.full((4, 256), -1, dtype=torch.int32, device="cuda")
    tl.compile(_launched_indices(), target="cuda")(out)
    want = torch.arange(256, device="cuda")[None, :] * 10 + torch.arange(4, device="cuda")[:, None]
    assert torch.equal(out, want.to(torch.int32))


# ---------------------------------------------------------------------------
# Element reads as TVM expressions: buf[i].dtype, T.reinterpret in TVM's order
# ---------------------------------------------------------------------------


def _signed_nibble(nbit, val, pos):
    """TileLang's dequantize helpers (examples/dequantize_gemm): written for
    TVM expressions, they check `val.dtype` and call tvm.tir.reinterpret
    with the dtype first."""
    assert val.dtype == T.uint8 and val.dtype == "uint8", val.dtype
    mask = (1 << nbit) - 1
    i4 = (val >> (pos.astype(T.uint8) * T.uint8(nbit))) & T.uint8(mask)
    shifted = T.reinterpret(T.int8, i4 << T.uint8(4))  # TVM's order: dtype first
    return shifted >> T.int8(4)


def test_element_reads_carry_their_dtype_and_reinterpret_takes_both_orders(target, rng):
    N = 64

    @T.prim_func
    def unpack(B: T.Tensor((N // 2,), T.uint8), C: T.Tensor((N,), T.int8),
               D: T.Tensor((N // 2,), T.int8)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(N):
                C[i] = _signed_nibble(4, B[i // 2], i % 2)
            for i in T.Parallel(N // 2):
                D[i] = T.reinterpret(B[i], T.int8)  # TileLang's order

    b = rng.integers(0, 256, N // 2, dtype=np.uint8)
    c = torch.zeros(N, dtype=torch.int8, device=_device(target))
    d = torch.zeros(N // 2, dtype=torch.int8, device=_device(target))
    tl.compile(unpack, target=target)(torch.from_numpy(b).to(_device(target)), c, d)
    nibbles = np.stack([b & 15, b >> 4], axis=1).reshape(-1).astype(np.int8)
    want = np.where(nibbles >= 8, nibbles - 16, nibbles).astype(np.int8)
    np.testing.assert_array_equal(c.cpu().numpy(), want)
    np.testing.assert_array_equal(d.cpu().numpy(), b.view(np.int8))
    _compiles_for_gpus(unpack)


# ---------------------------------------------------------------------------
# TVM's expression nodes (T.And ... T.GE) and TIR frames (T.If / T.Then /
# T.Else / T.While), as TileOPs' kernels write them
# ---------------------------------------------------------------------------


def test_expression_nodes_in_a_kernel(compat_route, target, rng):
    import tilelang.language as TL
    from tilelang import tvm

    n = 64
    # tvm.tir.X is T.X
    assert tvm.tir.FloorDiv is TL.FloorDiv and tvm.tir.And is TL.And

    @TL.prim_func
    def nodes(A: TL.Tensor((n,), TL.int32), B: TL.Tensor((n,), TL.int32),
              C: TL.Tensor((8, n), TL.int32), F: TL.Tensor((n,), TL.float32)):
        with TL.Kernel(1, threads=n) as _:
            for i in TL.Parallel(n):
                a, b = A[i], B[i]
                C[0, i] = TL.Add(a, TL.Mul(b, 3)) - TL.Sub(a, 1)
                C[1, i] = TL.Div(a, b)          # toward zero
                C[2, i] = TL.Mod(a, b)          # the sign of a
                C[3, i] = TL.FloorDiv(a, b)     # toward minus infinity
                C[4, i] = TL.FloorMod(a, b)     # the sign of b
                C[5, i] = TL.Max(a, b) * 1000 + TL.Min(a, b)
                C[6, i] = TL.if_then_else(TL.And(TL.GT(a, 0), TL.Not(TL.EQ(b, 2))), 1, 0) + \
                    TL.if_then_else(TL.Or(TL.LE(a, -5), TL.NE(a, a)), 10, 0) + \
                    TL.if_then_else(TL.GE(b, 3), 100, 0) + TL.if_then_else(TL.LT(a, b), 1000, 0)
                C[7, i] = TL.Div(n, 7) + TL.Mod(-n, 7) * 100   # constants fold on the host
                F[i] = TL.Div(TL.cast(a, TL.float32), 4.0)    # floats divide exactly

    a = rng.integers(-40, 40, n).astype(np.int32)
    b = rng.integers(1, 9, n).astype(np.int32) * rng.choice([-1, 1], n).astype(np.int32)
    dev = _device(target)
    A, B = torch.tensor(a, device=dev), torch.tensor(b, device=dev)
    C = torch.zeros((8, n), dtype=torch.int32, device=dev)
    F = torch.zeros(n, dtype=torch.float32, device=dev)
    tl.compile(nodes, target=target)(A, B, C, F)
    trunc = np.trunc(a / b).astype(np.int32)
    want = np.stack([
        a + 3 * b - (a - 1), trunc, a - b * trunc, a // b, a % b,
        np.maximum(a, b) * 1000 + np.minimum(a, b),
        ((a > 0) & (b != 2)) * 1 + (a <= -5) * 10 + (b >= 3) * 100 + (a < b) * 1000,
        np.full(n, 9 + (-1) * 100)])
    np.testing.assert_array_equal(C.cpu().numpy(), want)
    np.testing.assert_array_equal(F.cpu().numpy(), a.astype(np.float32) / 4)
    if target == "cpu":
        _compiles_for_gpus(nodes)


def test_expression_nodes_on_the_host(compat_route):
    from tilelang import tvm

    tir = tvm.tir
    assert tir.Div(-7, 2) == -3 and tir.Mod(-7, 2) == -1
    assert tir.FloorDiv(-7, 2) == -4 and tir.FloorMod(-7, 2) == 1
    assert tir.Div(7.0, 2) == 3.5 and tir.Max(3, 9) == 9 and tir.Min(3, 9) == 3
    assert tir.And(True, False) is False and tir.Not(False) is True
    assert tir.Div(10**18 + 1, 3) == (10**18 + 1) // 3  # exact, not through a float
    with pytest.raises(ZeroDivisionError, match="tvm.tir.Div"):
        tir.Div(1, 0)


def _frames(TL, n):
    @TL.prim_func
    def frames(A: TL.Tensor((n,), TL.float32), B: TL.Tensor((n,), TL.float32),
               S: TL.Tensor((n,), TL.int32)):
        with TL.Kernel(1, threads=n) as _:
            for i in TL.Parallel(n):
                with TL.If(i < n // 2):
                    with TL.Then():
                        B[i] = A[i] * 2.0
                    with TL.Else():
                        with TL.If(i % 2 == 0), TL.Then():
                            B[i] = -A[i]
                        with TL.If(i % 2 == 1):
                            with TL.Then():
                                with TL.If(A[i] > 0.0):
                                    with TL.Then():
                                        B[i] = A[i] + 100.0
                                    with TL.Else():
                                        B[i] = 7.0
                k = TL.alloc_var(TL.int32, 0)
                with TL.While(k * k < i):
                    k = k + 1
                S[i] = k

    return frames


def test_tir_frames_if_then_else_while(compat_route, target, rng):
    import tilelang.language as TL

    n = 64
    a = rng.standard_normal(n).astype(np.float32)
    dev = _device(target)
    A = torch.tensor(a, device=dev)
    B = torch.zeros(n, dtype=torch.float32, device=dev)
    S = torch.zeros(n, dtype=torch.int32, device=dev)
    program = _frames(TL, n)
    tl.compile(program, target=target)(A, B, S)
    i = np.arange(n)
    want = np.where(i < n // 2, a * 2, np.where(i % 2 == 0, -a, np.where(a > 0, a + 100, 7)))
    np.testing.assert_allclose(B.cpu().numpy(), want.astype(np.float32), rtol=1e-6)
    np.testing.assert_array_equal(S.cpu().numpy(), np.ceil(np.sqrt(i)).astype(np.int32))
    if target == "cpu":
        _compiles_for_gpus(program)


def test_tir_frame_misuse_is_an_error(compat_route):
    import tilelang.language as TL

    @TL.prim_func
    def stray_then(B: TL.Tensor((4,), TL.int32)):
        with TL.Kernel(1, threads=4) as _:
            with TL.Then():
                B[0] = 1

    @TL.prim_func
    def else_first(B: TL.Tensor((4,), TL.int32)):
        with TL.Kernel(1, threads=4) as _:
            with TL.If(B[0] > 0):
                with TL.Else():
                    B[0] = 1

    @TL.prim_func
    def no_then(B: TL.Tensor((4,), TL.int32)):
        with TL.Kernel(1, threads=4) as _:
            with TL.If(B[0] > 0):
                B[0] = 1

    for program, match in ((stray_then, r"T.Then\(\)` goes directly inside"),
                           (else_first, r"is `with T.Then\(\):` and, after it"),
                           (no_then, r"is `with T.Then\(\):` and, after it")):
        with pytest.raises(TileLangError, match=match):
            tl.compile(program, target="cpu")
    with pytest.raises(TileLangError, match=r"T.If\(\) outside a `with` statement"):
        with TL.If(True):
            pass


def test_size_var_is_a_symbolic_size(compat_route, target, rng):
    import tilelang.language as TL
    from tilelang import tvm

    n = TL.SizeVar("n", "int32")
    assert isinstance(n, tvm.tir.SizeVar) and isinstance(n, tvm.tir.PrimExpr)
    assert tvm.tir.SizeVar is TL.SizeVar

    @TL.prim_func
    def double(A: TL.Tensor((n,), TL.float32), B: TL.Tensor((n,), TL.float32)):
        with TL.Kernel(TL.ceildiv(n, 64), threads=64) as bx:
            for i in TL.Parallel(64):
                if bx * 64 + i < n:
                    B[bx * 64 + i] = A[bx * 64 + i] * 2.0

    kernel = tl.compile(double, target=target)
    dev = _device(target)
    for size in (50, 130):
        a = rng.standard_normal(size).astype(np.float32)
        b = torch.zeros(size, dtype=torch.float32, device=dev)
        kernel(torch.from_numpy(a).to(dev), b)
        np.testing.assert_array_equal(b.cpu().numpy(), a * 2)
    with pytest.raises(TypeError, match="a size is int32 or int64"):
        TL.SizeVar("m", "float32")


def test_ir_builder_frame_of_loops(compat_route):
    """`isinstance(T.serial(...), IRBuilderFrame)` as TileLang answers it:
    a loop of step 1 is a TVM frame, a stepped one (a symbolic or negative
    step) is TileLang's own object."""
    import tilelang.language as TL
    from tvm.script.ir_builder.base import IRBuilderFrame
    from tvm.tirx.expr import IntImm, Var

    assert isinstance(TL.serial(1, 10), IRBuilderFrame)
    assert isinstance(TL.serial(1, 10, 1), IRBuilderFrame)
    assert isinstance(TL.serial(1, 10, IntImm(TL.int32, 1)), IRBuilderFrame)
    assert not isinstance(TL.serial(1, 10, Var("tmp", TL.int32)), IRBuilderFrame)
    assert not isinstance(TL.serial(10, -1, -1), IRBuilderFrame)
    assert not isinstance(TL.serial(0, 10, 2), IRBuilderFrame)
    assert isinstance(TL.Parallel(4), IRBuilderFrame) and isinstance(TL.Kernel(1), IRBuilderFrame)


def _copy_through_region(src, dst, seen):
    """A helper as TileLang libraries write them: it reads the extents of
    the region it is given (TVM's BufferRegion.region) and its dtype."""
    seen["extents"] = [int(r.extent) for r in src.region]
    seen["dtype"] = str(getattr(src, "dtype", None) or src.buffer.dtype)
    T.copy(src, dst)


def test_a_sliced_region_has_tvm_ranges(target, rng):
    seen = {}

    @T.prim_func
    def main(A: T.Tensor((2, 16, 8), T.float16), B: T.Tensor((16, 8), T.float16)):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((2, 16, 8), T.float16)
            f = T.alloc_fragment((16, 8), T.float16)
            T.copy(A, s)
            _copy_through_region(s[1, :, :], f, seen)
            T.copy(f, B)

    kernel = tl.compile(main, target=target, pass_configs={"tl.disable_cache": True})
    assert seen == {"extents": [1, 16, 8], "dtype": "float16"}
    dev = _device(target)
    a = torch.randn(2, 16, 8, dtype=torch.float16, device=dev)
    b = torch.empty(16, 8, dtype=torch.float16, device=dev)
    kernel(a, b)
    assert torch.equal(b, a[1])
