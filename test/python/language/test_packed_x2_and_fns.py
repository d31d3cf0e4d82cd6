"""TileLang's packed x2 arithmetic (T.add2, T.sub2, T.mul2, T.fma2, T.max2,
T.min2, T.abs2 on float32x2 / float16x2 / bfloat16x2 values) and CUDA's
`__fns` (T.__fns: the n-th set bit of a mask from a base bit), on the CPU
target against NumPy, compiled for the GPUs, and their errors."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import TileLangError
from tilelang_mlir.language.loads import _fns_reference

TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _packed(op, dtype, n=64):
    @T.prim_func
    def main(A: T.Tensor((n, 2), dtype), B: T.Tensor((n, 2), dtype),
             C: T.Tensor((n, 2), dtype), D: T.Tensor((n, 2), dtype)):
        with T.Kernel(1, threads=n):
            for i in T.Parallel(n):
                a, b, c = A[i, 0:2], B[i, 0:2], C[i, 0:2]
                if op == "add2":
                    D[i, 0:2] = T.add2(a, b)
                elif op == "sub2":
                    D[i, 0:2] = T.sub2(a, b)
                elif op == "mul2":
                    D[i, 0:2] = T.mul2(a, b)
                elif op == "fma2":
                    D[i, 0:2] = T.fma2(a, b, c)
                elif op == "max2":
                    D[i, 0:2] = T.max2(a, b)
                elif op == "min2":
                    D[i, 0:2] = T.min2(a, b)
                else:
                    D[i, 0:2] = T.abs2(a)

    return main


def _reference(op, a, b, c):
    a64, b64, c64 = (x.double() for x in (a, b, c))
    out = {"add2": a64 + b64, "sub2": a64 - b64, "mul2": a64 * b64,
           "fma2": a64 * b64 + c64, "max2": torch.fmax(a64, b64),
           "min2": torch.fmin(a64, b64), "abs2": a64.abs()}[op]
    return out.to(a.dtype)  # one rounding of the exact result


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add2", "sub2", "mul2", "fma2", "max2", "min2", "abs2"])
def test_packed_x2_ops_on_the_cpu(op, dtype):
    g = torch.Generator().manual_seed(hash((op, dtype)) % 2**31)
    a, b, c = (torch.randn(64, 2, generator=g).to(TORCH[dtype]) for _ in range(3))
    if op in ("max2", "min2"):
        a[3, 0] = float("nan")  # a NaN lane gives the other operand
    d = torch.empty_like(a)
    tl.compile(_packed(op, dtype), target="cpu")(a, b, c, d)
    want = _reference(op, a, b, c)
    if op in ("max2", "min2"):
        assert d[3, 0] == b[3, 0]
    torch.testing.assert_close(d, want, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["add2", "fma2", "max2", "abs2"])
def test_packed_x2_ops_compile_for_gpus(op):
    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        assert ".entry" in tl.compile(_packed(op, "float16"), target=arch).get_source()


def test_packed_x2_errors():
    @T.prim_func
    def scalar(A: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=1):
            A[0] = T.add2(A[0], A[1])

    with pytest.raises((TileLangError, TypeError), match="float16x2"):
        tl.compile(scalar, target="cpu")

    @T.prim_func
    def mixed(A: T.Tensor((4,), "float16"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            A[0:2] = T.add2(A[0:2], B[0:2])

    with pytest.raises((TileLangError, ValueError), match="the same dtype"):
        tl.compile(mixed, target="cpu")

    @T.prim_func
    def wide(A: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=1):
            A[0:4] = T.add2(A[0:4], A[0:4])

    with pytest.raises((TileLangError, ValueError), match="float16x4"):
        tl.compile(wide, target="cpu")


def test_fns_reference_follows_ptx():
    # PTX fns.b32's definition, by hand on a few masks.
    assert _fns_reference(0b1011_0100, 0, 1) == 2
    assert _fns_reference(0b1011_0100, 0, 3) == 5
    assert _fns_reference(0b1011_0100, 3, 1) == 4
    assert _fns_reference(0b1011_0100, 7, -1) == 7
    assert _fns_reference(0b1011_0100, 6, -2) == 4
    assert _fns_reference(0b1011_0100, 2, 0) == 2
    assert _fns_reference(0b1011_0100, 3, 0) == 0xFFFFFFFF
    assert _fns_reference(0b1011_0100, 0, 5) == 0xFFFFFFFF
    assert _fns_reference(0xFFFFFFFF, 31, 1) == 31


def _fns_kernel(n):
    @T.prim_func
    def main(M: T.Tensor((n,), "uint32"), B: T.Tensor((n,), "int32"),
             O: T.Tensor((n,), "int32"), R: T.Tensor((n,), "uint32")):
        with T.Kernel(1, threads=n):
            for i in T.Parallel(n):
                R[i] = T.__fns(M[i], B[i], O[i])

    return main


def test_fns_on_the_cpu_against_the_reference():
    rng = np.random.default_rng(7)
    n = 256
    masks = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    masks[:8] = [0, 0xFFFFFFFF, 1, 0x80000000, 0x55555555, 0xAAAAAAAA, 0x10, 0xF0F0F0F0]
    bases = rng.integers(0, 32, n).astype(np.int32)
    offsets = rng.integers(-8, 9, n).astype(np.int32)
    out = np.zeros(n, np.uint32)
    tl.compile(_fns_kernel(n), target="cpu")(masks, bases, offsets, out)
    want = np.array([_fns_reference(int(m), int(b), int(o))
                     for m, b, o in zip(masks, bases, offsets)], np.uint32)
    np.testing.assert_array_equal(out, want)


def test_fns_compiles_for_gpus_and_folds_constants():
    for arch in ("cuda:sm_80", "cuda:sm_90a"):
        assert ".entry" in tl.compile(_fns_kernel(32), target=arch).get_source()
    assert T.__fns(0b1011_0100, 0, 3) == 5
    with pytest.raises(TileLangError, match="mask"):
        T.__fns(1.5, 0, 1)


@pytest.mark.gpu
def test_packed_x2_and_fns_on_the_gpu():
    a, b, c = (torch.randn(64, 2, device="cuda", dtype=torch.float16) for _ in range(3))
    d = torch.empty_like(a)
    tl.compile(_packed("fma2", "float16"), target="cuda")(a, b, c, d)
    torch.testing.assert_close(d, _reference("fma2", a, b, c), rtol=0, atol=0)
    n = 256
    rng = np.random.default_rng(3)
    masks = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    bases = rng.integers(0, 32, n).astype(np.int32)
    offsets = rng.integers(-8, 9, n).astype(np.int32)
    want = np.array([_fns_reference(int(m), int(b), int(o))
                     for m, b, o in zip(masks, bases, offsets)], np.uint32)
    args = [torch.from_numpy(x.view(np.int32)).cuda() for x in (masks, bases, offsets)]
    out = torch.zeros(n, dtype=torch.int32, device="cuda")
    kernel = tl.compile(_fns_kernel(n), target="cuda")
    kernel(args[0].view(torch.uint32), args[1], args[2], out.view(torch.uint32))
    np.testing.assert_array_equal(out.cpu().numpy().view(np.uint32), want)
