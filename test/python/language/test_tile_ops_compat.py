"""TileLang's tile operations and math with TileLang's meanings: the
reduction kinds and keywords (bitwise, NaN propagation, unsigned, shared
operands), scans, reducers, math and fast/IEEE math, float8 arithmetic and
the random generator. CPU results against NumPy/torch on random inputs; GPU
parts marked `gpu`; the errors."""

import re

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_sum
from support.devices import get, put
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
    combine = {("bitxor", "uint32"): "xor.b32", ("max", "uint16"): "max.u16",
               ("max", "float16"): "max.f16"}
    for (kind, dtype), op in combine.items():
        src = tl.compile(_reduce_kernel(kind, dtype, "shared", False),
                         target="cuda:sm_90a").get_source()
        # The kind's own combine, across lanes by butterfly shuffles.
        assert re.search(rf"\b{re.escape(op)}\b", src), (kind, dtype)
        assert "shfl.sync.bfly.b32" in src, (kind, dtype)


# ---------------------------------------------------------------------------
# Math functions
# ---------------------------------------------------------------------------

_UNARY = {
    "exp10": (lambda x: 10.0 ** x, (-3, 3)), "log10": (np.log10, (0.01, 100)),
    "log1p": (np.log1p, (-0.5, 10)), "tan": (np.tan, (-1.4, 1.4)),
    "sinh": (np.sinh, (-4, 4)), "cosh": (np.cosh, (-4, 4)), "asin": (np.arcsin, (-1, 1)),
    "acos": (np.arccos, (-1, 1)), "atan": (np.arctan, (-10, 10)),
    "asinh": (np.arcsinh, (-10, 10)), "acosh": (np.arccosh, (1, 10)),
    "atanh": (np.arctanh, (-0.9, 0.9)), "trunc": (np.trunc, (-10, 10)),
    "nearbyint": (np.rint, (-10, 10)), "round": (np.rint, (-10, 10)),
    "fabs": (np.abs, (-10, 10)), "erf": (None, (-3, 3)),
    "__exp": (np.exp, (-5, 5)), "__exp10": (lambda x: 10.0 ** x, (-3, 3)),
    "__log": (np.log, (0.01, 100)), "__log2": (np.log2, (0.01, 100)),
    "__log10": (np.log10, (0.01, 100)), "__sin": (np.sin, (-3, 3)),
    "__cos": (np.cos, (-3, 3)), "__tan": (np.tan, (-1.4, 1.4)),
    "fast_rcp": (lambda x: 1.0 / x, (0.25, 8)),
}


def _unary_kernel(fn, dtype="float32", n=256):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(n):
                B[i] = fn(A[i])

    return main


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary_math_functions(name, target, rng):
    ref, (lo, hi) = _UNARY[name]
    if ref is None:
        import math

        ref = np.vectorize(math.erf)
    fn = getattr(T, name)
    x = rng.uniform(lo, hi, 256).astype(np.float32)
    if name in ("round", "nearbyint"):
        x[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5]  # ties go to even
    kernel = tl.compile(_unary_kernel(fn), out_idx=[1], target=target)
    tol = 2e-6 if target == "cpu" and not name.startswith("__") else 2e-5
    np.testing.assert_allclose(get(kernel(put(x, target))), ref(x.astype(np.float64)),
                               rtol=tol * 10, atol=tol)


def test_round_ties_away_from_zero_and_errors(target, rng):
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49, -7.5, 3.0] * 4, np.float32)
    kernel = tl.compile(_unary_kernel(lambda v: T.round(v, "ties-away-from-zero"), n=32),
                        out_idx=[1], target=target)
    np.testing.assert_array_equal(get(kernel(put(x, target))),
                                  np.sign(x) * np.floor(np.abs(x) + 0.5))
    with pytest.raises(TileLangError, match="Unsupported T.round rounding_mode 'up'"):
        tl.compile(_unary_kernel(lambda v: T.round(v, "up"), n=32), target="cpu")
    with pytest.raises(TileLangError, match="only supports floating-point inputs"):
        tl.compile(_unary_kernel(T.__exp, dtype="int32", n=32), target="cpu")


