"""TileLang's syntax forms, annotations, dtypes and program-structure names
(issue 43, the frontend part): each construct runs on random inputs and is
checked against torch (CPU target; the same kernels run on a GPU under the
`gpu` marker), compiles for sm_80 and sm_90a, and each misuse is a
TileLangError (or TileLang's own exception type) naming what is wrong.
"""

import pickle

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
# dtypes are strings
# ---------------------------------------------------------------------------


def test_dtypes_are_strings():
    assert isinstance(T.float16, str) and T.float16 == "float16" and str(T.float16) == "float16"
    assert getattr(torch, T.float16) is torch.float16
    assert getattr(torch, T.bfloat16) is torch.bfloat16
    assert getattr(torch, T.float8_e4m3fn) is torch.float8_e4m3fn
    assert T.float == T.float32 and T.half == "float16" and T.float16 == "half"
    assert T.float8_e4m3fn == T.float8_e4m3  # one type, two spellings
    assert f"{T.int8}" == "int8" and {T.float16: 1}["float16"] == 1
    assert pickle.loads(pickle.dumps(T.float8_e4m3fn)) is T.float8_e4m3fn
    assert T.float16 != T.bfloat16 and T.int8 != T.uint8


def test_dtype_constructor_and_class():
    assert T.dtype("half") is T.float16
    assert T.dtype(torch.bfloat16) is T.bfloat16
    assert T.dtype(np.int16) is T.int16
    assert T.dtype(float) is T.float32 and T.dtype(int) is T.int32 and T.dtype(bool) is T.bool
    assert isinstance(T.int8, T.dtype) and not isinstance("int8", T.dtype)
    with pytest.raises(TypeError, match="unknown dtype 'float17'"):
        T.dtype("float17")


def test_vector_and_narrow_dtypes():
    v = T.float16x2
    assert (v.lanes, v.bits, v.itemsize) == (2, 16, 4) and v.element is T.float16
    assert T.int8x4.with_lanes(1) is T.int8 and T.float32.with_lanes(4) is T.float32x4
    assert T.float8_e4m3fnx2 == "float8_e4m3fnx2" and T.float8_e4m3fnx2.element == T.float8_e4m3fn
    assert (T.float4_e2m1fn.bits, T.int4.bits, T.float6_e3m2fn.bits) == (4, 4, 6)
    assert T.float4_e2m1fn.is_float4() and T.float4_e2m1fnx2.is_float4()
    assert T.int4.as_torch() is torch.int8 and T.tfloat32.as_torch() is torch.float32
    if hasattr(torch, "float4_e2m1fn_x2"):
        assert T.float4_e2m1fn.as_torch() is torch.float4_e2m1fn_x2
        assert T.float4_e2m1fnx2.as_torch() is torch.float4_e2m1fn_x2
    from tilelang_mlir.language.dtypes import _all_dtypes, resolve_torch_storage_dtype

    assert resolve_torch_storage_dtype(T.int4) == T.int8
    assert resolve_torch_storage_dtype(T.float16) == T.float16
    for name in _all_dtypes:
        assert isinstance(getattr(T, name), T.dtype), name


def test_calling_a_dtype_on_the_host():
    assert T.int32(7) == 7 and T.uint64(0xFFFFFFFFFFFFFFFF) == 2 ** 64 - 1
    with pytest.raises(ValueError, match="does not fit in int8"):
        T.int8(300)
    a = T.int32()  # TVM's size variable: a symbolic size
    assert isinstance(a, T.Var) and (a & 0x7FFFFFFF).symbols() == [a.name]


def test_float_literal_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="exceeds maximum of float32"):
        @T.prim_func
        def kernel(A: T.Tensor((1,), T.float32)):
            with T.Kernel(1):
                value = T.alloc_var(T.float32, init=1e300)
                A[0] = value

        tl.compile(kernel, target="cpu")


# ---------------------------------------------------------------------------
# Annotations
# ---------------------------------------------------------------------------


def test_tensor_annotation_forms():
    n = T.dynamic("n")
    assert T.Tensor[(4, 8), T.float16].shape == (4, 8)
    assert T.Tensor[[n], T.int32].dtype == T.int32
    assert T.Tensor[4, 8].shape == (4, 8) and T.Tensor[4, 8].dtype == T.float32
    s = T.StridedTensor[[n, 8], [n * 2, 1], T.float32]
    assert s.strides[1] == 1 and s.strides[0].text() == "(n * 2)"
    assert T.SharedBuffer((16, 16), T.float16).scope == "shared"
    assert T.FragmentBuffer[(16,), T.float32].scope == "fragment"
    with pytest.raises(ValueError, match="shape/strides"):
        T.StridedTensor((4, 4), (4,), T.float32)
    with pytest.raises(TypeError, match="must not be negative"):
        T.Tensor((-1, 4), T.float32)


def test_dynamic_names_and_host_arithmetic():
    m, k = T.dynamic("m, k")
    assert (m.name, k.name) == ("m", "k") and T.symbolic("q").name == "q"
    e = T.ceildiv(m * 4 + 1, 64)
    assert e.symbols() == ["m"] and e.evaluate(lambda s: 100) == 7
    assert T.max(m, 1).evaluate(lambda s: 0) == 1 and T.min(k * 2, 64).evaluate(lambda s: 40) == 64
    from tilelang_mlir.base.signature import eval_dim, parse_dim

    assert eval_dim(T.align_up(m, 8).text(), {"m": 13}) == 16
    assert parse_dim("max((n * 2), 3)").evaluate(lambda s: 1) == 3
    with pytest.raises(TypeError, match="no truth value"):
        bool(m * 2)


@pytest.mark.parametrize("size", [16, 31])
def test_size_solved_from_an_expression(target, size):
    n = T.dynamic("n")

    @T.prim_func
    def fill_index(A: T.Tensor((n * 3 + 1,), T.int32)):
        with T.Kernel(1, threads=32) as _:
            for i in range(n * 3 + 1):
                A[i] = i * 2 + n

    kernel = tl.compile(fill_index, target=target)
    a = torch.zeros(size, dtype=torch.int32, device=_device(target))
    kernel(a)
    n_value = (size - 1) // 3
    torch.testing.assert_close(a.cpu(), torch.arange(size, dtype=torch.int32) * 2 + n_value)
    with pytest.raises(ValueError, match=r"\(\(n \* 3\) \+ 1\)"):
        kernel(torch.zeros(size + 1, dtype=torch.int32, device=_device(target)))
    _compiles_for_gpus(fill_index)


def test_strided_tensor(target, rng):
    m, s = T.dynamic("m, s")

    @T.prim_func
    def scale(A: T.StridedTensor((m, 8), (s, 1), T.float32), B: T.Tensor((m, 8), T.float32)):
        with T.Kernel(T.ceildiv(m, 2), threads=64) as bx:
            tile = T.alloc_shared((2, 8), T.float32)
            T.copy(A[bx * 2:bx * 2 + 2, 0:8], tile)
            for i, j in T.Parallel(2, 8):
                tile[i, j] = tile[i, j] * 2 + s
            T.copy(tile, B[bx * 2:bx * 2 + 2, 0:8])

    kernel = tl.compile(scale, target=target)
    big = torch.tensor(rng.standard_normal((6, 20)), dtype=torch.float32,
                       device=_device(target))
    out = torch.empty(6, 8, dtype=torch.float32, device=_device(target))
    kernel(big[:, 5:13], out)
    torch.testing.assert_close(out, big[:, 5:13] * 2 + 20)
    with pytest.raises(ValueError, match=r"must have strides \(s, 1\), got \(20, 2\)"):
        kernel(big[:, 5:21:2], out)
    _compiles_for_gpus(scale)


