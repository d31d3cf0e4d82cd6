"""Tensors from addresses: `T.make_tensor(ptr, shape, dtype)` over a
`T.ptr` argument or an element of a `T.Tensor([n], T.ptr)` table of
`tensor.data_ptr()`s (TileLang's grouped GEMM through pointer tables);
`T.make_tensor_from_addr` at computed addresses over `T.Ptr` parameters;
`T.address_of(A[i, j])`, the address of an element.
Results on random inputs against PyTorch on the CPU and (marked gpu) the
GPU; code generation for sm_80, sm_90a and gfx942; errors."""

import math

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul
from tilelang_mlir.base.errors import CompilationError, TileLangError


def table_copy(G, N, dtype="float16"):
    @T.prim_func
    def main(src_ptrs: T.Tensor([G], T.ptr), out: T.Tensor([G, N], dtype)):
        with T.Kernel(G, threads=32) as bx:
            Src = T.make_tensor(src_ptrs[bx], (N,), dtype)
            for i in T.Parallel(N):
                out[bx, i] = Src[i] * 2

    return main


def matmul_at_addresses(block_M=64, block_N=64, block_K=32):
    """Sizes are run-time scalars; the tensors are made outside the kernel."""
    @T.prim_func
    def main(a_ptr: T.ptr, b_ptr: T.ptr, c_ptr: T.ptr, m: T.int32, n: T.int32, k: T.int32):
        A = T.make_tensor(a_ptr, (m, k), "float16")
        B = T.make_tensor(b_ptr, (k, n), "float16")
        C = T.make_tensor(c_ptr, (m, n), "float32")
        with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block_M, bx * block_N])

    return main