def test_binary_math_functions(target, rng):
    n = 256

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"),
             E: T.Tensor((n,), "int32"), O: T.Tensor((6, n), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(n):
                O[0, i] = T.atan2(A[i], B[i])
                O[1, i] = T.fmod(A[i], B[i])
                O[2, i] = T.copysign(A[i], B[i])
                O[3, i] = T.hypot(A[i], B[i])
                O[4, i] = T.ldexp(A[i], E[i])
                O[5, i] = T.nextafter(A[i], B[i])

    a = rng.standard_normal(n).astype(np.float32) * 4
    b = rng.standard_normal(n).astype(np.float32) * 4
    b[:4] = [0.0, np.inf, -np.inf, np.nan]
    a[4] = b[4] = 1.5  # nextafter of equal values
    a[5], b[5] = 3e38, 3e38  # hypot without overflow
    e = rng.integers(-140, 140, n).astype(np.int32)
    out = get(tl.compile(main, out_idx=[3], target=target)(
        put(a, target), put(b, target), put(e, target)))
    with np.errstate(all="ignore"):
        want = [np.arctan2(a, b), np.fmod(a, b), np.copysign(a, b),
                np.hypot(a.astype(np.float64), b).astype(np.float32),
                np.ldexp(a.astype(np.float64), e).astype(np.float32), np.nextafter(a, b)]
    for k, w in enumerate(want):
        np.testing.assert_allclose(out[k], w, rtol=3e-6 if k == 0 else 0, atol=0,
                                   err_msg=f"row {k}")


def test_atan2_quadrants_and_special_values(target, rng):
    """atan2 takes C's quadrants, signed zeros and infinities (CUDA's
    atan2f does): the half-turn for x < 0 (-0 included) carries y's sign
    even where y / x is zero (atan2(-1, -inf) = -pi, atan2(-0, -1) = -pi),
    both zero gives 0 or pi, both infinite pi / 4 or 3 pi / 4."""
    special = [0.0, -0.0, 1.0, -1.0, 2.5, -3.7, np.inf, -np.inf, np.nan, 1e-30, -1e30]
    y, x = (np.array(v, np.float32) for v in zip(*[(a, b) for a in special for b in special]))
    y = np.concatenate([y, rng.standard_normal(256 - y.size).astype(np.float32) * 4])
    x = np.concatenate([x, rng.standard_normal(256 - x.size).astype(np.float32) * 4])
    n = y.size

    @T.prim_func
    def main(Y: T.Tensor((n,), "float32"), X: T.Tensor((n,), "float32"),
             O: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(n):
                O[i] = T.atan2(Y[i], X[i])

    out = get(tl.compile(main, out_idx=[2], target=target)(put(y, target), put(x, target)))
    want = np.arctan2(y, x)
    np.testing.assert_allclose(out, want, rtol=3e-6, atol=0)
    wrong = (np.signbit(out) != np.signbit(want)) & ~np.isnan(want)  # (a NaN's sign is no result)
    assert not wrong.any(), (y[wrong], x[wrong], out[wrong])


def test_float_classes_and_bit_counts(target, rng):
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), "float16"), I: T.Tensor((n,), "int32"),
             O: T.Tensor((5, n), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                O[0, i] = T.if_then_else(T.isnan(A[i]), 1, 0)
                O[1, i] = T.if_then_else(T.isinf(A[i]), 1, 0)
                O[2, i] = T.if_then_else(T.isfinite(A[i]), 1, 0)
                O[3, i] = T.clz(I[i])
                O[4, i] = T.popcount(I[i])

    a = rng.standard_normal(n).astype(np.float16)
    a[:4] = [np.nan, np.inf, -np.inf, 0]
    v = rng.integers(-(2 ** 31), 2 ** 31 - 1, n).astype(np.int32)
    v[:2] = [0, 1]
    out = get(tl.compile(main, out_idx=[2], target=target)(put(a, target), put(v, target)))
    u = v.view(np.uint32).astype(np.int64)
    clz = np.array([32 - int(x).bit_length() for x in u])
    pop = np.array([bin(int(x)).count("1") for x in u])
    want = np.stack([np.isnan(a), np.isinf(a), np.isfinite(a), clz, pop]).astype(np.int32)
    np.testing.assert_array_equal(out, want)


def test_truncmod_truncdiv_follow_c(target):
    n = 16

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int32"),
             O: T.Tensor((2, n), "int32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                O[0, i] = T.truncmod(A[i], B[i])
                O[1, i] = T.truncdiv(A[i], B[i])

    a = np.array([7, -7, 7, -7] * 4, np.int32)
    b = np.array([3, 3, -3, -3] * 4, np.int32)
    out = get(tl.compile(main, out_idx=[2], target=target)(put(a, target), put(b, target)))
    np.testing.assert_array_equal(out[0], np.fmod(a, b))
    np.testing.assert_array_equal(out[1], np.trunc(a / b).astype(np.int32))


# ---------------------------------------------------------------------------
# IEEE arithmetic with rounding modes
# ---------------------------------------------------------------------------


def _directed(exact, mode, dtype=np.float32):
    """The float of `dtype` that rounds the Fraction `exact` in `mode`."""
    from fractions import Fraction

    r = dtype(float(exact))
    while Fraction(float(r)) > exact:
        r = np.nextafter(r, dtype(-np.inf))
    lo = r
    hi = lo if Fraction(float(lo)) == exact else np.nextafter(lo, dtype(np.inf))
    if lo == hi:
        return lo
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return lo if exact > 0 else hi
    dl, dh = exact - Fraction(float(lo)), Fraction(float(hi)) - exact
    if dl != dh:
        return lo if dl < dh else hi
    return lo if int(np.asarray(lo).view(np.uint32 if dtype == np.float32 else np.uint64)) % 2 == 0 else hi


def _exact(name, args):
    from fractions import Fraction

    f = [Fraction(float(v)) for v in args]
    return {"ieee_add": lambda: f[0] + f[1], "ieee_sub": lambda: f[0] - f[1],
            "ieee_mul": lambda: f[0] * f[1], "ieee_fdiv": lambda: f[0] / f[1],
            "ieee_fmaf": lambda: f[0] * f[1] + f[2], "ieee_frcp": lambda: 1 / f[0]}[name]()


def _sqrt_directed(x, mode, dtype=np.float32):
    from fractions import Fraction

    fx = Fraction(float(x))
    r = dtype(np.sqrt(np.float64(x)))
    while Fraction(float(r)) ** 2 > fx:
        r = np.nextafter(r, dtype(0))
    while Fraction(float(np.nextafter(r, dtype(np.inf)))) ** 2 <= fx:
        r = np.nextafter(r, dtype(np.inf))
    lo = r
    if Fraction(float(lo)) ** 2 == fx:
        return lo
    hi = np.nextafter(lo, dtype(np.inf))
    if mode in ("rd", "rz"):
        return lo
    if mode == "ru":
        return hi
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    return lo if mid * mid > fx else hi


@pytest.mark.parametrize("name", ["ieee_add", "ieee_sub", "ieee_mul", "ieee_fdiv", "ieee_fmaf",
                                  "ieee_frcp", "ieee_fsqrt"])
@pytest.mark.parametrize("mode", ["rn", "rz", "ru", "rd"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ieee_rounding_modes_are_exact(name, mode, dtype, target, rng):
    fn = getattr(T, name)
    arity = {"ieee_fmaf": 3, "ieee_frcp": 1, "ieee_fsqrt": 1}.get(name, 2)
    n = 128

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype),
             D: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(n):
                if arity == 1:
                    D[i] = fn(A[i], mode)
                elif arity == 2:
                    D[i] = fn(A[i], B[i], mode)
                else:
                    D[i] = fn(A[i], B[i], C[i], mode)

    npd = np.dtype(dtype).type
    a, b, c = ((rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3, n)).astype(npd)
               for _ in range(3))
    if name == "ieee_fsqrt":
        a = np.abs(a)
    big = np.finfo(npd).max
    a[0], b[0], c[0] = big, big, big  # overflow: toward zero gives the largest finite
    a[1], b[1], c[1] = 1.0, -1.0, -1.0  # an exact zero sum
    kernel = tl.compile(main, out_idx=[3], target=target)
    out = get(kernel(*(put(v, target) for v in (a, b, c))))
    for i in range(n):
        args = (a[i], b[i], c[i])[:arity]
        if name == "ieee_fsqrt":
            want = _sqrt_directed(a[i], mode, npd)
        else:
            from fractions import Fraction

            exact = _exact(name, args)
            top = np.finfo(npd).max
            if abs(exact) > Fraction(float(top)):  # overflow (far past the largest)
                toward_zero = mode == "rz" or (mode == "rd") == (exact > 0)
                want = (top if toward_zero else npd(np.inf)) * npd(1 if exact > 0 else -1)
            else:
                want = _directed(exact, mode, npd)
        assert out[i] == want or (np.isnan(out[i]) and np.isnan(want)), \
            (i, args, mode, out[i], want)
        if name in ("ieee_add", "ieee_sub") and out[i] == 0:
            assert np.signbit(out[i]) == (mode == "rd"), (i, args, mode)


def test_ieee_errors_as_tilelang():
    with pytest.raises(ValueError, match="Invalid rounding mode"):
        T.ieee_add(1.0, 2.0, "invalid_mode")
    with pytest.raises(ValueError, match="Invalid rounding mode"):
        T.ieee_fsqrt(4.0, "bad_mode")
    for dtype, fn, match in [
        ("float16", lambda x: T.ieee_add(x, x, "rz"),
         "Only rounding mode 'rn' is available for half precision"),
        ("float64", T.ieee_frsqrt, "IEEE frsqrt is not supported for float64"),
    ]:
        with pytest.raises(TileLangError, match=match):
            tl.compile(_unary_kernel(fn, dtype=dtype, n=32), target="cpu")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ieee_half_precision_round_to_nearest(dtype, target, rng):
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), O: T.Tensor((4, n), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                O[0, i] = T.ieee_add(A[i], B[i])
                O[1, i] = T.ieee_mul(A[i], B[i])
                O[2, i] = T.ieee_fdiv(A[i], B[i])
                O[3, i] = T.ieee_frsqrt(T.abs(A[i]))

    td = getattr(torch, dtype)
    a = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(td)
    b = torch.from_numpy(rng.standard_normal(n).astype(np.float32) + 3).to(td)
    out = tl.compile(main, out_idx=[2], target=target)(a.to("cuda") if target == "cuda" else a,
                                                       b.to("cuda") if target == "cuda" else b)
    out = out.cpu()
    a64, b64 = a.double(), b.double()
    want = torch.stack([a64 + b64, a64 * b64, a64 / b64, 1 / a64.abs().sqrt()]).to(td)
    assert torch.equal(out, want)


def test_math_compiles_for_gpus():
    """The functions without an instruction expand (tan, sinh, ...) or take
    MLIR's polynomial approximations (atan, asin, erf, log1p, ...); the IEEE
    ops use PTX's rounded instructions."""
    for name in sorted(_UNARY):
        tl.compile(_unary_kernel(getattr(T, name)), target="cuda:sm_90a")
    k = tl.compile(_unary_kernel(lambda x: T.ieee_fmaf(x, x, x, "rz")), target="cuda:sm_90a")
    assert "fma.rz.f32" in k.get_kernel_source() or "fma.rz.f32" in str(k.artifact.stages)
    tl.compile(_unary_kernel(T.tan), target="rocm:gfx942")


@pytest.mark.parametrize("fn", [T.atan, lambda x: T.atan2(x, x + 1.0), T.asin])
def test_gpu_atan_denominator_is_monic(fn):
    """float32 atan on GPUs (atan2, asin and acos reach it too) is Cephes'
    rational t + t z P(z) / Q(z) with Q monic: Q starts as z + 24.8584...
    MLIR's approximation left out Q's z^5 term, up to 40 ulps off below
    0.66 (row 0 of test_binary_math_functions: 3.4e-6 relative on the
    H100, where CUDA's atan2f is within 3 ulps)."""
    ptx = tl.compile(_unary_kernel(fn), target="cuda:sm_90a").get_kernel_source()
    # z + 24.8584f, or t * t + 24.8584f contracted; MLIR's had 24.8584f z + 165.03f.
    monic = r"(add(\.rn)?\.f32\s+%r\d+, %r\d+|fma\.rn\.f32\s+%r\d+, (%r\d+), \3), 0f41C6DE23;"
    assert re.search(monic, ptx), ptx


# ---------------------------------------------------------------------------
# float8 arithmetic
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float8_e4m3", "float8_e5m2"])
def test_float8_arithmetic_rounds_each_operation(dtype, target, rng):
    """As TileLang's fp8 operators (cutlass): each operation computes in
    float32 and rounds back to float8 (nearest even, saturating); T.max /
    T.min / T.clamp compare exactly; a Python float is a float32 constant
    (TileLang's typing), so A * 0.3 - B computes in float32 and rounds once,
    at the store."""
    n = 256

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), O: T.Tensor((7, n), dtype)):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(n):
                O[0, i] = A[i] + B[i]
                O[1, i] = A[i] * B[i]
                O[2, i] = T.max(A[i], B[i])
                O[3, i] = T.min(A[i], B[i])
                O[4, i] = T.clamp(A[i], T.cast(-1.0, dtype), T.cast(1.0, dtype))
                O[5, i] = A[i] * 0.3 - B[i]
                O[6, i] = T.if_then_else(A[i] < B[i], T.abs(A[i]), -B[i])

    td = {"float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[dtype]
    a = torch.from_numpy(rng.uniform(-8, 8, n).astype(np.float32)).to(td)
    b = torch.from_numpy(rng.uniform(-8, 8, n).astype(np.float32)).to(td)
    kernel = tl.compile(main, out_idx=[2], target=target)
    dev = "cuda" if target == "cuda" else "cpu"
    out = kernel(a.to(dev), b.to(dev)).cpu().float()
    fa, fb = a.float(), b.float()
    r8 = lambda t: t.to(td).float()  # noqa: E731
    want = torch.stack([r8(fa + fb), r8(fa * fb), torch.maximum(fa, fb), torch.minimum(fa, fb),
                        fa.clamp(-1, 1), r8(fa * torch.tensor(0.3) - fb),
                        torch.where(fa < fb, fa.abs(), -fb)])
    assert torch.equal(out, want)


def _sum16(dtype, kind, dim, clear, M=8, N=512):
    """A reduction of a (M, N) fragment (dim=1; (N, M) for dim=0) of
    `dtype` into an (M,) fragment that starts as B."""
    shape = (M, N) if dim == 1 else (N, M)

    @T.prim_func
    def main(A: T.Tensor(shape, dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment(shape, dtype)
            b = T.alloc_fragment((M,), dtype)
            T.copy(A, a)
            T.copy(B, b)
            T.reduce(a, b, kind, dim=dim, clear=clear)
            T.copy(b, B)

    return main


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["sum", "abssum"])
@pytest.mark.parametrize("dim, clear", [(1, True), (0, True), (1, False)])
def test_16bit_sums_round_once(dtype, kind, dim, clear, target, rng):
    """A float16 / bfloat16 sum of 512 elements (along either dimension,
    added to the destination's old value or not) is within one 16-bit
    rounding of the exact sum: every partial is float32 on every target
    (a 16-bit running sum on the CPU was 0.17 off in bfloat16; the GPU's
    16-bit tree of partials, shuffles and warp combine up to 0.18)."""
    M, N = 8, 512
    td = getattr(torch, dtype)
    shape = (M, N) if dim == 1 else (N, M)
    a = torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(td)
    b0 = torch.from_numpy(rng.standard_normal(M).astype(np.float32) * 4).to(td)
    out = put(b0.clone(), target)
    tl.compile(_sum16(dtype, kind, dim, clear), target=target)(put(a, target), out)
    x = a.double().abs() if kind == "abssum" else a.double()
    exact = x.sum(dim=dim)
    if not clear:
        exact = exact + b0.double()
    ulp = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}[dtype]
    err = (torch.as_tensor(get(out)).double().cpu() - exact).abs()
    assert (err <= exact.abs() * ulp + 1e-3).all(), (err, exact)


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_16bit_sums_accumulate_in_float32_on_gpus(chip):
    """The GPU lowering of a float16 / bfloat16 sum adds in float32 only
    (each thread's partials, the lanes' shuffles, the warps' scratch, the
    old value of clear=False), rounding once into the destination. It
    summed in 16 bits: on the H100, 0.14 off a bfloat16 sum of 0.77 (37
    ulps) and 0.016 off a float16 sum of 2.3 (8 ulps)."""
    half_adds = re.compile(r"\b(add|sub|fma)(\.rn)?(\.ftz)?\.(b?f16)(x2)?\b")
    for dtype in ("float16", "bfloat16"):
        for kind in ("sum", "abssum"):
            for dim, clear in ((1, True), (0, True), (1, False)):
                ptx = tl.compile(_sum16(dtype, kind, dim, clear), target=chip).get_kernel_source()
                assert not half_adds.search(ptx), (dtype, kind, dim, clear,
                                                   half_adds.search(ptx).group(0))
                assert "add.f32" in ptx or "add.rn.f32" in ptx


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_device_helpers_take_ml_dtypes_arrays(name, rng):
    """put / get (tilelang_mlir.testing's to_device / to_numpy) move
    ml_dtypes arrays, which torch.from_numpy refuses: the bits, viewed as
    the torch dtype of the same name (a CPU tensor where no GPU is), and
    back widened to float32, exactly."""
    import ml_dtypes

    a = (rng.standard_normal((4, 8)) * 3).astype(getattr(ml_dtypes, name))
    t = put(a, "cuda")
    assert t.dtype == getattr(torch, name) and tuple(t.shape) == (4, 8)
    back = get(t)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, a.astype(np.float32))
    assert put(a, "cpu") is a