def test_reference_parameters_of_macros(target):
    @T.macro
    def set_to(x: T.Ref, value):
        x = value

    @T.prim_func
    def refs(A: T.Tensor((4,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            v = T.alloc_var(T.int32, 3)
            set_to(v, 9)
            L = T.alloc_local((4,), T.int32)
            T.fill(L, 1)
            set_to(L[2], v + 1)
            for i in T.serial(4):
                A[i] = L[i] + v * (i == 0)

    kernel = tl.compile(refs, target=target)
    a = torch.zeros(4, dtype=torch.int32, device=_device(target))
    kernel(a)
    assert a.tolist() == [10, 1, 10, 1]

    @T.prim_func
    def by_value(A: T.Tensor((4,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            x = 1
            set_to(x, 2)

    with pytest.raises(TileLangError, match="annotated T.Ref"):
        tl.compile(by_value, target="cpu")


# ---------------------------------------------------------------------------
# The eager style
# ---------------------------------------------------------------------------


@tl.jit(target="cpu")
def _eager_rows(X, scale):
    N, S = T.const("N, S")
    X: T.StridedTensor[[N * 2, 4], [S, 1], T.float32]
    Y = T.empty((N * 2, 4), T.float32)
    W = T.alloc_global((N * 2, 4), T.float32)
    with T.Kernel(N * 2, threads=32) as r:
        for j in T.Parallel(4):
            W[r, j] = X[r, j] * scale
    with T.Kernel(N * 2, threads=32) as r:
        for j in T.Parallel(4):
            Y[r, j] = W[r, j] + S
    return Y


def test_eager_consts_from_affine_sizes_and_strides(rng):
    big = torch.tensor(rng.standard_normal((6, 10)), dtype=torch.float32)
    y = _eager_rows(big[:, 3:7], 3.0)
    torch.testing.assert_close(y, big[:, 3:7] * 3.0 + 10)
    with pytest.raises(ValueError, match="no value of N"):
        _eager_rows(big[:5, 3:7], 3.0)


# ---------------------------------------------------------------------------
# Expressions and statements
# ---------------------------------------------------------------------------


def test_select_any_all_of_and_helpers(target, rng):
    @T.prim_func
    def logic(A: T.Tensor((64, 4), T.float32), M: T.Tensor((4, 96), "bool"),
              B: T.Tensor((64, 4), T.float32), O: T.Tensor((4, 3), T.int32)):
        with T.Kernel(4, threads=32) as bx:
            for i, j in T.Parallel(16, 4):
                row = bx * 16 + i
                B[row, j] = T.Select(A[row, j] > 0, A[row, j], 0.5)
            O[bx, 0] = T.if_then_else(T.all_of(M[bx, :]), 1, 0)
            O[bx, 1] = T.if_then_else(T.any_of(M[bx, 0:8]), 1, 0)
            c = T.index_to_coordinates(bx * 7 + 5, (4, 7))
            O[bx, 2] = T.align_up(bx * 3 + 1, 4) * 100 + T.linear_index(c[0], c[1], 7)

    kernel = tl.compile(logic, target=target)
    dev = _device(target)
    a = torch.tensor(rng.standard_normal((64, 4)), dtype=torch.float32, device=dev)
    m = torch.zeros(4, 96, dtype=torch.bool, device=dev)
    m[0] = True
    m[1, 3] = True
    m[2, 50] = True
    b = torch.empty_like(a)
    o = torch.zeros(4, 3, dtype=torch.int32, device=dev)
    kernel(a, m, b, o)
    torch.testing.assert_close(b, torch.where(a > 0, a, 0.5))
    assert o[:, 0].tolist() == [1, 0, 0, 0] and o[:, 1].tolist() == [1, 1, 0, 0]
    assert o[:, 2].tolist() == [(-(-(3 * x + 1) // 4) * 4) * 100 + 7 * x + 5 for x in range(4)]
    _compiles_for_gpus(logic)


def test_let_fill_regions_point_copy_grid_and_countdown(target):
    @T.prim_func
    def stmts(A: T.Tensor((16,), T.int32), B: T.Tensor((16,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            off = T.int32()
            T.let(off, 4)
            L = T.alloc_local((16,), T.int32)
            T.fill(L, 1)
            T.fill(L[off:off + 4], 5)
            T.clear(L[12:16])
            for i, j in T.grid(4, 4):
                B[i * 4 + j] = L[i * 4 + j]
            T.copy(A[2], B[15])
            for k in T.serial(14, 11, -1):
                B[k] = k
            for k in range(3, 0, -1):
                B[k - 1] = B[k] + 10

    kernel = tl.compile(stmts, target=target)
    a = torch.arange(16, dtype=torch.int32, device=_device(target)) * 3
    b = torch.zeros(16, dtype=torch.int32, device=_device(target))
    kernel(a, b)
    assert b.tolist() == [31, 21, 11, 1, 5, 5, 5, 5, 1, 1, 1, 1, 12, 13, 14, 6]
    _compiles_for_gpus(stmts)


@pytest.mark.parametrize("n", [0, 13, 200, 600])
def test_parallel_over_a_runtime_extent(target, n, rng):
    @T.prim_func
    def clip(A: T.Tensor((512,), T.float32), B: T.Tensor((512,), T.float32), n: T.int32):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(512):
                B[i] = 0.0
            for i in T.Parallel(T.min(n, 512)):  # bounded by 512
                B[i] = A[i] - 1.0
            for i in T.Parallel(n // 3):  # no bound: chunks of the block's threads
                B[i + 300] = 7.0

    kernel = tl.compile(clip, target=target)
    a = torch.tensor(rng.standard_normal(512), dtype=torch.float32, device=_device(target))
    b = torch.empty_like(a)
    kernel(a, b, n)
    ref = torch.zeros_like(a)
    ref[:min(n, 512)] = a[:min(n, 512)] - 1.0
    ref[300:300 + n // 3] = 7.0
    torch.testing.assert_close(b, ref)
    if n == 0:
        _compiles_for_gpus(clip)


def test_persistent_tile_scheduler(target):
    @T.prim_func
    def walk(A: T.Tensor((4, 2), T.int32), C: T.Tensor((4, 2), T.int32)):
        with T.Kernel(3, threads=32) as (worker,):
            s = T.PersistentTileScheduler(4, 2, num_workers=3, swizzle_size=1)
            s.init(worker)
            while s.valid():
                A[s.m_idx, s.n_idx] = worker * 10 + s.current_iter
                s.next_tile()
            t = T.PersistentTileScheduler(4, 2, num_workers=3, swizzle_size=2,
                                          column_major=False, stateful=False)
            for w in range(3):
                m, n = t.coord(w * 3 + worker)
                if w * 3 + worker < 8:
                    C[m, n] = w * 3 + worker

    kernel = tl.compile(walk, target=target)
    a = torch.full((4, 2), -1, dtype=torch.int32, device=_device(target))
    c = torch.full((4, 2), -1, dtype=torch.int32, device=_device(target))
    kernel(a, c)
    # column-major: linear position p is tile (p % 4, p // 4), worker p % 3, iteration p // 3
    ref = torch.tensor([[(p % 3) * 10 + p // 3 for p in (m, m + 4)] for m in range(4)],
                       dtype=torch.int32)
    assert a.cpu().tolist() == ref.tolist()
    # row-major in panels 2 wide: every tile exactly once
    assert sorted(c.flatten().tolist()) == list(range(8))
    _compiles_for_gpus(walk)


def test_kernel_forms_and_thread_bindings():
    from tilelang_mlir.language.kernel import _normalize_threads

    assert _normalize_threads(None) == [128, 1, 1] and _normalize_threads([32, 4]) == [32, 4, 1]
    for bad in (-1, 0, [128, 0], (128, 1, -2)):
        with pytest.raises(ValueError, match="threads must be positive"):
            _normalize_threads(bad)

    @T.prim_func
    def tids(A: T.Tensor((2, 4, 32), T.int32)):
        with T.Kernel(threads=(32, 4, 2)):
            tx, ty, tz = T.get_thread_bindings()
            A[tz, ty, tx] = tx + ty * 100 + tz * 1000 + T.get_thread_extent(1) * 0

    _compiles_for_gpus(tids)
    with pytest.raises(TileLangError, match="thread index, which has no meaning on the CPU"):
        tl.compile(tids, target="cpu")


def test_explicit_launch_outside_a_kernel(target, rng):
    # TVM's explicit launch: T.thread_binding loops over blockIdx / threadIdx
    # outside T.Kernel open the kernel (grid and threads from the loops), and
    # every statement of their bodies runs on every thread of every block
    @T.prim_func
    def blocks(A: T.Tensor((4, 3, 8), T.float32), B: T.Tensor((4, 3, 8), T.float32)):
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            for by in T.thread_binding(0, 3, thread="blockIdx.y"):
                row = A[bx, by, 0:4]  # a region bound to a name
                B[bx, by, 4:8] = row
                for j in T.serial(4):
                    B[bx, by, j] = A[bx, by, j + 4] * 2.0

    a = torch.from_numpy(rng.standard_normal((4, 3, 8), dtype=np.float32)).to(_device(target))
    b = torch.zeros_like(a)
    tl.compile(blocks, target=target)(a, b)
    want = torch.cat([a[..., 4:] * 2, a[..., :4]], dim=-1)
    torch.testing.assert_close(b, want, rtol=0, atol=0)

    @T.prim_func
    def threads(A: T.Tensor((6, 32), T.float32), B: T.Tensor((6, 32), T.float32)):
        for bx in T.thread_binding(6, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[bx, tx] = A[bx, 31 - tx] + T.Cast("float32", bx)

    _compiles_for_gpus(threads)
    if target == "cuda":
        a = torch.randn(6, 32, device="cuda")
        b = torch.empty_like(a)
        tl.compile(threads, target=target)(a, b)
        want = a.flip(-1) + torch.arange(6, device="cuda", dtype=torch.float32)[:, None]
        torch.testing.assert_close(b, want, rtol=0, atol=0)

    @T.prim_func
    def two_extents(A: T.Tensor((8,), T.float32)):
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                A[tx] = 1.0
            for tx in T.thread_binding(16, thread="threadIdx.x"):
                A[tx % 8] = 2.0

    with pytest.raises(TileLangError, match="launched with 8 and with 16"):
        tl.compile(two_extents, target="cuda:sm_90a")

    @T.prim_func
    def bad_tag(A: T.Tensor((8,), T.float32)):
        for bx in T.thread_binding(8, thread="vthread"):
            A[bx] = 1.0

    with pytest.raises(TileLangError, match="blockIdx.x/y/z and threadIdx.x/y/z"):
        tl.compile(bad_tag, target="cuda:sm_90a")


# ---------------------------------------------------------------------------
# Vector values and negative indices
# ---------------------------------------------------------------------------


def test_vector_values(target):
    @T.prim_func
    def vectors(A: T.Tensor((1024,), T.float32), B: T.Tensor((4, 4), T.float32),
                src: T.Tensor((1,), T.int8), out: T.Tensor((32,), T.int8),
                C: T.Tensor((9,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            for t in T.serial(4):  # lanes t - 2 < 0 count from the end
                B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]
            packed = T.alloc_local((32,), T.int8)
            packed[0:32] = T.Broadcast(src[0], 32)
            for i in T.serial(32):
                out[i] = packed[i]
            v = T.float32x2(1.5, src[0])
            w: T.float32x4 = T.Shuffle([v, v * 2], [0, 1, 2, 3])
            C[0:4] = w + 1
            x = C[0:4]
            C[4:8] = T.Select(x > 0, x * x, 0.0)
            C[-1] = T.extract_lane(w, 3)

    kernel = tl.compile(vectors, target=target)
    dev = _device(target)
    a = torch.arange(1024, dtype=torch.float32, device=dev)
    b = torch.zeros(4, 4, device=dev)
    out = torch.zeros(32, dtype=torch.int8, device=dev)
    c = torch.zeros(9, device=dev)
    kernel(a, b, torch.tensor([-37], dtype=torch.int8, device=dev), out, c)
    ref = torch.tensor([[(t - 2 + j) % 1024 for j in range(4)] for t in range(4)],
                       dtype=torch.float32)
    assert torch.equal(b.cpu(), ref) and out.tolist() == [-37] * 32
    w = torch.tensor([1.5, -37.0, 3.0, -74.0])
    assert c.cpu().tolist() == (w + 1).tolist() + [6.25, 0.0, 16.0, 0.0, -74.0]
    _compiles_for_gpus(vectors)


def test_vector_errors():
    @T.prim_func
    def mismatch(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            A[0:4] = A[T.Ramp(0, 1, 3)]

    with pytest.raises(TileLangError, match="vector of 3 lanes into 4 elements"):
        tl.compile(mismatch, target="cpu")

    @T.prim_func
    def scalar_needed(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            A[0] = T.exp(A[0:2])

    with pytest.raises(TileLangError, match="vector value"):
        tl.compile(scalar_needed, target="cpu")


# ---------------------------------------------------------------------------
# 4-bit types: packed two a byte
# ---------------------------------------------------------------------------

_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def _e2m1_value(code):
    return (-1.0 if code & 8 else 1.0) * _E2M1[code & 7]


def _e2m1_code(x):
    a = abs(x)
    code = sum([a > .25, a >= .75, a > 1.25, a >= 1.75, a > 2.5, a >= 3.5, a > 5])
    return code | (8 if np.signbit(x) else 0)


def test_fp4_tensors_are_packed(target, rng):
    m = T.dynamic("m")

    @T.prim_func
    def fp4(x: T.Tensor((m, 16), T.float4_e2m1fn), y: T.Tensor((m, 16), T.float32),
            z: T.Tensor((m, 16), T.float4_e2m1fn), q: T.Tensor((m, 16), T.int4)):
        with T.Kernel(m, threads=32) as i:
            for j in T.serial(16):
                y[i, j] = x[i, j]  # decoded
                z[i, j] = y[i, j] * 2  # encoded: nearest, ties to even, saturated
                q[i, j] = T.cast(q[i, j], T.int32) - 1

    kernel = tl.compile(fp4, target=target)
    dev = _device(target)
    raw = torch.tensor(rng.integers(0, 256, (5, 8)), dtype=torch.uint8)
    qraw = torch.tensor(rng.integers(0, 256, (5, 8)), dtype=torch.uint8)
    y = torch.zeros(5, 16, device=dev)
    z = torch.zeros(5, 8, dtype=torch.uint8, device=dev)
    q = qraw.clone().view(torch.int8).to(dev)
    kernel(raw.to(dev), y, z, q)
    nib = torch.stack([raw & 15, raw >> 4], dim=-1).reshape(5, 16)
    ref = torch.tensor([[_e2m1_value(int(c)) for c in row] for row in nib])
    torch.testing.assert_close(y.cpu(), ref)
    zc = [[_e2m1_code(2 * v) for v in row] for row in ref.tolist()]
    zref = torch.tensor([[a | (b << 4) for a, b in zip(r[0::2], r[1::2])] for r in zc],
                        dtype=torch.uint8)
    assert torch.equal(z.cpu(), zref)
    qn = torch.stack([qraw & 15, qraw >> 4], dim=-1).to(torch.int32)
    qn = ((torch.where(qn >= 8, qn - 16, qn) - 1) & 15).reshape(5, 8, 2)
    assert torch.equal(q.cpu().view(torch.uint8), (qn[..., 0] | (qn[..., 1] << 4)).to(torch.uint8))
    with pytest.raises(ValueError, match="must have shape|dimension 1"):
        kernel(raw[:, :7].contiguous().to(dev), y, z, q)
    _compiles_for_gpus(fp4)


# ---------------------------------------------------------------------------
# Views of on-chip buffers
# ---------------------------------------------------------------------------


def test_reshape_of_shared_and_fragment_buffers(target, rng):
    N, M = 256, 16

    @T.prim_func
    def views(A: T.Tensor((N,), T.float32), B: T.Tensor((N // M, M), T.float32),
              C: T.Tensor((N // M,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            A_shared = T.alloc_shared((N,), T.float32)
            A_local = T.alloc_fragment((N,), T.float32)
            row_max = T.alloc_fragment((N // M,), T.float32)
            T.copy(A, A_shared)
            T.copy(T.reshape(A_shared, [N // M, M]), B)
            T.copy(A_shared, A_local)
            T.reduce_max(T.reshape(A_local, [N // M, M]), row_max, dim=1)
            T.copy(row_max, C)

    kernel = tl.compile(views, target=target)
    dev = _device(target)
    a = torch.tensor(rng.standard_normal(N), dtype=torch.float32, device=dev)
    b = torch.zeros(N // M, M, device=dev)
    c = torch.zeros(N // M, device=dev)
    kernel(a, b, c)
    torch.testing.assert_close(b, a.reshape(N // M, M))
    torch.testing.assert_close(c, a.reshape(N // M, M).max(dim=1).values)
    _compiles_for_gpus(views)


# ---------------------------------------------------------------------------
# @T.prim_func in the body-annotation form, function attributes
# ---------------------------------------------------------------------------


def test_prim_func_with_body_annotations_and_outputs(target, rng):
    @T.prim_func
    def plus_one(A):
        A: T.Tensor[[64, 32], T.float32]
        T.annotate_pass_configs({"tl.disable_tma_lower": True})
        B = T.empty([64, 32], T.float32)
        with T.Kernel(1):
            for i, j in T.grid(64, 32):
                B[i, j] = A[i, j] + 1.0
        return B

    attrs = plus_one.attrs
    assert attrs["tilelang_out_idx"] == [-1]
    assert attrs["tilelang_pass_configs"] == {"tl.disable_tma_lower": True}
    kernel = tl.compile(plus_one, target=target)
    a = torch.tensor(rng.standard_normal((64, 32)), dtype=torch.float32, device=_device(target))
    torch.testing.assert_close(kernel(a), a + 1.0)
    with pytest.raises(ValueError, match="Out index conflict"):
        tl.compile(plus_one, out_idx=[-1], target=target)

    @T.prim_func
    def ordered(A, B, C):  # arguments in the order of the signature
        m = T.dynamic("m")
        A: T.Tensor[[m], T.float32]
        C: T.Tensor[[m + 1], T.float32]
        B: T.Tensor[[m * 2 + 1], T.float32]
        with T.Kernel(1, threads=1):
            for i in T.serial(m * 2 + 1):
                B[i] = A[i % m] + 1.0
            for i in T.serial(m + 1):
                C[i] = T.cast(i, T.float32)
            T.evaluate(0)

    assert [p.name for p in ordered.params] == ["A", "B", "C"]
    kernel = tl.compile(ordered, out_idx=[1, 2], target=target)
    a = torch.arange(19, dtype=torch.float32, device=_device(target))
    b, c = kernel(a)
    torch.testing.assert_close(b, a.repeat(3)[:39] + 1.0)
    torch.testing.assert_close(c, torch.arange(20, dtype=torch.float32, device=b.device))


def test_output_sized_by_a_scalar_argument():
    @tl.jit(target="cpu")
    def ramp(n: T.int32):
        B = T.empty([n * 2 + 1], T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(n * 2 + 1):
                B[i] = T.cast(i, T.float32)
        return B

    np.testing.assert_array_equal(ramp(11), np.arange(23, dtype=np.float32))
    np.testing.assert_array_equal(ramp(3), np.arange(7, dtype=np.float32))


def test_function_attribute_errors():
    @T.prim_func
    def bad_flags(A: T.Tensor((4,), T.float32)):
        T.annotate_compile_flags(["--maxrregcount=32"])
        with T.Kernel(1):
            A[0] = 0.0

    with pytest.raises(TileLangError, match="compile flag '--maxrregcount=32'"):
        tl.compile(bad_flags, target="cpu")


def test_break_and_continue(target):
    @T.prim_func
    def exits(A: T.Tensor((8,), T.int32), B: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=1) as _:
            acc = T.alloc_var(T.int32, 0)
            for i in T.serial(8):
                if A[i] < 0:
                    break
                if A[i] == 0:
                    continue
                acc += A[i]
                B[i] = acc
            B[7] = acc
            n = T.alloc_var(T.int32, 0)
            while n < 100:
                n += 1
                if n * n > 50:
                    T.loop_break()
            B[6] = n

    kernel = tl.compile(exits, target=target)
    a = torch.tensor([3, 0, 4, 5, -1, 7, 8, 9], dtype=torch.int32, device=_device(target))
    b = torch.zeros(8, dtype=torch.int32, device=_device(target))
    kernel(a, b)
    assert b.tolist() == [3, 0, 7, 12, 0, 0, 8, 12]
    _compiles_for_gpus(exits)

    @T.prim_func
    def in_parallel(A: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=8) as _:
            for i in T.Parallel(8):
                if A[i] < 0:
                    break

    with pytest.raises(TileLangError, match="`break` outside a sequential loop"):
        tl.compile(in_parallel, target="cpu")


def test_view_as_another_dtype(target, rng):
    @T.prim_func
    def views(A: T.Tensor((8, 16), T.bfloat16), B: T.Tensor((4, 16), T.float32),
              C: T.Tensor((8, 16), T.bfloat16), D: T.Tensor((8, 16), T.int16),
              E: T.Tensor((8, 16), T.bfloat16)):
        with T.Kernel(1, threads=32) as _:
            S = T.alloc_shared((8, 16), T.bfloat16)
            T.copy(A, S)
            W = T.view(S, shape=[4, 16], dtype=T.float32)  # two bf16 per float32
            T.copy(W, B)
            for i, j in T.Parallel(4, 16):
                W[i, j] = 1.0
            T.copy(S, C)
            T.copy(T.view(A, shape=[8, 16], dtype=T.int16), D)
            F = T.alloc_shared((4, 16), T.float32)
            T.copy(B, F)
            T.copy(T.view(F, shape=[8, 16], dtype=T.bfloat16), E)  # read-only narrower view

    kernel = tl.compile(views, target=target)
    dev = _device(target)
    a = torch.tensor(rng.standard_normal((8, 16)), dtype=torch.float32).to(torch.bfloat16).to(dev)
    b = torch.zeros(4, 16, device=dev)
    c = torch.zeros(8, 16, dtype=torch.bfloat16, device=dev)
    d = torch.zeros(8, 16, dtype=torch.int16, device=dev)
    e = torch.zeros(8, 16, dtype=torch.bfloat16, device=dev)
    kernel(a, b, c, d, e)
    assert torch.equal(b, a.view(torch.float32).reshape(4, 16))
    assert torch.equal(c.view(torch.float32), torch.ones(8, 8, device=dev))
    assert torch.equal(d, a.view(torch.int16)) and torch.equal(e, a)
    _compiles_for_gpus(views)

    @T.prim_func
    def narrow_store(A: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            F = T.alloc_local((4,), T.float32)
            H = T.view(F, shape=[8], dtype=T.float16)
            H[0] = 1.0

    with pytest.raises(TileLangError, match="narrower dtype"):
        tl.compile(narrow_store, target="cpu")


def test_fp4_copies_and_the_byte_rule(target, rng):
    @T.prim_func
    def fp4_copy(x: T.Tensor((4, 32), T.float4_e2m1fn), y: T.Tensor((4, 32), T.float4_e2m1fn),
                 z: T.Tensor((4, 32), T.float4_e2m1fn)):
        with T.Kernel(1, threads=32) as _:
            s = T.alloc_shared((4, 32), T.float4_e2m1fn)
            T.copy(x, s)
            T.copy(s[0:4, 8:24], y[0:4, 0:16])
            T.fill(z, 1.5)
            for i, j in T.Parallel(4, 8):
                z[i, 2 * j] = s[i, 2 * j + 1]  # whole bytes: both halves in one iteration
                z[i, 2 * j + 1] = s[i, 2 * j]

    kernel = tl.compile(fp4_copy, target=target)
    dev = _device(target)
    raw = torch.tensor(rng.integers(0, 256, (4, 16)), dtype=torch.uint8, device=dev)
    y = torch.zeros(4, 16, dtype=torch.uint8, device=dev)
    z = torch.zeros(4, 16, dtype=torch.uint8, device=dev)
    kernel(raw, y, z)
    assert torch.equal(y[:, :8], raw[:, 4:12])
    swapped = ((raw[:, :8] >> 4) | ((raw[:, :8] & 15) << 4)).to(torch.uint8)
    assert torch.equal(z[:, :8], swapped) and bool((z[:, 8:] == 0x33).all())  # 1.5 is code 3
    _compiles_for_gpus(fp4_copy)

    # One element an iteration: each thread's run of 4 consecutive elements
    # (the loop's default layout) holds whole bytes; with one element a
    # thread (coalesced_width=1) the two halves of a byte would race.
    def fill(width):
        @T.prim_func
        def main(x: T.Tensor((4, 32), T.float4_e2m1fn)):
            with T.Kernel(1, threads=32) as _:
                for i, j in T.Parallel(4, 32, coalesced_width=width):
                    x[i, j] = 1.0 if j % 3 else -3.0

        return main

    x = torch.zeros(4, 16, dtype=torch.uint8, device=dev)
    tl.compile(fill(None), target=target)(x)
    codes = torch.tensor([2 if j % 3 else 13 for j in range(32)], device=dev)
    assert torch.equal(x, (codes[0::2] | (codes[1::2] << 4)).to(torch.uint8).expand(4, 16))
    with pytest.raises(TileLangError, match="halves of one byte, on threads 0 and 1: they race"):
        tl.compile(fill(1), target="cuda:sm_90a")


def fp4_fragment_quant(width=None):
    """DeepSeek V4's activation quantization (examples/deepseek_v4/act_quant.py):
    an fp4 fragment written element by element in T.Parallel (each byte's
    two halves by the thread that holds it), then copied out through shared
    memory; `out_ref` gets the same values by a T.copy of a float fragment."""
    @T.prim_func
    def main(x: T.Tensor((32, 32), T.float32), out: T.Tensor((32, 32), T.float4_e2m1fn),
             out_ref: T.Tensor((32, 32), T.float4_e2m1fn)):
        with T.Kernel(1, threads=128) as _:
            x_l = T.alloc_fragment((32, 32), T.float32)
            y_f = T.alloc_fragment((32, 32), T.float32)
            y_l = T.alloc_fragment((32, 32), T.float4_e2m1fn)
            y_s = T.alloc_shared((32, 32), T.float4_e2m1fn)
            T.copy(x, x_l)
            for i, j in T.Parallel(32, 32, coalesced_width=width):
                y_l[i, j] = T.clamp(x_l[i, j] * 2, -6.0, 6.0)
            T.copy(y_l, y_s)
            T.copy(y_s, out)
            for i, j in T.Parallel(32, 32):
                y_f[i, j] = T.clamp(x_l[i, j] * 2, -6.0, 6.0)
            T.copy(y_f, out_ref)

    return main


def test_fp4_fragment_written_in_a_parallel_loop(target, rng):
    dev = _device(target)
    x = torch.from_numpy(rng.standard_normal((32, 32)).astype(np.float32)).to(dev)
    out = torch.zeros(32, 16, dtype=torch.uint8, device=dev)
    ref = torch.ones(32, 16, dtype=torch.uint8, device=dev)
    tl.compile(fp4_fragment_quant(), target=target)(x, out, ref)
    assert torch.equal(out, ref)
    _compiles_for_gpus(fp4_fragment_quant())


def test_fp4_fragment_halves_of_a_byte_on_two_threads_are_refused():
    # One element per thread: the two halves of a byte on two threads, each
    # with a copy of the byte it writes half of.
    with pytest.raises(TileLangError, match="writes a fragment element from iterations on "
                                            "different threads"):
        tl.compile(fp4_fragment_quant(width=1), target="cuda:sm_90a")


def test_jit_body_with_only_a_kernel_dynamic_fill_and_empty_tensors(request):
    @tl.jit(target="cpu")
    def ones(M: int, N: int):  # a program: its body launches a kernel
        B = T.empty((N, M), T.float32)
        with T.Kernel():
            for i, j in T.Parallel(N, M):
                B[i, j] = 1.0
        return B

    np.testing.assert_array_equal(ones(M=4, N=8), np.ones((8, 4), np.float32))
    from tilelang_mlir.runtime import args

    was = args.set_tilelang_outputs(True)  # what the compat route sets
    request.addfinalizer(lambda: args.set_tilelang_outputs(was))
    assert isinstance(ones(M=2, N=2), torch.Tensor)

    @tl.jit(target="cpu")
    def two(M: int):
        B = T.empty((M,), T.float32)
        C = T.empty((M,), T.int32)
        with T.Kernel(1, threads=32):
            for i in T.Parallel(M):
                B[i] = 2.0
                C[i] = i
        return B, C

    b, c = two(M=4)
    assert isinstance(two(M=4), list) and b.tolist() == [2.0] * 4 and c.tolist() == [0, 1, 2, 3]

    n = T.symbolic("n")

    @T.prim_func
    def fill_between(x: T.Tensor[(n,), "int64"], lo: T.int32, hi: T.int32,
                     e: T.Tensor((0, 4), T.float32)):
        with T.Kernel(1, threads=128) as _:
            a, b = T.alloc_var(T.int), T.alloc_var(T.int)
            a = lo
            b = hi
            T.fill(x[a:b], 7)  # a region of run-time extent
            for k in T.serial(T.ceildiv(0, 32)):
                e[k, 0] = 1.0

    kernel = tl.compile(fill_between, target="cpu")
    x = torch.zeros(16, dtype=torch.int64)
    kernel(x, 3, 9, torch.zeros(0, 4))
    assert x.tolist() == [0, 0, 0] + [7] * 6 + [0] * 7
    _compiles_for_gpus(fill_between)


def test_fp4_scalar_conversions(target):
    @T.prim_func
    def quantize(X: T.Tensor((16,), T.float32), Y: T.Tensor((16,), T.uint8),
                 Z: T.Tensor((16,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(16):
                Y[i] = T.reinterpret(T.cast(X[i], T.float4_e2m1fn), T.uint8)  # code in a byte
                Z[i] = T.cast(T.reinterpret(Y[i], T.float4_e2m1fn), T.float32)

    kernel = tl.compile(quantize, target=target)
    values = [0, .3, .7, 1.2, 1.8, 2.6, 3.4, 5.5, 9, -0., -.25, -1.25, -3.6, -6, -7, 2.5]
    x = torch.tensor(values, device=_device(target))
    y = torch.zeros(16, dtype=torch.uint8, device=_device(target))
    z = torch.zeros(16, device=_device(target))
    kernel(x, y, z)
    assert y.tolist() == [_e2m1_code(v) for v in values]
    assert z.tolist() == [_e2m1_value(_e2m1_code(v)) for v in values]
    _compiles_for_gpus(quantize)


@pytest.mark.parametrize("body, match", [
    (lambda A: T.launch_thread("threadIdx.x", 128), "T.launch_thread"),
    (lambda A: T.let(3, 4), "T.let binds a variable"),
    (lambda A: T.Shuffle([T.Broadcast(A[0], 2)], [0, 5]), r"lane index 5 is not in \[0, 2\)"),
    (lambda A: T.Ramp(0, 1, 0), r"lanes must be an int in \[1, 256\]"),
    (lambda A: T.extract_lane(A[0], 0), "expects a vector expression"),
    (lambda A: T.float16x2(A[0], A[1], A[2]), "has 2 lanes, got 3 values"),
    (lambda A: T.reshape(A, (3, 3)), "does not have the size of"),
])
def test_structure_errors(body, match):
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            body(A)

    with pytest.raises(TileLangError, match=match):
        tl.compile(main, target="cpu")


def test_alloc_var_starts_at_zero(target):
    @T.prim_func
    def zero(A: T.Tensor((2,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            v = T.alloc_var(T.float32)
            n = T.alloc_var(T.int32)
            for i in T.serial(3):
                v += 1.5
            A[0] = v
            A[1] = n

    kernel = tl.compile(zero, target=target)
    a = torch.full((2,), 9.0, device=_device(target))
    kernel(a)
    assert a.tolist() == [4.5, 0.0]


def test_fp4_pairs_are_one_byte(request):
    from tilelang_mlir.runtime import args

    was = args.set_tilelang_outputs(True)
    request.addfinalizer(lambda: args.set_tilelang_outputs(was))

    @T.prim_func
    def pairs(x: T.Tensor((4,), T.float4_e2m1fnx2), y: T.Tensor((8,), T.float32)):
        out = T.empty((3, 16), T.float4_e2m1fnx2)
        with T.Kernel(1, threads=1):
            for i, j in T.grid(3, 16):
                out[i, j] = T.float4_e2m1fnx2(0.5, -6.0)
            for i in T.serial(4):
                v = x[i]
                y[2 * i] = T.extract_lane(v, 0)
                y[2 * i + 1] = T.extract_lane(v, 1)
        return out

    kernel = tl.compile(pairs, target="cpu")
    y = torch.zeros(8)
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("this torch has no float4_e2m1fn_x2")
    x = torch.tensor([0x21, 0x8F, 0x07, 0x70], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    out = kernel(x, y)
    assert out.shape == (3, 16) and bool((out.view(torch.uint8) == 0xF1).all())
    assert y.tolist() == [0.5, 1.0, -6.0, -0.0, 6.0, 0.0, 0.0, 6.0]
    _compiles_for_gpus(pairs)


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_kernel_with_no_effect_still_launches(target):
    """TileLang's empty kernels (a body that writes nothing) compile and run
    on every target: the kernel is not erased as dead code, which left a GPU
    program with no launch ("expected one kernel launch, found 0")."""
    n = T.dynamic("n")

    @T.prim_func
    def empty(x: T.Tensor((n,), T.float32)):
        with T.Kernel(n, threads=32) as bx:
            y = x[bx]  # noqa: F841 (read, never used)

    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        assert ".entry" in tl.compile(empty, target=arch).get_source()
    kernel = tl.compile(empty, target="cpu" if target == "cpu" else "cuda:sm_90a")
    x = torch.randn(8, device=_device(target))
    kernel(x)
    assert kernel(x) is None
    with pytest.raises(TypeError, match="x"):
        kernel(x.to(torch.float16))


def _half_block_copy(M, N, block, first_half: bool, elementwise: bool):
    """TileLang's masked copy: half of the block's threads fill a shared tile
    (under `if tx < 128`, or `tx >= 128`), then every thread copies it out."""
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float16), B: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=256) as (bx, by):
            S = T.alloc_shared((block, block), T.float16)
            tx = T.get_thread_binding(0)
            if (tx < 128) if first_half else (tx >= 128):
                if elementwise:
                    for i, k in T.Parallel(block, block):
                        S[i, k] = A[by * block + i, bx * block + k]
                else:
                    T.copy(A[by * block, bx * block], S)
            T.copy(S, B[by * block, bx * block])

    return main


@pytest.mark.parametrize("first_half", [True, False])
@pytest.mark.parametrize("elementwise", [True, False])
def test_thread_conditioned_tile_ops_are_synchronized_with_the_block(first_half, elementwise):
    """The tile ops under a thread condition run on those threads (a role),
    and a block barrier separates them from the copy all threads make next:
    without it half the output was stale shared memory on the H100."""
    import re

    program = _half_block_copy(256, 256, 128, first_half, elementwise)
    ptx = tl.compile(program, out_idx=[1], target="cuda:sm_90a",
                     pass_configs={"tl.disable_warp_specialized": True}).get_source()
    body = ptx.split("setp", 1)[1]  # after the thread condition
    assert re.search(r"\b(bar\.sync|barrier\.sync(\.aligned)?)\s+0;", body), "no block barrier"


@pytest.mark.gpu
@pytest.mark.parametrize("first_half", [True, False])
@pytest.mark.parametrize("elementwise", [True, False])
def test_thread_conditioned_tile_ops_on_the_gpu(first_half, elementwise):
    kernel = tl.compile(_half_block_copy(512, 384, 128, first_half, elementwise), out_idx=[1],
                        target="cuda", pass_configs={"tl.disable_warp_specialized": True})
    a = torch.randn(512, 384, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kernel(a), a, rtol=0, atol=0)


def test_tuple_assignment_reads_every_value_before_storing(target):
    """`A[0], A[1] = A[1], A[0]` swaps, as Python does: the right side is
    read before the first store (the second element was read after the
    first store and both ended up equal)."""
    @T.prim_func
    def swap(A: T.Tensor((4,), T.float32), B: T.Tensor((2, 2), T.int32)):
        with T.Kernel(1, threads=1):
            A[0], A[1] = A[1], A[0]
            A[2], A[3], A[2] = A[3], A[2], A[2] + A[3]
            B[0, 0], B[1, 1], B[0, 1] = B[1, 1], B[0, 1], B[0, 0]

    x = torch.tensor([1.0, 2.0, 3.0, 4.0], device=_device(target))
    y = torch.tensor([[5, 6], [7, 8]], dtype=torch.int32, device=_device(target))
    tl.compile(swap, target=target)(x, y)
    assert x.tolist() == [2.0, 1.0, 7.0, 3.0]
    assert y.tolist() == [[8, 5], [7, 6]]


def test_tuple_assignment_of_vars_swaps_their_values(target):
    """`a, b = b, a` of T.alloc_var names swaps their values (TileLang's
    test_swap_logic): a var stored into by one target is read before any
    store (b took a's new value before: both ended up equal). A var
    assigned to a new name stays that var."""
    @T.prim_func
    def rotate(A: T.Tensor((6,), T.float32)):
        with T.Kernel(1, threads=1):
            a = T.alloc_var(T.float32, A[0])
            b = T.alloc_var(T.float32, A[1])
            c = T.alloc_var(T.float32, A[2])
            a, b, c = b, c, a
            A[0], A[1], A[2] = a, b, c
            a, b = b, a
            d, A[3] = a, a + b  # d names the var a (a new name)
            a = 10.0
            A[4], A[5] = d, b

    x = torch.tensor([1.0, 2.0, 3.0, 0.0, 0.0, 0.0], device=_device(target))
    tl.compile(rotate, target=target)(x)
    assert x.tolist() == [2.0, 3.0, 1.0, 5.0, 10.0, 2.0]


def test_arithmetic_on_bools_computes_in_int_as_c_does(target):
    """Bools in + - * compute as ints, as TileLang's CUDA C++ does: a sum
    of two trues is 2, a true bool when stored (logical or; TileOPs' bool
    add; it wrapped to false before) and 2 when converted to a number."""
    @T.prim_func
    def ops(A: T.Tensor((64,), "bool"), B: T.Tensor((64,), "bool"),
            Y: T.Tensor((64,), "bool"), Z: T.Tensor((64,), T.int32),
            F: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                Y[i] = A[i] + B[i]
                Z[i] = A[i] + B[i] + A[i] * B[i] - B[i]
                F[i] = T.Cast(T.float32, A[i] + B[i])

    dev = _device(target)
    a = torch.randint(0, 2, (64,), dtype=torch.bool, device=dev)
    b = torch.randint(0, 2, (64,), dtype=torch.bool, device=dev)
    y = torch.empty_like(a)
    z = torch.empty(64, dtype=torch.int32, device=dev)
    f = torch.empty(64, dtype=torch.float32, device=dev)
    tl.compile(ops, target=target)(a, b, y, z, f)
    ai, bi = a.int(), b.int()
    assert torch.equal(y, a | b)
    assert torch.equal(z, ai + bi + ai * bi - bi)
    assert torch.equal(f, (ai + bi).float())


def test_if_then_else_reads_only_the_side_taken(target):
    """T.if_then_else and `a if c else b` read a side's shared memory only
    where it is taken (TVM's if_then_else, the guard of out-of-bounds reads:
    TileOPs' paged decode reads `s[sid - 1]` under `sid > 0`); the CPU
    target's bounds check stopped the read of s[-1] before."""
    @T.prim_func
    def neighbours(L: T.Tensor((8,), T.int32), Y: T.Tensor((8,), T.int32)):
        with T.Kernel(8, threads=1) as sid:
            s = T.alloc_shared((8,), T.int32)
            T.copy(L, s)
            before = T.if_then_else(sid > 0, s[sid - 1] // 4, 0)
            after = s[sid + 1] if sid + 1 < 8 else -1
            Y[sid] = before * 100 + after

    dev = _device(target)
    lens = torch.arange(4, 36, 4, dtype=torch.int32, device=dev)
    y = torch.empty_like(lens)
    tl.compile(neighbours, target=target)(lens, y)
    l = lens.tolist()
    assert y.tolist() == [(l[i - 1] // 4 if i else 0) * 100 + (l[i + 1] if i < 7 else -1)
                          for i in range(8)]


# The dtype of `a + b` as TileLang 0.1.15 gives it (read from its wheel with
# scripts/tilelang_reference.sh: TVM's BinaryOpMatchTypes), row a, column b.
_TYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
          "int64", "uint32", "bool", "float8_e4m3fn", "float8_e5m2"]
_SUMS = {
    "float16": "f16 f16 f32 f64 f16 f16 f16 f16 f16 f16 f16 f16 f16",
    "bfloat16": "f16 bf16 f32 f64 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16",
    "float32": "f32 f32 f32 f64 f32 f32 f32 f32 f32 f32 f32 f32 f32",
    "float64": "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64",
    "int8": "f16 bf16 f32 f64 i8 u8 i16 i32 i64 u32 i8 e4m3 e5m2",
    "uint8": "f16 bf16 f32 f64 u8 u8 i16 i32 i64 u32 u8 e4m3 e5m2",
    "int16": "f16 bf16 f32 f64 i16 i16 i16 i32 i64 u32 i16 e4m3 e5m2",
    "int32": "f16 bf16 f32 f64 i32 i32 i32 i32 i64 u32 i32 e4m3 e5m2",
    "int64": "f16 bf16 f32 f64 i64 i64 i64 i64 i64 i64 i64 e4m3 e5m2",
    "uint32": "f16 bf16 f32 f64 u32 u32 u32 u32 i64 u32 u32 e4m3 e5m2",
    "bool": "f16 bf16 f32 f64 i8 u8 i16 i32 i64 u32 bool e4m3 e5m2",
    "float8_e4m3fn": "f16 bf16 f32 f64 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 ERR",
    "float8_e5m2": "f16 bf16 f32 f64 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 ERR e5m2",
}
_SHORT = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
          "i8": "int8", "u8": "uint8", "i16": "int16", "i32": "int32", "i64": "int64",
          "u32": "uint32", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "bool": "bool"}
# `x op literal` for x of each dtype: a Python float is float32, an int is
# int32 (TVM's tir.const), then the same promotion; a bitwise operator's
# int takes x's dtype.
_WITH_LITERALS = {
    "float16": "f32 f16", "bfloat16": "f32 bf16", "float32": "f32 f32", "float64": "f64 f64",
    "int8": "f32 i32", "uint8": "f32 i32", "int16": "f32 i32", "int32": "f32 i32",
    "int64": "f32 i64", "uint32": "f32 u32", "bool": "f32 i32",
    "float8_e4m3fn": "f32 e4m3", "float8_e5m2": "f32 e5m2",
}


def _dtypes_of_operations(xs, seen):
    """The dtype of each operation on the loaded values `xs` (one of each
    of _TYPES) into `seen` ("ERR" where it is refused)."""
    def record(key, make):
        try:
            seen[key] = str(make().dtype)
        except (TypeError, TileLangError) as e:
            assert "float8" in str(e) and "T.cast" in str(e), e
            seen[key] = "ERR"

    v = dict(zip(_TYPES, xs))
    for a, x in v.items():
        for b, y in v.items():
            record((a, b), lambda: x + y)
        record((a, "float"), lambda: x * 0.5)
        record((a, "rfloat"), lambda: 0.25 - x)
        record((a, "int"), lambda: x + 2)
        record((a, "rint"), lambda: 3 * x)
        if not a.startswith("float") and a != "bfloat16":
            record((a, "shift"), lambda: x >> 1)
            record((a, "and"), lambda: x & 1)
    record("max", lambda: T.max(v["float16"], 0.5))
    record("min", lambda: T.min(v["bfloat16"], 1))
    record("select", lambda: T.if_then_else(v["bool"], v["float16"], 0.25))
    record("select ints", lambda: T.if_then_else(v["bool"], 1, 2))
    record("wide int", lambda: v["int32"] + 2 ** 40)


def test_the_dtype_of_an_operation_is_tilelangs():
    """Every pair of dtypes, and each dtype beside a Python float and int,
    promotes as TileLang's: f16 * 0.5 and i32 * 0.5 compute in float32,
    int8 + 1 in int32, float16 + bfloat16 in float16, int32 + uint32 in
    uint32; mixing the two float8 types is an error naming both."""
    seen = {}
    bufs = {d: T.Tensor((2,), d) for d in _TYPES}

    @T.prim_func
    def probe(F16: bufs["float16"], BF16: bufs["bfloat16"], F32: bufs["float32"],
              F64: bufs["float64"], I8: bufs["int8"], U8: bufs["uint8"],
              I16: bufs["int16"], I32: bufs["int32"], I64: bufs["int64"],
              U32: bufs["uint32"], B: bufs["bool"], E4: bufs["float8_e4m3fn"],
              E5: bufs["float8_e5m2"]):
        with T.Kernel(1, threads=1):
            _dtypes_of_operations([F16[0], BF16[0], F32[0], F64[0], I8[0], U8[0], I16[0],
                                   I32[0], I64[0], U32[0], B[0], E4[0], E5[0]], seen)

    # (the body runs at this compile: no cached kernel may stand in for it)
    tl.compile(probe, target="cpu", pass_configs={"tl.disable_cache": True})
    for a in _TYPES:
        assert [seen[a, b] for b in _TYPES] == \
            [_SHORT.get(c, c) for c in _SUMS[a].split()], a
        f, i = (_SHORT[c] for c in _WITH_LITERALS[a].split())
        assert (seen[a, "float"], seen[a, "rfloat"], seen[a, "int"], seen[a, "rint"]) == \
            (f, f, i, i), a
        if (a, "shift") in seen:
            assert seen[a, "shift"] == seen[a, "and"] == a
    assert (seen["max"], seen["min"], seen["select"], seen["select ints"], seen["wide int"]) \
        == ("float32", "bfloat16", "float32", "int32", "int64")


def test_literals_are_typed_as_tilelang_types_them(target):
    """Values, not only dtypes: a float16 times a Python float computes in
    float32 (no overflow to inf), int8 arithmetic with an int in int32 (no
    wrap), uint8 minus an int is negative, a comparison with a literal the
    narrow type cannot hold compares in int32, and float16 + bfloat16 rounds
    the bfloat16 side to float16."""
    @T.prim_func
    def ops(H: T.Tensor((64,), T.float16), Bf: T.Tensor((64,), T.bfloat16),
            I8: T.Tensor((64,), T.int8), U8: T.Tensor((64,), T.uint8),
            F: T.Tensor((64, 3), T.float32), Z: T.Tensor((64, 4), T.int32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                F[i, 0] = T.exp2(H[i] * 1.5) * 0.0001
                F[i, 1] = U8[i] - 8
                F[i, 2] = H[i] + Bf[i]
                Z[i, 0] = I8[i] * 2 + 1
                Z[i, 1] = T.if_then_else(I8[i] < 200, 1, 0)
                Z[i, 2] = (U8[i] >> 4) & 0xF
                Z[i, 3] = (I8[i] + 100) // 3

    dev = _device(target)
    g = torch.Generator().manual_seed(7)
    h = (torch.rand(64, generator=g) * 4 + 10).half().to(dev)
    bf = torch.randn(64, generator=g).bfloat16().to(dev)
    i8 = torch.randint(-128, 128, (64,), generator=g, dtype=torch.int8).to(dev)
    u8 = torch.randint(0, 256, (64,), generator=g, dtype=torch.uint8).to(dev)
    f = torch.empty(64, 3, dtype=torch.float32, device=dev)
    z = torch.empty(64, 4, dtype=torch.int32, device=dev)
    tl.compile(ops, target=target)(h, bf, i8, u8, f, z)
    want = torch.exp2(h.float() * 1.5) * torch.tensor(0.0001)
    torch.testing.assert_close(f[:, 0], want, rtol=1e-5, atol=0)
    assert torch.isfinite(f[:, 0]).all()
    assert torch.equal(f[:, 1], u8.float() - 8)
    assert torch.equal(f[:, 2], (h + bf.half()).float())
    i = i8.int()
    assert torch.equal(z[:, 0], i * 2 + 1)
    assert torch.equal(z[:, 1], torch.ones_like(i))
    assert torch.equal(z[:, 2], (u8.int() >> 4) & 0xF)
    assert torch.equal(z[:, 3], torch.div(i + 100, 3, rounding_mode="floor"))


def test_a_name_bound_to_an_element_holds_its_value(target):
    """`tmp = x[j]` binds the value x[j] has there (TileLang's let), not the
    element: the swap `tmp = x[j]; x[j] = x[i]; x[i] = tmp` sorts
    (deepseek-ai/TileKernels' top-2 sum gate sorts its group indices so;
    every element came out as the first one before). A region stays a
    region."""
    @T.prim_func
    def sort4(A: T.Tensor((8,), T.int32), B: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=1):
            loc = T.alloc_local((8,), T.int32)
            for i in T.serial(8):
                loc[i] = A[i]
            for i in T.unroll(8):
                for j in T.unroll(8):
                    if j > i and loc[j] < loc[i]:
                        tmp = loc[j]
                        loc[j] = loc[i]
                        loc[i] = tmp
            head = B[0:4]
            T.copy(loc[0:4], head)
            first = loc[4]
            loc[4] = -1
            B[4] = first
            B[5] = loc[4]
            B[6] = loc[6]
            B[7] = loc[7]

    a = torch.randperm(8, dtype=torch.int32).to(_device(target))
    b = torch.zeros(8, dtype=torch.int32, device=_device(target))
    tl.compile(sort4, target=target)(a, b)
    assert b.tolist() == [0, 1, 2, 3, 4, -1, 6, 7]


def test_operations_on_a_name_bound_to_an_element_take_the_element(target):
    """TileLang resolves a name bound from an element to the element where
    an operation takes a location (its get_let_value): an atomic update,
    an atomic load, a copy or fill region start, an address."""
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=1):
            x = A[2]
            T.atomic_add(x, 10.0)
            y = B[4]
            T.fill(y, x)
            B[0] = T.atomic_load(x)

    a = torch.arange(8, dtype=torch.float32, device=_device(target))
    b = torch.zeros(8, dtype=torch.float32, device=_device(target))
    tl.compile(main, target=target)(a, b)
    assert a.tolist() == [0, 1, 12, 3, 4, 5, 6, 7]
    assert b.tolist() == [12, 0, 0, 0, 2, 0, 0, 0]


def test_a_name_bound_to_a_barrier_is_the_barrier():
    """`bar = bars[i]` names the barrier (its element is no data to read):
    the explicit MLA decode's seesaw schedule passes such names to
    T.tma_copy and the waits."""
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "float32")
            bars = T.alloc_barrier([128, 128])
            for i in T.Parallel(128):
                s[i] = A[i] * 2.0
            bar = bars[1]
            T.mbarrier_arrive(bar)
            T.mbarrier_wait_parity(bar, 0)
            for i in T.Parallel(128):
                B[i] = s[127 - i]

    ptx = tl.compile(main, target="cuda:sm_90a").get_kernel_source()
    assert "mbarrier.arrive" in ptx and "mbarrier.try_wait.parity" in ptx
