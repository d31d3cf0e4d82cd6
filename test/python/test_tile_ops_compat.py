"""TileLang's tile operations and math with TileLang's meanings: the
reduction kinds and keywords (bitwise, NaN propagation, unsigned, shared
operands), scans, reducers, math and fast/IEEE math, float8 arithmetic and
the random generator. CPU results against NumPy/torch on random inputs; GPU
parts marked `gpu`; the errors."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from devices import get, put
from tilelang_mlir.frontend.errors import TileLangError


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

_NP_REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "bitand": np.bitwise_and.reduce,
              "bitor": np.bitwise_or.reduce, "bitxor": np.bitwise_xor.reduce,
              "abssum": lambda a, axis: np.abs(a).sum(axis=axis),
              "absmax": lambda a, axis: np.abs(a).max(axis=axis)}


def _reduce_kernel(kind, dtype, scope, clear, M=16, N=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128):
            a = T.alloc_buffer((M, N), dtype, scope)
            b = T.alloc_buffer((M,), dtype, scope)
            T.copy(A, a)
            T.copy(B, b)
            T.reduce(a, b, kind, dim=1, clear=clear)
            T.copy(b, B)

    return main


@pytest.mark.parametrize("kind", ["bitand", "bitor", "bitxor", "max", "min", "sum"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int8", "uint16"])
@pytest.mark.parametrize("scope", ["local.fragment", "shared"])
def test_integer_reductions_signed_and_unsigned(kind, dtype, scope, target, rng):
    """Bitwise reductions, and max/min comparing unsigned elements as
    unsigned, from fragments or shared buffers (staged through fragments,
    as TileLang does)."""
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (16, 32), endpoint=True, dtype=np.int64).astype(dtype)
    b = rng.integers(info.min, info.max, 16, endpoint=True, dtype=np.int64).astype(dtype)
    for clear in (True, False):
        kernel = tl.compile(_reduce_kernel(kind, dtype, scope, clear), target=target)
        out = put(b.copy(), target)
        kernel(put(a, target), out)
        want = _NP_REDUCE[kind](a, axis=1).astype(dtype)
        if not clear:
            want = _NP_REDUCE[kind](np.stack([want, b], axis=1), axis=1).astype(dtype)
        np.testing.assert_array_equal(get(out), want, err_msg=f"clear={clear}")


@pytest.mark.parametrize("kind", ["bitand", "bitor", "bitxor"])
def test_bitwise_reduction_of_bools(kind, target, rng):
    M, N = 8, 16

    @T.prim_func
    def main(A: T.Tensor((M, N), "bool"), B: T.Tensor((M,), "bool")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((M, N), "bool")
            b = T.alloc_fragment((M,), "bool")
            T.copy(A, a)
            T.reduce(a, b, kind, dim=1, clear=True)
            T.copy(b, B)

    a = rng.random((M, N)) < 0.9
    a[0] = True
    kernel = tl.compile(main, out_idx=[1], target=target)
    np.testing.assert_array_equal(get(kernel(put(a, target))), _NP_REDUCE[kind](a, axis=1))


@pytest.mark.parametrize("fn", [T.reduce_max, T.reduce_min, T.reduce_absmax])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("clear", [True, False])
def test_nan_propagate_as_tilelang(fn, dtype, clear, target, rng):
    """nan_propagate=True makes a NaN the result for 16-bit floats only
    (CUDA's __hmax_nan); float32 reductions ignore NaN (fmaxf) either way."""
    L = 64

    @T.prim_func
    def main(A: T.Tensor((L,), dtype), O: T.Tensor((2,), dtype)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((L,), dtype)
            plain = T.alloc_fragment((1,), dtype)
            nan = T.alloc_fragment((1,), dtype)
            T.copy(A, frag)
            plain[0] = -1.0
            nan[0] = -1.0
            fn(frag, plain, clear=clear)
            fn(frag, nan, clear=clear, nan_propagate=True)
            O[0] = plain[0]
            O[1] = nan[0]

    torch_dtype = getattr(torch, dtype)
    a = torch.from_numpy(rng.standard_normal(L).astype(np.float32)).to(torch_dtype)
    a[int(rng.integers(0, L))] = float("nan")
    kernel = tl.compile(main, out_idx=[1], target=target)
    out = kernel(a.to("cuda") if target == "cuda" else a).float().cpu()
    finite = a[~torch.isnan(a)].float()
    ref = {T.reduce_max: finite.max(), T.reduce_min: finite.min(),
           T.reduce_absmax: finite.abs().max()}[fn]
    if not clear:
        ref = torch.maximum(ref, torch.tensor(-1.0)) if fn is not T.reduce_min else \
            torch.minimum(ref, torch.tensor(-1.0))
    assert out[0].item() == ref.item()
    assert torch.isnan(out[1]).item() == (dtype != "float32")


def test_reduce_keywords_and_errors(rng):
    """TileLang's batch / annotations knobs are accepted (they do not change
    the result); bad values and bitwise reductions of floats are errors."""
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((8, 16), "float32")
            b = T.alloc_fragment((8,), "float32")
            T.copy(A, a)
            T.reduce_sum(a, b, dim=1, batch=2, annotations={"enable_fadd2": False})
            T.copy(b, B)

    a = rng.standard_normal((8, 16)).astype(np.float32)
    out = tl.compile(main, out_idx=[1], target="cpu")(a)
    np.testing.assert_allclose(get(out), a.sum(1), rtol=1e-5, atol=1e-5)

    def bad(body):
        @T.prim_func
        def k(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=64):
                a = T.alloc_fragment((8, 16), "float32")
                b = T.alloc_fragment((8,), "float32")
                body(a, b)

        return k

    for body, match in [
        (lambda a, b: T.reduce_bitand(a, b, dim=1), "requires integer or bool buffers"),
        (lambda a, b: T.reduce_sum(a, b, dim=1, batch=0), "batch must be an int >= 1"),
        (lambda a, b: T.reduce(a, b, "prod", 1, True), "unknown reduce_type 'prod'"),
        (lambda a, b: T.reduce_max(a, b, dim=2), "dim 2 is out of range"),
    ]:
        with pytest.raises(TileLangError, match=match):
            tl.compile(bad(body), target="cpu")


def test_reduce_from_a_shared_region_and_local_buffers(target, rng):
    """A region of a shared buffer reduces like a tile of its shape; a local
    buffer reduces within each thread into a local buffer."""
    @T.prim_func
    def main(A: T.Tensor((4, 32), "float32"), B: T.Tensor((32,), "float32"),
             C: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4, 32), "float32")
            col = T.alloc_fragment((32,), "float32")
            T.copy(A, s)
            T.reduce_max(s[0:4, 0:32], col, dim=0)
            T.copy(col, B)
            loc = T.alloc_local((4, 8), "int32")
            red = T.alloc_local((4,), "int32")
            for i in T.serial(4):
                for j in T.serial(8):
                    loc[i, j] = i * 8 + j
            T.reduce_sum(loc, red, dim=1)
            for i in T.serial(4):
                C[i] = red[i]

    a = rng.standard_normal((4, 32)).astype(np.float32)
    kernel = tl.compile(main, out_idx=[1, 2], target=target)
    b, c = (get(t) for t in kernel(put(a, target)))
    np.testing.assert_array_equal(b, a.max(0))
    np.testing.assert_array_equal(c, np.arange(32).reshape(4, 8).sum(1))


def test_reductions_compile_for_sm90a():
    """Bitwise, unsigned and NaN-propagating reductions, and shared operands,
    lower to NVVM (shuffles and scratch use the same combines)."""
    for kind, dtype in (("bitxor", "uint32"), ("max", "uint16"), ("max", "float16")):
        tl.compile(_reduce_kernel(kind, dtype, "shared", False), target="cuda:sm_90a")