@pytest.mark.parametrize("src_dtype, dst_dtype, kind", [
    ("float8_e4m3fn", "float16", "absmax"), ("float8_e5m2", "float32", "sum"),
    ("float8_e4m3fn", "float8_e4m3fn", "max"), ("float16", "float8_e5m2", "sum"),
    ("float8_e5m2", "bfloat16", "min"),
])
def test_float8_reductions(src_dtype, dst_dtype, kind, target, rng):
    """Reductions of float8 elements (TileLang's fp8 -> float16 absmax):
    each element converted to the destination's type (float32 for a float8
    destination, rounded once into it), with and without clear."""
    import ml_dtypes

    def np_dtype(d):
        return getattr(ml_dtypes, d) if "float8" in d else np.dtype(d)

    for clear in (True, False):
        @T.prim_func
        def main(A: T.Tensor((4, 32), src_dtype), B: T.Tensor((4,), dst_dtype)):
            with T.Kernel(1, threads=32):
                src = T.alloc_fragment((4, 32), src_dtype)
                dst = T.alloc_fragment((4,), dst_dtype)
                T.copy(A, src)
                T.copy(B, dst)
                T.reduce(src, dst, kind, dim=1, clear=clear)
                T.copy(dst, B)

        a = (rng.standard_normal((4, 32)) * 3).astype(np_dtype(src_dtype))
        b0 = (rng.standard_normal(4) * 3).astype(np_dtype(dst_dtype))
        out = put(b0.copy(), target)
        tl.compile(main, target=target)(put(a, target), out)
        af = a.astype(np.float64)
        if dst_dtype != "float32" and "float8" not in dst_dtype:
            af = af.astype(np_dtype(dst_dtype)).astype(np.float64)  # exact for float8 sources
        want = {"absmax": np.abs(af).max(1), "sum": af.sum(1), "max": af.max(1),
                "min": af.min(1)}[kind]
        if not clear:
            b = b0.astype(np.float64)
            # (TileLang's absmax keeps dst as it is: max(dst, max |src|))
            want = {"absmax": np.maximum(want, b), "sum": want + b,
                    "max": np.maximum(want, b), "min": np.minimum(want, b)}[kind]
        got = np.asarray(get(out)).astype(np.float64)
        if kind == "sum" and dst_dtype == "float32" and target == "cpu":
            # float32 sums of exact float8 values (and b0): the summation bound
            terms = af if clear else np.concatenate([af, b0[:, None]], axis=1)
            assert_float32_sum(got, terms, axis=1, what=f"clear={clear}")
            continue
        np.testing.assert_allclose(got, want.astype(np_dtype(dst_dtype)).astype(np.float64),
                                   rtol=1e-2 if kind == "sum" else 0, atol=0.05 if kind == "sum" else 0,
                                   err_msg=f"clear={clear}")


def _fill_globals(dtype):
    @T.prim_func
    def main(A: T.Tensor((32,), dtype), B: T.Tensor((4, 16), dtype)):
        with T.Kernel(1, threads=32):
            T.fill(A, T.max_value(dtype))
            T.clear(B)
            T.fill(B[1, 4:12], 3)

    return main


@pytest.mark.parametrize("dtype", ["float16", "int32", "float32"])
@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_fill_and_clear_of_global_tensors_compile(dtype, chip):
    """T.fill / T.clear of global tensors compile for every GPU (compile
    only: the AMD code object is linked with ld.lld from ziglang, which the
    GPU machine's environment lacks and the CPU test environment has)."""
    if chip.startswith("rocm"):
        pytest.importorskip("ziglang", reason="the ROCm target links with ld.lld from ziglang")
    src = tl.compile(_fill_globals(dtype), target=chip).get_source()
    if chip.startswith("rocm"):
        assert "global_store" in src
        return
    # The max value, the zeros and the 3 stored (as their bit patterns).
    bits = {"float16": (0x7BFF, 0x4200), "int32": (2**31 - 1, 3),
            "float32": (0x7F7FFFFF, 0x40400000)}[dtype]
    assert "st.global" in src
    for value in bits:
        assert re.search(rf"\b{value}\b", src), (dtype, value)


@pytest.mark.parametrize("dtype", ["float16", "int32", "float32"])
def test_fill_and_clear_of_global_tensors(dtype, target, rng):
    """T.fill / T.clear of a whole global tensor and of a region of one:
    a parallel loop of stores on every target (tile.fill is for on-chip
    buffers; TileLang's T.fill(A, T.infinity(dtype)) on an argument did
    not compile for GPUs)."""
    main = _fill_globals(dtype)
    a = put(rng.standard_normal(32).astype(dtype), target)
    b = put(np.ones((4, 16), dtype), target)
    tl.compile(main, target=target)(a, b)
    want = np.zeros((4, 16), dtype)
    want[1, 4:12] = 3
    np.testing.assert_array_equal(get(a), np.full(32, np.finfo(dtype).max if dtype != "int32"
                                                  else np.iinfo(dtype).max, dtype))
    np.testing.assert_array_equal(get(b), want)