def grouped_gemm(sizes, N, K, block_M=64, block_N=64, block_K=32):
    """TileLang's example_grouped_gemm_fwd_ptr: one table of addresses per
    operand, the group of a block found from the tile offsets."""
    G, max_M = len(sizes), max(sizes)
    total = sum(math.ceil(s / block_M) for s in sizes)

    @T.prim_func
    def main(a_ptrs: T.Tensor([G], T.ptr), b_ptrs: T.Tensor([G], T.ptr),
             c_ptrs: T.Tensor([G], T.ptr), offsets: T.Tensor([G], T.int32)):
        with T.Kernel(total, T.ceildiv(N, block_N), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            g = T.alloc_var(T.int32)
            base = T.alloc_var(T.int32)
            g = 0
            base = 0
            for i in range(G):
                inside = bx >= offsets[i]
                g = T.if_then_else(inside, i, g)
                base = T.if_then_else(inside, offsets[i], base)
            m0 = (bx - base) * block_M
            A = T.make_tensor(a_ptrs[g], (max_M, K), "float16")
            B = T.make_tensor(b_ptrs[g], (K, N), "float16")
            C = T.make_tensor(c_ptrs[g], (max_M, N), "float16")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=1):
                T.copy(A[m0, ko * block_K], A_s)
                T.copy(B[ko * block_K, by * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[m0, by * block_N])

    return main


def views_at_addresses(N=48, scale=3):
    """`T.Ptr` parameters (both spellings); each block's row of `src` at
    the address plus a byte offset (T.make_tensor_from_addr)."""
    @T.prim_func
    def main(src: T.Ptr(T.float16), dst: T.Ptr[T.float32]):
        with T.Kernel(2, threads=32) as bx:
            S = T.make_tensor_from_addr(src + bx * (N * 2), (N,), "float16")
            D = T.make_tensor_from_addr(dst, (2, N), T.float32)
            for i in T.Parallel(N):
                D[bx, i] = S[i] * scale

    return main


def rows_at_element_addresses(M=6, N=40, skip=3):
    """Block bx reads row bx of A from its T.address_of and writes row
    M-1-bx of B from column `skip` on: B[M-1-bx, skip:] = A[bx, skip:] + 1."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=32) as bx:
            R = T.make_tensor(T.address_of(A[bx, 0]), (N,), "float32")
            W = T.make_tensor_from_addr(T.address_of(B[M - 1 - bx, skip]), (N - skip,),
                                        "float32")
            for i in T.Parallel(N - skip):
                W[i] = R[i + skip] + 1.0

    return main


def address_in_views():
    """T.address_of of an element of a reshaped tensor and of a tensor made
    at an address: B = A[2, :] both ways (B[0, :] and B[1, :])."""
    @T.prim_func
    def main(a_ptr: T.ptr, B: T.Tensor((2, 8), "float32")):
        A = T.make_tensor(a_ptr, (4, 8), "float32")
        with T.Kernel(1, threads=32):
            flat = T.reshape(B, (16,))
            R = T.make_tensor(T.address_of(A[2, 0]), (8,), "float32")
            W = T.make_tensor(T.address_of(flat[8]), (8,), "float32")
            for i in T.Parallel(8):
                B[0, i] = R[i]
                W[i] = R[i]

    return main


def address_in_strided(row=2):
    """T.address_of in a tensor argument with a run-time row stride."""
    s0 = T.symbolic("s0")

    @T.prim_func
    def main(A: T.StridedTensor((4, 8), (s0, 1), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            R = T.make_tensor(T.address_of(A[row, 0]), (8,), "float32")
            for i in T.Parallel(8):
                B[i] = R[i]

    return main


def rows_reference(a, skip=3):
    ref = torch.zeros_like(a)
    ref[:, skip:] = a.flip(0)[:, skip:] + 1
    return ref


def run_grouped(kernel, sizes, N, K, device, rng):
    max_M, block_M = max(sizes), 64
    offsets, acc = [], 0
    for s in sizes:
        offsets.append(acc)
        acc += math.ceil(s / block_M)
    a = [torch.from_numpy(rng.standard_normal((max_M, K))).half().to(device) for _ in sizes]
    b = [torch.from_numpy(rng.standard_normal((K, N))).half().to(device) for _ in sizes]
    c = [torch.zeros(max_M, N, dtype=torch.float16, device=device) for _ in sizes]
    table = [torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device=device)
             for ts in (a, b, c)]
    kernel(*table, torch.tensor(offsets, dtype=torch.int32, device=device))
    # Per group: its C rows, A @ B's, and the rows past its last tile (the
    # kernel's blocks write whole tiles of their own group only).
    return [(z[:s].float(), (x.float() @ y.float())[:s],
             z[math.ceil(s / block_M) * block_M:])
            for s, x, y, z in zip(sizes, a, b, c)]


def test_pointer_table_on_the_cpu(rng):
    srcs = [torch.from_numpy(rng.standard_normal(24).astype(np.float16)) for _ in range(3)]
    table = torch.tensor([s.data_ptr() for s in srcs], dtype=torch.int64)
    out = torch.zeros(3, 24, dtype=torch.float16)
    tl.compile(table_copy(3, 24), target="cpu")(table, out)
    torch.testing.assert_close(out, torch.stack(srcs) * 2)


def test_pointer_arguments_and_run_time_sizes_on_the_cpu(rng):
    kernel = tl.compile(matmul_at_addresses(), target="cpu")
    M, N, K = 96, 80, 64
    a = torch.from_numpy(rng.standard_normal((M, K))).half()
    b = torch.from_numpy(rng.standard_normal((K, N))).half()
    c = torch.zeros(M, N)
    kernel(a, b, c, M, N, K)  # a tensor for a T.ptr argument: its address
    assert_float32_matmul(c, a, b)  # float32 sums of exact float16 products: the summation bound
    c2 = torch.zeros(M, N)
    kernel(a.data_ptr(), b.data_ptr(), c2.data_ptr(), M, N, K)  # or the address itself
    torch.testing.assert_close(c2, c)


def test_tensors_at_computed_addresses_on_the_cpu(rng):
    a = torch.from_numpy(rng.standard_normal((2, 48)).astype(np.float16))
    d = torch.zeros(2, 48)
    tl.compile(views_at_addresses(), target="cpu")(a, d)
    torch.testing.assert_close(d, (a * 3).float())


def test_addresses_of_elements_on_the_cpu(rng):
    a = torch.from_numpy(rng.standard_normal((6, 40)).astype(np.float32))
    b = torch.zeros(6, 40)
    tl.compile(rows_at_element_addresses(), target="cpu")(a, b)
    torch.testing.assert_close(b, rows_reference(a))
    a = torch.from_numpy(rng.standard_normal((4, 8)).astype(np.float32))
    b = torch.zeros(2, 8)
    tl.compile(address_in_views(), target="cpu")(a, b)
    torch.testing.assert_close(b, a[2].expand(2, 8))
    a = torch.from_numpy(rng.standard_normal((4, 16)).astype(np.float32))[:, 5:13]
    b = torch.zeros(8)
    tl.compile(address_in_strided(), target="cpu")(a, b)
    torch.testing.assert_close(b, a[2])


def test_Ptr_is_a_pointer_parameter():
    assert T.Ptr(T.float16) is T.ptr and T.Ptr["float32", "global"] is T.ptr
    assert T.Ptr(T.float16) is T.Ptr[T.float16]
    with pytest.raises(TileLangError, match="storage_scope='shared'"):
        T.Ptr(T.float16, "shared")
    with pytest.raises(TileLangError, match="T.Ptr"):
        T.Ptr("float17")


def test_grouped_gemm_through_pointer_tables_on_the_cpu(rng):
    sizes, N, K = [70, 128, 33], 64, 64
    kernel = tl.compile(grouped_gemm(sizes, N, K), target="cpu")
    for got, want, untouched in run_grouped(kernel, sizes, N, K, "cpu", rng):
        torch.testing.assert_close(got, want, atol=5e-2, rtol=1e-2)
        assert not untouched.any(), "a block wrote past its group's tiles"


@pytest.mark.parametrize("target", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_compiles_for_every_gpu(target):
    for program in (table_copy(3, 24), matmul_at_addresses(), grouped_gemm([70, 128], 64, 64),
                    views_at_addresses(), rows_at_element_addresses(), address_in_views(),
                    address_in_strided()):
        assert tl.compile(program, target=target).get_kernel_source()


@pytest.mark.parametrize("call,match", [
    ("T.make_tensor(P[0], (4, 4), 'float32', strides=(1, 4))",
     r"not supported by tilelang-mlir: T.make_tensor with strides \[1, 4\]"),
    ("T.make_tensor(P[0], (4, 4), 'float32', elem_offset=2)", "elem_offset"),
    ("T.make_tensor(P[0], (4, 4), 'float32', scope='shared')", "makes global tensors"),
    ("T.make_tensor(I[0], (4, 4), 'float32')", "takes a 64-bit device address"),
    ("T.make_tensor(P[0], (4, 0), 'float32')", "dimension 1 must be positive"),
    ("T.make_tensor_from_addr(P[0], (4,), 'float32', storage_scope='shared')",
     "makes global tensors"),
    ("T.make_tensor_from_addr(I[0], (4,), 'float32')", "takes a 64-bit device address"),
    ("T.address_of(T.alloc_shared((4,), 'float32')[1])",
     "T.address_of of shared buffer .* addresses are of global tensors"),
    ("T.address_of(I[0] + 1)", r"T.address_of takes one element of a tensor \(`A\[i, j\]`\)"),
    ("T.address_of(I[0:2])", "a slice of buffer 'I'"),
    ("T.address_of(T.make_tensor(P[0], (8,), 'int4')[1])", "not stored as whole bytes"),
])
def test_errors(call, match):
    fn = eval(f"lambda P, I: {call}")  # noqa: S307

    @T.prim_func
    def main(P: T.Tensor((2,), T.ptr), I: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=32):
            fn(P, I)

    with pytest.raises((TileLangError, CompilationError), match=match):
        tl.compile(main, target="cpu")


def test_a_pointer_table_must_hold_64_bit_integers():
    kernel = tl.compile(table_copy(2, 8), target="cpu")
    with pytest.raises(TypeError, match="must have dtype handle, got int32"):
        kernel(torch.zeros(2, dtype=torch.int32), torch.zeros(2, 8, dtype=torch.float16))


@pytest.mark.gpu
def test_pointer_table_on_gpu(rng):
    kernel = tl.compile(table_copy(3, 24), target="cuda")
    srcs = [torch.from_numpy(rng.standard_normal(24).astype(np.float16)).cuda() for _ in range(3)]
    table = torch.tensor([s.data_ptr() for s in srcs], dtype=torch.int64, device="cuda")
    out = torch.zeros(3, 24, dtype=torch.float16, device="cuda")
    kernel(table, out)
    torch.testing.assert_close(out, torch.stack(srcs) * 2)


@pytest.mark.gpu
def test_pointer_arguments_on_gpu(rng):
    kernel = tl.compile(matmul_at_addresses(), target="cuda")
    M, N, K = 200, 136, 96
    a = torch.from_numpy(rng.standard_normal((M, K))).half().cuda()
    b = torch.from_numpy(rng.standard_normal((K, N))).half().cuda()
    c = torch.zeros(M, N, device="cuda")
    kernel(a, b, c, M, N, K)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)


@pytest.mark.gpu
def test_tensors_at_computed_addresses_on_gpu(rng):
    a = torch.from_numpy(rng.standard_normal((2, 48)).astype(np.float16)).cuda()
    d = torch.zeros(2, 48, device="cuda")
    tl.compile(views_at_addresses(), target="cuda")(a, d)
    torch.testing.assert_close(d, (a * 3).float())


@pytest.mark.gpu
def test_addresses_of_elements_on_gpu(rng):
    a = torch.from_numpy(rng.standard_normal((6, 40)).astype(np.float32)).cuda()
    b = torch.zeros(6, 40, device="cuda")
    tl.compile(rows_at_element_addresses(), target="cuda")(a, b)
    torch.testing.assert_close(b, rows_reference(a))
    a = torch.from_numpy(rng.standard_normal((4, 8)).astype(np.float32)).cuda()
    b = torch.zeros(2, 8, device="cuda")
    tl.compile(address_in_views(), target="cuda")(a, b)
    torch.testing.assert_close(b, a[2].expand(2, 8))


@pytest.mark.gpu
def test_grouped_gemm_on_gpu(rng):
    sizes, N, K = [70, 128, 33, 256], 128, 96
    kernel = tl.compile(grouped_gemm(sizes, N, K), target="cuda")
    for got, want, untouched in run_grouped(kernel, sizes, N, K, "cuda", rng):
        torch.testing.assert_close(got, want, atol=5e-2, rtol=1e-2)
        assert not untouched.any(), "a block wrote past its group's tiles"


def test_eager_pointer_parameters(target, rng):
    """An eager program whose signature says `A: T.ptr` (TileLang's
    test_jit2_gemm_ptr): compiled ahead with `T.ptr()` for the addresses,
    then called with tensors, whose addresses it takes."""

    @tl.jit(target=target)
    def scale(A: T.ptr, B: T.ptr, N: int, dtype: T.dtype, factor: float = 2.0):
        A = T.make_tensor(A, (N,), dtype)
        B = T.make_tensor(B, (N,), dtype)
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < N:
                    B[bx * 32 + i] = A[bx * 32 + i] * factor

    assert repr(T.ptr()) == "T.ptr()"
    scale.compile(A=T.ptr(), B=T.ptr(), N=100, dtype=T.float32)
    device = "cuda" if target == "cuda" else "cpu"
    a = torch.from_numpy(rng.standard_normal(100).astype(np.float32)).to(device)
    b = torch.zeros(100, device=device)
    scale(a, b, 100, T.float32)
    torch.testing.assert_close(b, a * 2)