# ---------------------------------------------------------------------------
# Reducers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reducer_counts_each_iteration_once(op, target, rng):
    """A T.Parallel(8) loop on 128 threads replicates its iterations; each
    still contributes once (TileLang's issue 2408: 36, not 576), across
    serial tiles and two update sites, with a starting value combined once."""
    M, K, BK = 16, 96, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), S: T.Tensor((8,), "float32"),
             B: T.Tensor((M,), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            acc = T.alloc_reducer((M,), "float32", op=op)
            T.reducer_init(acc)
            tile = T.alloc_fragment((M, BK), "float32")
            for t in T.serial(K // BK):
                T.copy(A[0, t * BK], tile)
                for i, k in T.Parallel(M, BK):
                    T.reducer_update(acc[i], tile[i, k])
            out = T.alloc_fragment((M,), "float32")
            T.finalize_reducer(acc, out)
            T.copy(out, B)
            s = T.alloc_fragment((8,), "float32")
            T.copy(S, s)
            total = T.alloc_reducer((1,), "float32", op=op)
            T.reducer_init(total, 100.0)
            for i in T.Parallel(8):
                T.reducer_update(total[0], s[i])
            for j in T.Parallel(4):
                T.reducer_update(total[0], s[j] * 2)
            res = T.alloc_fragment((1,), "float32")
            T.finalize_reducer(total, res)
            T.copy(res, C)

    a = rng.standard_normal((M, K)).astype(np.float32)
    s = np.arange(1, 9, dtype=np.float32)
    b, c = (get(x) for x in tl.compile(main, out_idx=[2, 3], target=target)(put(a, target),
                                                                         put(s, target)))
    red = {"sum": np.sum, "max": np.max, "min": np.min}[op]
    np.testing.assert_allclose(b, red(a, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(c, [red(np.concatenate([[100.0], s, s[:4] * 2]))])


@pytest.mark.parametrize("op", ["bitand", "bitor", "bitxor"])
def test_bitwise_reducer_and_permuted_index(op, target, rng):
    M, N = 8, 16

    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), B: T.Tensor((N,), "int32"),
             C: T.Tensor((N, M), "int32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((M, N), "int32")
            T.copy(A, a)
            acc = T.alloc_reducer((N,), "int32", op=op)
            T.reducer_init(acc)
            for i, j in T.Parallel(M, N):
                T.reducer_update(acc[j], a[i, j])
            out = T.alloc_fragment((N,), "int32")
            T.finalize_reducer(acc, out)
            T.copy(out, B)
            tr = T.alloc_reducer((N, M), "int32", op=op)
            T.reducer_init(tr)
            for i, j in T.Parallel(M, N):
                T.reducer_update(tr[j, i], a[i, j])
            t = T.alloc_fragment((N, M), "int32")
            T.finalize_reducer(tr, t)
            T.copy(t, C)

    a = rng.integers(0, 2 ** 31 - 1, (M, N)).astype(np.int32)
    b, c = (get(x) for x in tl.compile(main, out_idx=[1, 2], target=target)(put(a, target)))
    np.testing.assert_array_equal(b, _NP_REDUCE[op](a, axis=0))
    np.testing.assert_array_equal(c, a.T)


def test_legacy_reducer_accumulates_in_place(target, rng):
    """replication="all": T.clear, `acc[i] += ...` and T.max read-modify-writes
    in T.Parallel loops, finalized in place and read as a fragment."""
    M, N = 32, 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32"),
             X: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            s = T.alloc_reducer(M, "float32", replication="all")
            T.clear(s)
            for i, j in T.Parallel(M, N):
                s[i] += a[i, j] * 2
            T.finalize_reducer(s)
            T.copy(s, S)
            m = T.alloc_reducer((M,), "float32", op="max", replication="all")
            T.fill(m, -T.infinity("float32"))
            for i, j in T.Parallel(M, N):
                m[i] = T.max(m[i], a[i, j])
            T.finalize_reducer(m)
            T.copy(m, X)

    a = rng.standard_normal((M, N)).astype(np.float32)
    s, x = (get(v) for v in tl.compile(main, out_idx=[1, 2], target=target)(put(a, target)))
    np.testing.assert_allclose(s, 2 * a.sum(1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(x, a.max(1))


def _reducer_program(body):
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            res = T.alloc_fragment((1,), "float32")
            body(acc, src, res)
            T.copy(res, B)

    return main


@T.macro
def _update_all(acc, src):
    for i in T.Parallel(8):
        T.reducer_update(acc[0], src[i])


@T.macro
def _update_before_init(acc, src, res):
    _update_all(acc, src)
    T.finalize_reducer(acc, res)


@T.macro
def _never_finalized(acc, src, res):
    T.reducer_init(acc)
    _update_all(acc, src)


@T.macro
def _wrong_destination(acc, src, res):
    T.reducer_init(acc)
    _update_all(acc, src)
    T.finalize_reducer(acc, src)


@pytest.mark.parametrize("body, match", [
    (_update_before_init, "before T.reducer_init"),
    (_never_finalized, "never finalized"),
    (_wrong_destination, "must have the reducer's shape"),
    (lambda acc, src, res: (T.reducer_init(acc), T.reducer_init(acc)), "double T.reducer_init"),
    (lambda acc, src, res: (T.reducer_init(acc), T.reducer_update(acc[0], src[0])),
     "outside any T.Parallel"),
    (lambda acc, src, res: (T.reducer_init(acc), T.clear(acc)), "illegal T.clear of reducer"),
    (lambda acc, src, res: (T.reducer_init(acc), T.copy(acc, res)), "illegal use of reducer"),
    (lambda acc, src, res: (T.reducer_init(acc, T.float16(1.0))), "does not match reducer"),
])
def test_reducer_errors(body, match):
    with pytest.raises(TileLangError, match=match):
        tl.compile(_reducer_program(body), target="cpu")


@pytest.mark.parametrize("batch, match", [
    (0, r"batch must be >= 1, got 0"), (-1, r"batch must be >= 1, got -1"),
    (32, r"batch \(32\) exceeds total output elements \(16\)"),
    (3, r"batch \(3\) must evenly divide total output elements \(16\)"),
])
def test_finalize_reducer_batch_errors(batch, match):
    """TileLang's finalize_reducer batch checks, ValueErrors at the call."""
    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=64):
            acc = T.alloc_reducer((16,), "float32", replication="all")
            T.clear(acc)
            a = T.alloc_fragment((16, 8), "float32")
            T.copy(A, a)
            for i, j in T.Parallel(16, 8):
                acc[i] += a[i, j]
            T.finalize_reducer(acc, batch=batch)
            T.copy(acc, B)

    with pytest.raises(ValueError, match=match):
        tl.compile(main, target="cpu")


def test_default_reducer_in_the_legacy_syntax(target, rng):
    """T.alloc_reducer without `replication` used in the v1 syntax (T.clear,
    `acc[i] +=`, in-place finalize, reads after it) is a legacy reducer, as
    TileLang's shim makes it; batch=4 divides the 16 outputs."""
    @T.prim_func
    def main(G: T.Tensor((16, 8), "float32"), O: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=128):
            g = T.alloc_fragment((16, 8), "float32")
            T.copy(G, g)
            acc = T.alloc_reducer((16,), "float32")
            T.clear(acc)
            for i, j in T.Parallel(16, 8):
                acc[i] += g[i, j] * g[i, j]
            T.finalize_reducer(acc, batch=4)
            for i, j in T.Parallel(16, 8):
                g[i, j] = g[i, j] - acc[i]
            T.copy(g, O)

    x = rng.standard_normal((16, 8)).astype(np.float32)
    o = get(tl.compile(main, out_idx=[1], target=target)(put(x, target)))
    np.testing.assert_allclose(o, x - (x * x).sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_reducer_reads_and_scope_errors():
    @T.prim_func
    def read(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32")
            T.reducer_init(acc)
            B[0] = acc[0]

    @T.prim_func
    def scope(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32")
            res = T.alloc_fragment((1,), "float32")
            T.reducer_init(acc)
            for _ in T.serial(2):
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], src[i])
                T.finalize_reducer(acc, res)
            T.copy(res, B)

    with pytest.raises(TileLangError, match="illegal read of reducer"):
        tl.compile(read, target="cpu")
    with pytest.raises(TileLangError, match="not in the scope of its T.reducer_init"):
        tl.compile(scope, target="cpu")


@pytest.mark.parametrize("legacy", [False, True])
def test_reducer_finalized_in_a_conditional(legacy, target, rng):
    """A finalize inside a run-time conditional in the init's block (each
    block takes one branch; the other writes a marker), v2 (with a starting
    value) and legacy (filled with 0, as TileLang's programs do: a legacy
    start is combined per replica)."""
    n = 16

    @T.prim_func
    def main(A: T.Tensor((2, n), "float32"), S: T.Tensor((2,), "int32"),
             B: T.Tensor((2,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            src = T.alloc_fragment((n,), "float32")
            T.copy(A[bx, 0:n], src)
            res = T.alloc_fragment((1,), "float32")
            if legacy:
                acc = T.alloc_reducer((1,), "float32", replication="all")
                T.fill(acc, 0.0)
            else:
                acc = T.alloc_reducer((1,), "float32", op="sum")
                T.reducer_init(acc, 0.5)
            if S[bx] < 0:
                B[bx] = -7.0
            else:
                for i in T.Parallel(n):
                    if legacy:
                        acc[0] += src[i]
                    else:
                        T.reducer_update(acc[0], src[i])
                if legacy:
                    T.finalize_reducer(acc)
                    B[bx] = acc[0]
                else:
                    T.finalize_reducer(acc, res)
                    B[bx] = res[0]

    a = rng.standard_normal((2, n)).astype(np.float32)
    s = np.array([-1, 1], dtype=np.int32)
    b = get(tl.compile(main, out_idx=[2], target=target)(put(a, target), put(s, target)))
    np.testing.assert_allclose(b, [-7.0, a[1].sum() + (0.0 if legacy else 0.5)], rtol=1e-5)


# ---------------------------------------------------------------------------
# Scans
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["cumsum", "cummax"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans_of_buffers_and_regions(op, reverse, dim, target, rng):
    """T.cumsum / T.cummax along a dimension, in place and out of place, of
    fragments, shared buffers and regions of a larger buffer."""
    M, N = 8, 16
    scan = getattr(T, op)

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((3, M, N), "float32")):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment((M, N), "float32")
            s = T.alloc_shared((M, N), "float32")
            t = T.alloc_shared((M, N), "float32")
            big = T.alloc_shared((2 * M, 2 * N), "float32")
            T.copy(A, f)
            T.copy(A, s)
            T.copy(A, big[M:2 * M, 0:N])
            scan(f, dim=dim, reverse=reverse)
            scan(s, t, dim=dim, reverse=reverse)
            scan(src=big[M:2 * M, 0:N], dim=dim, reverse=reverse)
            T.copy(f, B[0, 0, 0])
            T.copy(t, B[1, 0, 0])
            T.copy(big[M:2 * M, 0:N], B[2, 0, 0])

    a = rng.standard_normal((M, N)).astype(np.float32)
    a[2, 3] = np.nan if op == "cummax" else a[2, 3]
    out = get(tl.compile(main, out_idx=[1], target=target)(put(a, target)))
    x = np.flip(a, dim) if reverse else a
    if op == "cumsum":
        want = np.cumsum(x, axis=dim)
    else:
        want = np.fmax.accumulate(x, axis=dim)
    want = np.flip(want, dim) if reverse else want
    for k in range(3):
        np.testing.assert_allclose(out[k], want, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")


def test_cummax_unsigned_and_errors(target, rng):
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), "uint32"), B: T.Tensor((n,), "uint32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((n,), "uint32")
            T.copy(A, s)
            T.cummax(s)
            T.copy(s, B)

    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    out = get(tl.compile(main, out_idx=[1], target=target)(put(a, target)))
    np.testing.assert_array_equal(out, np.maximum.accumulate(a))

    @T.prim_func
    def bad(A: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((8, 8), "float32")
            T.cumsum(s, dim=2)

    with pytest.raises(TileLangError, match="Dimension 2 is out of bounds"):
        tl.compile(bad, target="cpu")


def test_scans_compile_for_sm90a():
    n = 64

    @T.prim_func
    def main(A: T.Tensor((4, n), "float16"), B: T.Tensor((4, n), "float16")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((4, n), "float16")
            T.copy(A, f)
            T.cummax(f, dim=1, reverse=True)
            T.cumsum(f, dim=0)
            T.copy(f, B)

    src = tl.compile(main, target="cuda:sm_90a").get_source()
    assert re.search(r"\bmax\.(NaN\.)?f16", src)  # the running max, in float16
    assert re.search(r"\badd\.(rn\.)?f(16|32)\b", src)  # the running sum


# ---------------------------------------------------------------------------
# Random numbers (cuRAND's Philox4x32-10)
# ---------------------------------------------------------------------------


def _philox(ctr, key):
    """Philox4x32-10 (Random123), a reference for the test."""
    m = 0xFFFFFFFF
    c, k = list(ctr), list(key)
    for r in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & m, p1 & m, ((p0 >> 32) ^ c[3] ^ k[1]) & m, p0 & m]
        if r < 9:
            k = [(k[0] + 0x9E3779B9) & m, (k[1] + 0xBB67AE85) & m]
    return c


class _Curand:
    """curand_init / curand of curandStatePhilox4_32_10_t, a reference."""

    def __init__(self, seed, seq, off):
        self.key = [seed & 0xFFFFFFFF, seed >> 32]
        self.ctr = (off // 4) | (seq << 64)
        self.pos = off % 4
        self.out = self._block()

    def _block(self):
        c = self.ctr
        return _philox([(c >> (32 * i)) & 0xFFFFFFFF for i in range(4)], self.key)

    def next(self):
        r = self.out[self.pos]
        self.pos += 1
        if self.pos == 4:
            self.ctr = (self.ctr + 1) % (1 << 128)
            self.out, self.pos = self._block(), 0
        return r


@pytest.mark.parametrize("seed, seq, off", [(42, 0, 0), (123, 3, 7), (2 ** 40 + 5, 2 ** 33, 2 ** 35 + 2)])
def test_rng_matches_curand_philox(seed, seq, off, target):
    """The uint32 stream is cuRAND's for (seed, subsequence, offset); the
    floats follow curand_uniform / curand_uniform_double / curand_normal."""
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), "uint32"), B: T.Tensor((n,), "float32"),
             C: T.Tensor((n,), "float64"), D: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            T.rng_init(seed, seq, off)
            for i in T.serial(n):
                A[i] = T.rng_rand()
            for i in T.serial(n):
                B[i] = T.rng_rand_float()
            for i in T.serial(n):
                C[i] = T.rng_rand_float(bit=64)
            for i in T.serial(n):
                D[i] = T.rng_rand_float(dist="normal")

    a, b, c, d = (get(x) for x in tl.compile(main, out_idx=[0, 1, 2, 3], target=target)())
    ref = _Curand(seed, seq, off)
    want_a = np.array([ref.next() for _ in range(n)], np.uint32)
    # In float32, as cuRAND: the draw rounds to float32, then the exact
    # scaling, then the rounded add.
    want_b = (np.array([ref.next() for _ in range(n)], np.uint32).astype(np.float32)
              * np.float32(2.0 ** -32) + np.float32(2.0 ** -33))
    pairs = [(ref.next(), ref.next()) for _ in range(n)]
    want_c = np.array([(x ^ (y << 21)) * 2.0 ** -53 + 2.0 ** -54 for x, y in pairs])
    want_d = []
    while len(want_d) < n:
        u = ref.next() * 2.0 ** -32 + 2.0 ** -33
        v = ref.next() * 2.0 ** -32 * 2 * np.pi + 2.0 ** -32 * np.pi
        r = np.sqrt(-2 * np.log(u))
        want_d += [r * np.sin(v), r * np.cos(v)]
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_allclose(d, want_d, rtol=1e-5, atol=2e-5)
    assert 0 < b.min() and b.max() <= 1


def test_rng_in_parallel_loops_and_errors(target):
    """Each T.Parallel iteration draws once from its thread's stream; a
    draw before T.rng_init is an error."""
    n = 128

    @T.prim_func
    def main(A: T.Tensor((n,), "uint32")):
        with T.Kernel(1, threads=1):
            T.rng_init(7, 0, 0)
            for i in T.Parallel(n):
                A[i] = T.rng_rand()

    a = get(tl.compile(main, out_idx=[0], target=target)())
    ref = _Curand(7, 0, 0)
    np.testing.assert_array_equal(a, [ref.next() for _ in range(n)])

    @T.prim_func
    def bad(A: T.Tensor((4,), "uint32")):
        with T.Kernel(1, threads=1):
            A[0] = T.rng_rand()

    with pytest.raises(TileLangError, match="before T.rng_init"):
        tl.compile(bad, target="cpu")


def _rng_first_thread_program(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "uint32")):
        with T.Kernel(n, threads=32) as bx:
            tx = T.get_thread_binding()
            T.rng_init(11, 0, bx)
            if tx == 0:
                A[bx] = T.rng_rand()

    return main


def test_rng_drawn_by_one_thread_compiles_for_gpus():
    """`if tx == 0: A[bx] = T.rng_rand()` (TileLang's rand tests): a role of
    one thread holding plain code compiles (its terminator counted as a tile
    operation needing whole warps)."""
    for t in ("cuda:sm_80", "cuda:sm_90a"):
        src = tl.compile(_rng_first_thread_program(8), target=t).get_source()
        # Philox4x32's round multipliers, behind the thread-index test.
        assert "3528531795" in src and "3449720151" in src, t
        assert "%tid.x" in src, t


@pytest.mark.gpu
def test_rng_drawn_by_one_thread_on_the_gpu():
    n = 8
    a = get(tl.compile(_rng_first_thread_program(n), out_idx=[0], target="cuda")())
    np.testing.assert_array_equal(a, [_Curand(11, 0, b).next() for b in range(n)])


# ---------------------------------------------------------------------------
# Tile operations: gemm warp partitions, transpose, async copy, im2col alias
# ---------------------------------------------------------------------------


def _policy_gemm(M, N, K, threads, policy):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1, threads=threads):
            A_shared = T.alloc_shared((M, K), "float16")
            B_shared = T.alloc_shared((K, N), "float16")
            C_frag = T.alloc_fragment((M, N), "float32")
            T.clear(C_frag)
            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.gemm(A_shared, B_shared, C_frag, policy=policy)
            T.copy(C_frag, C)

    return main


WARP_PARTITION_CASES = [
    (16, 104, 32, 384, "Square"), (288, 8, 32, 544, "Square"), (16, 104, 32, 384, "FullRow"),
    (336, 8, 32, 640, "FullCol"), (192, 104, 32, 384, "FullCol"), (48, 64, 32, 256, "FullRow"),
    (16, 16, 32, 224, "Square"), (64, 104, 32, 384, "Square"), (128, 192, 32, 384, "FullRow"),
    (336, 16, 32, 640, "Square"), (336, 16, 32, 640, "FullCol"),
]


def _fragment_layout(ir: str, shape):
    """(thread, register) of each element of the fragment of `shape` in the
    IR after layout inference, as a function of (index..., replica), and
    the layout's threads and replicas."""
    maps = dict(re.findall(r"^(#map\d*) = affine_map<(.*)>$", ir, re.M))
    m = re.search(r"tile\.alloc_fragment \{layout = #tile\.layout<(#map\d*), threads = (\d+)"
                  r"(?:, replicate = (\d+))?>\} : memref<" + "x".join(map(str, shape)) + "x",
                  ir)
    assert m, ir
    args, body = maps[m.group(1)].split("->")
    names = re.findall(r"[ds]\d+", args)
    if len(names) == len(shape):
        names.append("_replica")
    expr = body.replace("floordiv", "//").replace("mod", "%")
    return eval(f"lambda {', '.join(names)}: {expr}"), int(m.group(2)), int(m.group(3) or 1)


@pytest.mark.parametrize("chip", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("M, N, K, threads, policy", WARP_PARTITION_CASES)
def test_gemm_warp_partitions_stay_in_bounds_on_the_gpu(M, N, K, threads, policy, chip):
    """The GPU code of test_gemm_warp_partitions_cover_the_tile, without a
    GPU. A partition that tensor cores cannot take is a SIMT gemm whose
    accumulator layout pads M x N (336 rows in blocks of 64 over 8 register
    digits: rows 336-511): it reads A's rows and B's columns at each
    register's index, and read past the shared operands for the padded rows
    (an illegal address on the H100). Its K loops must exist only for the
    registers some thread holds an element in, and run under a guard for
    those some threads hold padding in."""
    kernel = tl.compile(_policy_gemm(M, N, K, threads, getattr(T.GemmWarpPolicy, policy)),
                        out_idx=[2], target=f"cuda:{chip}", pass_configs={"tl.disable_cache": True})
    layout_ir, gpu_ir = kernel.artifact.stages["layout"], kernel.artifact.stages["gpu"]
    k_loops = [line for line in gpu_ir.splitlines()
               if re.search(rf"scf\.for %\w+ = %c0 to %c{K} step %c1 iter_args", line)]
    if re.search(r"tile\.gemm .*(warp_partition|wgmma)", layout_ir):
        assert not k_loops  # on the tensor cores (an even partition)
        return
    fn, nthreads, replicas = _fragment_layout(layout_ir, (M, N))
    holders = {}  # register -> the threads holding an element of C in it
    for i in range(M):
        for j in range(N):
            for r in range(replicas):
                t, reg = fn(i, j, r)
                assert 0 <= t < nthreads
                holders.setdefault(reg, set()).add(t)
    partial = sum(1 for ts in holders.values() if len(ts) < nthreads)
    # (Indented past the kernel's body: in an scf.if.)
    body = re.search(r"^( *)%\w+ = gpu\.thread_id", gpu_ir, re.M).group(1)
    guarded = sum(1 for line in k_loops if len(line) - len(line.lstrip()) > len(body))
    assert (len(k_loops), guarded) == (len(holders), partial)


@pytest.mark.parametrize("M, N, K, threads, policy", WARP_PARTITION_CASES)
def test_gemm_warp_partitions_cover_the_tile(M, N, K, threads, policy, target, rng):
    """TileLang's issue 2537: warp counts that do not tile M x N evenly
    (TileLang rejects some with "No valid warp partition"; here every
    output element is still computed). On a GPU also without wgmma (the
    mma.sync grid or the CUDA cores where wgmma took the tile)."""
    a = rng.integers(0, 3, (M, K)).astype(np.float16)
    b = rng.integers(0, 3, (K, N)).astype(np.float16)
    configs = [{}] if target == "cpu" else [{}, {"tl.disable_wgmma": True}]
    for pass_configs in configs:
        kernel = tl.compile(_policy_gemm(M, N, K, threads, getattr(T.GemmWarpPolicy, policy)),
                            out_idx=[2], target=target, pass_configs=pass_configs)
        out = get(kernel(put(a, target), put(b, target)))
        np.testing.assert_array_equal(out, a.astype(np.float32) @ b.astype(np.float32),
                                      err_msg=str(pass_configs))


def test_transpose_async_copy_and_im2col_alias(target, rng):
    M, N = 32, 48

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((N, M), "float16"),
             C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((M, N), "float16")
            t = T.alloc_shared((N, M), "float16")
            T.async_copy(A, s)
            T.ptx_wait_group(0)
            T.sync_threads()
            T.transpose(s, t)
            T.copy(t, B)
            T.transpose(t[0:N, 0:M], s)
            T.copy(s, C)

    a = rng.standard_normal((M, N)).astype(np.float16)
    b, c = (get(x) for x in tl.compile(main, out_idx=[1, 2], target=target)(put(a, target)))
    np.testing.assert_array_equal(b, a.T)
    np.testing.assert_array_equal(c, a)


def test_tile_op_keyword_errors():
    def program(body):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((16, 16), "float16")
                f = T.alloc_fragment((16, 16), "float32")
                body(A, s, f)

        return main

    for body, match in [
        (lambda A, s, f: T.copy(A, s, eviction_policy="evict_sometimes"), "eviction_policy must"),
        (lambda A, s, f: T.async_copy(s, f),
         r"T.async_copy only supports global->shared/shared\.dyn copies \(cp.async"),
        (lambda A, s, f: T.gemm(s, s, f, mbar=s), "mbar"),
        (lambda A, s, f: T.transpose(s, f[0:8, 0:16]), "transposes into shape"),
    ]:
        with pytest.raises(TileLangError, match=match):
            tl.compile(program(body), target="cpu")


@pytest.mark.parametrize("fwd, ok", [(lambda i: i, True), (lambda i: i ^ 1, True),
                                     (lambda i: i * 2, True), (lambda i: i % 64, False),
                                     (lambda i: i * 0, False)])
def test_shared_layout_annotation(fwd, ok, target):
    """A T.Layout on a shared buffer places its elements: one-to-one maps
    (growing ones too) leave element accesses as they are; an aliasing map
    is a ValueError naming the buffer, as in TileLang."""
    n = 128

    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), Out: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            s = T.alloc_shared((n,), "int32")
            T.annotate_layout({s: T.Layout((n,), fwd)})
            for i in T.Parallel(n):
                s[i] = A[i]
            for i in T.Parallel(n):
                Out[n - 1 - i] = s[i]

    if not ok:
        with pytest.raises(ValueError, match=r"shared buffer `[^`]*`.*must be injective.*"
                                              r"both map to physical coordinates"):
            tl.compile(main, out_idx=[1], target=target)
        return
    a = np.arange(n, dtype=np.int32)
    np.testing.assert_array_equal(get(tl.compile(main, out_idx=[1], target=target)(
        put(a, target))), a[::-1])


def test_cast_keywords_and_float8_constants(target):
    """T.cast's TileLang keywords (rounding hints reserved, stochastic
    rounding refused); float8 constants past the range saturate like every
    conversion to float8, T.infinity keeps its infinity; T.max_value works
    for float8."""
    n = 8

    @T.prim_func
    def main(A: T.Tensor((n,), "float8_e5m2"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                A[i] = T.infinity("float8_e5m2")
            A[0] = T.cast(1e9, "float8_e5m2", round="rz")
            A[1] = T.cast(-1e9, "float8_e5m2", sat=False)
            A[2] = T.max_value("float8_e5m2")
            for i in T.Parallel(n):
                B[i] = T.cast(A[i], "float32")

    a, b = (get(x) for x in tl.compile(main, out_idx=[0, 1], target=target)())
    np.testing.assert_array_equal(b, [57344, -57344, 57344] + [np.inf] * 5)
    with pytest.raises(ValueError, match="Invalid round 'up'"):
        T.cast(1.0, "float8_e4m3", round="up")
    with pytest.raises(ValueError, match="rbits is required"):
        T.cast(1.0, "float8_e4m3", round="rs")
    with pytest.raises(ValueError, match="rbits is only valid"):
        T.cast(1.0, "float8_e4m3", round="rn", rbits=3)


@pytest.mark.parametrize("dtype, top", [("float4_e2m1fn", 6.0), ("float6_e2m3fn", 7.5),
                                        ("float6_e3m2fn", 28.0), ("float8_e4m3", 448.0),
                                        ("float8_e8m0fnu", 2.0 ** 127), ("bfloat16", None)])
def test_max_and_min_value_of_narrow_floats(dtype, top):
    # deepseek-ai/TileKernels clamps to T.max_value(T.float4_e2m1fn) * 2**-126
    # on the host (the packed storage's int8 has no float limits).
    import ml_dtypes

    want = top if top is not None else float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert T.max_value(dtype) == want
    assert T.min_value(dtype) == (-want if dtype != "float8_e8m0fnu" else 2.0 ** -127)


@pytest.mark.parametrize("order", ["row", "column", "mlx"])
def test_annotation_hints_keep_results(order, target, rng):
    """TileLang's hints that change how, not what: block rasterization in
    each of its orders, a shared layout given as a function, buffers that
    may alias (T.annotate_restrict_buffers)."""
    M = N = 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        T.annotate_restrict_buffers(A, B)
        with T.Kernel(N // 16, M // 16, threads=32) as (bx, by):
            T.use_swizzle(2, order=order)
            s = T.alloc_shared((16, 16), "float32")
            T.annotate_layout({s: lambda i, j: (j, i)})
            T.copy(A[by * 16, bx * 16], s)
            for i, j in T.Parallel(16, 16):
                B[by * 16 + i, bx * 16 + j] = s[i, j] * 2

    a = rng.standard_normal((M, N)).astype(np.float32)
    out = get(tl.compile(main, out_idx=[1], target=target)(put(a, target)))
    np.testing.assert_array_equal(out, a * 2)


@pytest.mark.parametrize("order", ["row", "column"])
def test_use_swizzle_on_a_one_dimensional_grid(order, target, rng):
    """TileLang's panel order over a grid of one dimension (one panel, one
    row of blocks) maps every block to itself: the kernel computes as
    written (DeepSeek's persistent MLA decode)."""
    N = 256

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(N // 32, threads=32) as bx:
            T.use_swizzle(4, order=order)
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] + bx

    a = rng.standard_normal(N).astype(np.float32)
    out = get(tl.compile(main, out_idx=[1], target=target)(put(a, target)))
    np.testing.assert_array_equal(out, a + np.repeat(np.arange(N // 32), 32).astype(np.float32))


def pipelined_body_allocs(M, N, K, block=32, stages=2):
    """Buffers allocated (and a shared layout annotated) inside the body of
    a T.Pipelined loop, as DeepSeek's mHC pre kernel writes them: they are
    the kernel's buffers, each staged by the pipeline like one allocated
    before the loop."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // block, M // block, threads=128) as (bx, by):
            acc = T.alloc_fragment((block, block), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // block, num_stages=stages):
                a_s = T.alloc_shared((block, block), "float16")
                b_s = T.alloc_shared((block, block), "float16")
                T.annotate_layout({a_s: T.make_swizzled_layout(a_s)})
                T.copy(A[by * block, k * block], a_s)
                T.copy(B[k * block, bx * block], b_s)
                a_f = T.alloc_fragment((block, block), "float16")
                T.copy(a_s, a_f)
                for i, j in T.Parallel(block, block):
                    a_f[i, j] = a_f[i, j] * 2
                T.gemm(a_f, b_s, acc)
            T.copy(acc, C[by * block, bx * block])

    return main


@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_allocations_in_a_pipelined_body_compile(arch):
    k = tl.compile(pipelined_body_allocs(64, 64, 128), out_idx=[2], target=arch)
    tile_ir = k.mlir("tile")
    # Allocated once, for the kernel, before the loop (its schedule stages them).
    loop = tile_ir.index("tile.pipelined")
    assert len(re.findall(r"tile.alloc_shared : memref<32x32xf16", tile_ir[:loop])) == 2
    assert "tile.alloc" not in tile_ir[loop:]
    assert "cp.async" in k.get_source()


def test_allocations_in_a_pipelined_body_compute(target, rng):
    M, N, K = 64, 96, 160
    k = tl.compile(pipelined_body_allocs(M, N, K), out_idx=[2], target=target)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    out = get(k(put(a, target), put(b, target)))
    ref = (2 * a.astype(np.float32)) @ b.astype(np.float32)
    np.testing.assert_allclose(out, ref, rtol=1e-2, atol=5e-2)


def test_reducer_indexed_by_serial_loops(target, rng):
    """acc[i, j] updated in a T.Parallel loop nested in serial loops over i
    and j (TileLang's "wide plan"), v2 and legacy forms."""
    K = 64

    @T.prim_func
    def main(A: T.Tensor((4, K), "float32"), A2: T.Tensor((4, K), "float32"),
             B: T.Tensor((4, 4), "float32"), C: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((4, K), "float32")
            src2 = T.alloc_fragment((4, K), "float32")
            T.copy(A, src)
            T.copy(A2, src2)
            acc = T.alloc_reducer((4, 4), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.serial(4):
                for j in T.serial(4):
                    for k in T.Parallel(K):
                        T.reducer_update(acc[i, j], src[i, k] * src2[j, k])
            result = T.alloc_fragment((4, 4), "float32")
            T.finalize_reducer(acc, result)
            T.copy(result, B)
            old = T.alloc_reducer((4, 4), "float32", replication="all")
            T.clear(old)
            for i in T.serial(4):
                for j in T.serial(4):
                    for k in T.Parallel(K):
                        old[i, j] += src[i, k] * src2[j, k]
            T.finalize_reducer(old)
            T.copy(old, C)

    a = rng.standard_normal((4, K)).astype(np.float32)
    a2 = rng.standard_normal((4, K)).astype(np.float32)
    b, c = (get(x) for x in tl.compile(main, out_idx=[2, 3], target=target)(
        put(a, target), put(a2, target)))
    np.testing.assert_allclose(b, a @ a2.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c, a @ a2.T, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------
# float64 math and pow as GPU kernels compute them (tile-software-math)
# ---------------------------------------------------------------------------


def _software_math(op: str, ty: str = "f64"):
    """A function of `op` (math.<op>) lowered as the GPU lowerings do
    (tile-software-math), JIT-compiled on the CPU: a Python callable."""
    import ctypes

    from tilelang_mlir import ir
    from tilelang_mlir._mlir_libs._mlirExecutionEngine import ExecutionEngine
    from tilelang_mlir.passmanager import PassManager

    args = "%x: f64, %y: f64" if op == "powf" else "%x: f64"
    operands = "%x, %y" if op == "powf" else "%x"
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    with ctx:
        module = ir.Module.parse(f"""
func.func @f({args}) -> f64 attributes {{llvm.emit_c_interface}} {{
  %r = math.{op} {operands} : f64
  return %r : f64
}}""")
        PassManager.parse("builtin.module(func.func(tile-software-math),convert-to-llvm,"
                          "reconcile-unrealized-casts)").run(module.operation)
        assert f"math.{op}" not in str(module)
        engine = ExecutionEngine(module, opt_level=2)
        packed = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("_mlir_ciface_f"))

    def call(*xs):
        vals = [ctypes.c_double(v) for v in xs] + [ctypes.c_double(0)]
        ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
        packed(ctypes.addressof(ptrs))
        return vals[-1].value

    call.keep = (ctx, module, engine)
    return call


def _ulps(got, want):
    if np.isnan(want) or np.isnan(got):
        return 0 if np.isnan(want) and np.isnan(got) else np.inf
    if np.isinf(want) or want == 0:
        return 0 if got == want and np.signbit(got) == np.signbit(want) else np.inf
    return abs(got - want) / np.spacing(abs(want))


@pytest.mark.parametrize("op, ref, ulps", [
    ("exp", np.exp, 1), ("exp2", np.exp2, 1), ("log", np.log, 1), ("log2", np.log2, 2),
    ("log10", np.log10, 2), ("sin", np.sin, 2), ("cos", np.cos, 2), ("tanh", np.tanh, 2)])
def test_software_float64_math(op, ref, ulps, rng):
    """GPUs compute float64 exp, log, sin, ... in software (MathF64.cpp): run
    the same rewrite on the CPU against NumPy, special values included."""
    fn = _software_math(op)
    xs = np.concatenate([rng.uniform(-30, 30, 200), rng.uniform(-700, 700, 50),
                         10.0 ** rng.uniform(-300, 300, 100),
                         [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, 5e-324, 709.7, -745.0,
                          1.0, 2.0, 1e5, np.pi]])
    if op.startswith("log"):
        xs = np.abs(xs)
    if op in ("sin", "cos"):
        xs = xs[np.abs(xs) < 1e6]
    with np.errstate(all="ignore"):
        for x in xs:
            got, want = fn(float(x)), ref(np.float64(x))
            err = _ulps(got, want)
            if op in ("sin", "cos") and abs(want) < 1e-8:
                err = abs(got - want) / 1e-16
            assert err <= ulps, (op, x, got, want)


def test_software_pow_follows_c(rng):
    """pow through float64 with C's special cases (negative bases with
    integer exponents, zeros, infinities, pow(x, 0) = pow(1, y) = 1)."""
    fn = _software_math("powf")
    special = [(-2, 3), (0, 0), (0, -1), (-2, 0.5), (np.inf, -1), (2, np.inf), (1, np.nan),
               (np.nan, 0), (-8, 1 / 3), (-0.0, 3), (-0.0, -3), (-np.inf, 3), (-np.inf, 2),
               (-1, np.inf), (-1, -np.inf), (0.5, -200), (1e-300, 0.5), (-3.0, 5)]
    with np.errstate(all="ignore"):
        for x, y in special:
            assert _ulps(fn(x, y), np.power(np.float64(x), np.float64(y))) < 1024, (x, y)
        for x, y in zip(rng.uniform(0, 10, 200), rng.uniform(-50, 50, 200)):
            assert _ulps(fn(x, y), np.power(x, y)) < 1024, (x, y)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_pow_and_float64_math_in_kernels(dtype, target, rng):
    """T.pow (C's special cases; libm's pow on the CPU, float64 software on
    GPUs) and float64 transcendental functions in kernels."""
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((2, n), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(n):
                C[0, i] = T.pow(A[i], B[i])
                C[1, i] = T.exp(B[i]) + T.tanh(A[i])

    npd = np.dtype(dtype)
    a = rng.uniform(-3, 3, n).astype(npd)
    b = rng.integers(-4, 5, n).astype(npd)
    a[:4], b[:4] = [-2, 0, 1, 0], [3, 0, np.nan, -1]
    out = get(tl.compile(main, out_idx=[2], target=target)(put(a, target), put(b, target)))
    with np.errstate(all="ignore"):
        want = np.stack([np.power(a.astype(np.float64), b), np.exp(b.astype(np.float64)) +
                         np.tanh(a.astype(np.float64))]).astype(npd)
    tol = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}[dtype]
    if target == "cuda" and dtype != "float64":
        tol *= 10  # exp and tanh use the approximate instructions
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_float64_math_compiles_for_every_gpu():
    """float64 sin/cos/exp/log (software on GPUs: argument reduction uses a
    floor, which ROCDL takes no LLVM intrinsic of for float64) compile for
    NVIDIA and AMD chips."""
    @T.prim_func
    def main(X: T.Tensor((8, 4), "float64"), O: T.Tensor((8, 4), "float64")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(8, 4):
                O[i, j] = T.sin(X[i, j]) * T.cos(X[i, j]) + T.exp(X[i, j]) - T.log(X[i, j])

    targets = ["cuda:sm_80", "cuda:sm_90a"]
    try:
        import llvmlite.binding  # noqa: F401
        import ziglang  # noqa: F401
        targets.append("rocm:gfx942")
    except ImportError:
        pass
    for t in targets:
        src = tl.compile(main, out_idx=[1], target=t).get_source()
        # In software: float64 fmas, no call to a device math library.
        if t.startswith("cuda"):
            assert "fma.rn.f64" in src and "__nv_" not in src and "call" not in src, t
        else:
            assert "v_fma_f64" in src and "__ocml" not in src, t


def _precise_math_f32(op: str):
    """math.<op> on f32 through tile-precise-math (then the float64 software
    routines), JIT-compiled on the CPU: what GPU kernels compute with
    tl.precise_math (TileLang's disable_fast_math)."""
    import ctypes

    from tilelang_mlir import ir
    from tilelang_mlir._mlir_libs._mlirExecutionEngine import ExecutionEngine
    from tilelang_mlir.passmanager import PassManager

    ctx = ir.Context()
    ctx.enable_multithreading(False)
    with ctx:
        module = ir.Module.parse(f"""
func.func @f(%x: f32) -> f32 attributes {{llvm.emit_c_interface}} {{
  %r = math.{op} %x : f32
  return %r : f32
}}""")
        PassManager.parse("builtin.module(func.func(tile-precise-math),"
                          "func.func(tile-software-math),convert-to-llvm,"
                          "reconcile-unrealized-casts)").run(module.operation)
        assert f"math.{op}" not in str(module)
        engine = ExecutionEngine(module, opt_level=2)
        packed = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup("_mlir_ciface_f"))

    def call(x):
        vals = [ctypes.c_float(x), ctypes.c_float(0)]
        ptrs = (ctypes.c_void_p * 2)(*[ctypes.addressof(v) for v in vals])
        packed(ctypes.addressof(ptrs))
        return np.float32(vals[-1].value)

    call.keep = (ctx, module, engine)
    return call


@pytest.mark.parametrize("op, ref", [
    ("exp", np.exp), ("exp2", np.exp2), ("log", np.log), ("log2", np.log2),
    ("log10", np.log10), ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh),
    ("rsqrt", lambda x: 1 / np.sqrt(x))])
def test_precise_float32_math_is_correctly_rounded(op, ref, rng):
    """tl.precise_math: float32 functions in float64, rounded once: equal to
    the float64 reference rounded to float32 (at most 1 ulp where the
    reference sits next to a rounding boundary)."""
    fn = _precise_math_f32(op)
    xs = np.concatenate([rng.uniform(-30, 30, 300), rng.uniform(-88, 88, 100),
                         10.0 ** rng.uniform(-38, 38, 100),
                         [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 1.0, 2.0, np.pi]])
    xs = xs.astype(np.float32)
    if op.startswith("log") or op == "rsqrt":
        xs = np.abs(xs)
    if op in ("sin", "cos"):
        xs = xs[np.abs(xs) < 1e5]
    with np.errstate(all="ignore"):
        for x in xs:
            got = fn(float(x))
            want = np.float32(ref(np.float64(x)))
            assert _ulps(np.float64(got), np.float64(want)) == 0, (op, x, got, want)


def test_precise_math_pass_config():
    """TileLang's tl.disable_fast_math (and enable_fast_math=False) turn the
    approximations off; the fast functions asked for by name stay fast."""
    @T.prim_func
    def main(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32"),
             Z: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(128):
                Y[i] = T.exp2(X[i]) + T.sin(X[i])
                Z[i] = T.__exp(X[i])

    default = tl.compile(main, target="cuda:sm_90a").get_kernel_source()
    assert "sin.approx" in default
    for cfg in ({"tl.disable_fast_math": True}, {"tl.enable_fast_math": False},
                {"tl.precise_math": True}):
        ptx = tl.compile(main, target="cuda:sm_90a", pass_configs=cfg).get_kernel_source()
        # T.__exp's ex2.approx only: half of them
        assert "sin.approx" not in ptx, cfg
        assert 2 * ptx.count("ex2.approx") == default.count("ex2.approx") > 0, cfg


def _exp_program(n):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"),
             Z: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                Y[bx * 256 + i] = T.exp(X[bx * 256 + i])
                Z[bx * 256 + i] = T.__exp(X[bx * 256 + i])

    return main


def test_exp_is_the_c_library_expf_on_nvidia():
    """T.exp is CUDA's expf (TileLang's T.exp; torch's exp is the same
    code): its instruction sequence, a saturated round-down fma for the
    power of two and log2(e) in two parts; T.__exp stays one ex2.approx of
    x log2(e)."""
    ptx = tl.compile(_exp_program(256), target="cuda:sm_90a").get_kernel_source()
    n = ptx.count("fma.rm.f32")  # one per element a thread computes
    assert n >= 1
    for text in ("0f3BBB989D, 0f3F000000", "cvt.sat.f32.f32", "0fCB40007F", "0f32A57060"):
        assert ptx.count(text) == n, text
    assert ptx.count("ex2.approx.ftz.f32") == 2 * n


@pytest.mark.gpu
def test_exp_matches_torch_bit_for_bit():
    """deepseek-ai/TileKernels checks its SwiGLU casts bit for bit against
    torch: T.exp's float32 results equal torch.exp's everywhere, overflow,
    underflow, subnormal results and specials included."""
    n = 1 << 20
    g = torch.Generator().manual_seed(7)
    x = torch.cat([torch.empty(n // 2).uniform_(-10, 10, generator=g),
                   torch.empty(n // 2 - 8).uniform_(-104, 89, generator=g),
                   torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"),
                                 88.72, -87.3, -103.9])]).cuda()
    y, z = torch.empty_like(x), torch.empty_like(x)
    tl.compile(_exp_program(n), target="cuda")(x, y, z)
    ref = torch.exp(x)
    same = (y.view(torch.int32) == ref.view(torch.int32)) | (y.isnan() & ref.isnan())
    assert bool(same.all()), (x[~same][:8], y[~same][:8], ref[~same][:8])
    # T.__exp: the approximation, within a few ulp of expf in the normal range
    normal = (x.abs() < 80)
    torch.testing.assert_close(z[normal], ref[normal], rtol=1e-5, atol=0)


def _gemm_clear_at_run_time():
    """T.gemm(..., clear_accum=(k == 0)): the accumulator (5.0 before the
    loop) is cleared at the first step only (TileLang takes any condition;
    TileOPs' persistent grouped GEMMs write it so)."""
    M = N = 64
    K = 256

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((M, 64), "float16")
            Bs = T.alloc_shared((64, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.fill(acc, 5.0)
            for k in T.Pipelined(K // 64, num_stages=2):
                T.copy(A[0, k * 64], As)
                T.copy(B[k * 64, 0], Bs)
                T.gemm(As, Bs, acc, clear_accum=(k == 0))
            T.copy(acc, C)

    return main


def test_gemm_clear_accum_decided_at_run_time(target, rng):
    from support.bounds import assert_float32_matmul

    a = rng.standard_normal((64, 256)).astype(np.float16)
    b = rng.standard_normal((256, 64)).astype(np.float16)
    kernel = tl.compile(_gemm_clear_at_run_time(), out_idx=[2], target=target)
    assert_float32_matmul(get(kernel(put(a, target), put(b, target))), a, b)
    if target == "cpu":
        for chip in ("cuda:sm_80", "cuda:sm_90a"):
            tl.compile(_gemm_clear_at_run_time(), out_idx=[2], target=chip)


def test_left_shift_of_narrow_integers_keeps_c_promotion(target):
    # TileLang's CUDA C++ shifts a uint16 as an int: deepseek-ai/TileKernels'
    # e5m6 packing writes T.cast(h << 20, T.uint32) and needs the high bits;
    # a store into a uint16 buffer truncates.
    n = 64

    @T.prim_func
    def main(x: T.Tensor((n,), "uint16"), y: T.Tensor((n,), "uint32"),
             z: T.Tensor((n,), "uint16")):
        with T.Kernel(1, threads=n):
            for i in T.Parallel(n):
                y[i] = T.cast(x[i] << 20, "uint32") | T.cast(x[i] >> 4, "uint32")
                z[i] = x[i] << 4

    dev = "cuda" if target == "cuda" else "cpu"
    x = torch.randint(0, 65536, (n,), dtype=torch.int32).to(torch.uint16)
    y = torch.zeros(n, dtype=torch.uint32, device=dev)
    z = torch.zeros(n, dtype=torch.uint16, device=dev)
    tl.compile(main, target=target)(x.to(dev), y, z)
    xi = x.to(torch.int64)
    assert torch.equal(y.cpu().to(torch.int64), ((xi << 20) & 0xFFFFFFFF) | (xi >> 4))
    assert torch.equal(z.cpu().to(torch.int64), (xi << 4) & 0xFFFF)
