"""float8_e8m0fnu, the MX scale type: code c in [0, 254] is 2^(c - 127), 255
is NaN. A conversion to it rounds the magnitude up to a power of two and
saturates (CUDA's __nv_cvt_{float,double,bfloat16raw}_to_e8m0 with
cudaRoundPosInf and __NV_SATFINITE, what TileLang's casts call): zero and
magnitudes up to 2^-127 give 0, past 2^127 and infinities 254, NaN 255.
Back to a float the value is exact (float16 rounds it). Arithmetic on it
computes in float32 and converts back, as on float8.

Checked against a NumPy model of those rules on the CPU target and on the
GPU (marked `gpu`), from float32 (subnormals included), float64, bfloat16
and float16, and compiled for sm_80, sm_90a and gfx942."""

import ml_dtypes
import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put

N = 1024


def e8m0_codes(x) -> np.ndarray:
    """The e8m0 code of each value of `x` (any float array), by the rules
    above, computed exactly in float64 (every source value is one)."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(all="ignore"):
        m, e = np.frexp(a)  # a = m 2^e, m in [0.5, 1)
    k = np.where(m == 0.5, e - 1, e)  # ceil(log2 a)
    code = np.clip(k + 127, 0, 254)
    code = np.where(a <= 2.0 ** -127, 0, code)
    code = np.where(np.isinf(a), 254, code)
    code = np.where(np.isnan(a), 255, code)
    return code.astype(np.uint8)


def e8m0_values(codes) -> np.ndarray:
    c = np.asarray(codes, dtype=np.int64)
    v = np.ldexp(1.0, c - 127)
    return np.where(c == 255, np.nan, v)


def _to_e8m0_and_back(src: str, via_parallel: bool):
    @T.prim_func
    def main(A: T.Tensor((N,), src), B: T.Tensor((N,), "float8_e8m0fnu"),
             C: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128):
            if via_parallel:
                a = T.alloc_fragment((N,), "float8_e8m0fnu")
                for i in T.Parallel(N):
                    a[i] = A[i]
                T.copy(a, B)
            else:
                T.copy(A, B)
            for i in T.Parallel(N):
                C[i] = B[i]

    return main


def _sources(src: str, rng) -> np.ndarray:
    """Values of every magnitude the source type holds, specials first."""
    lo, hi = {"float32": (-155, 128), "float64": (-1080, 1024), "bfloat16": (-140, 128),
              "float16": (-26, 16)}[src]
    x = np.ldexp(rng.uniform(0.5, 1.0, N), rng.integers(lo, hi, N)) * rng.choice([-1, 1], N)
    x[:12] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0 ** -127, 2.0 ** -126, 2.0 ** 127,
              3.0, 0.75, -0.5]
    x[12:20] = np.ldexp(1.0, rng.integers(lo, hi, 8))  # exact powers of two
    dtype = {"float32": np.float32, "float64": np.float64, "bfloat16": ml_dtypes.bfloat16,
             "float16": np.float16}[src]
    with np.errstate(over="ignore"):  # 2^127 is inf in float16
        return x.astype(dtype)


@pytest.mark.parametrize("src", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("via_parallel", [False, True])
def test_conversion_to_e8m0(target, rng, src, via_parallel):
    x = _sources(src, rng)
    kernel = tl.compile(_to_e8m0_and_back(src, via_parallel), out_idx=[1, 2], target=target)
    b, c = kernel(put(x, target))
    want = e8m0_codes(x.astype(np.float64))
    got_codes = e8m0_codes(get(b).astype(np.float64))  # exact powers of two (or NaN)
    np.testing.assert_array_equal(got_codes, want)
    np.testing.assert_array_equal(get(c), e8m0_values(want).astype(np.float32))


def _from_e8m0(dst: str):
    @T.prim_func
    def main(A: T.Tensor((N,), "float8_e8m0fnu"), B: T.Tensor((N,), dst),
             C: T.Tensor((N,), "float8_e8m0fnu")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(N):
                B[i] = A[i]
                C[i] = A[i] * 3.0  # computed in float32, rounded up: 4 A[i]

    return main


@pytest.mark.parametrize("dst", ["float32", "bfloat16", "float16", "float64"])
def test_conversion_from_e8m0(target, rng, dst):
    codes = rng.integers(0, 256, N).astype(np.uint8)
    codes[:4] = [0, 127, 254, 255]
    a = codes.view(ml_dtypes.float8_e8m0fnu)
    kernel = tl.compile(_from_e8m0(dst), out_idx=[1, 2], target=target)
    b, c = kernel(put(a, target))
    ref = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
           "bfloat16": ml_dtypes.bfloat16}[dst]
    with np.errstate(over="ignore"):  # float16 holds 2^-24 .. 2^15
        want = e8m0_values(codes).astype(ref).astype(np.float64)
    np.testing.assert_array_equal(get(b).astype(np.float64), want)
    with np.errstate(over="ignore"):  # 3 * 2^127 is past float32: saturates to 254
        want_c = e8m0_codes((e8m0_values(codes) * 3.0).astype(np.float32))
    np.testing.assert_array_equal(e8m0_codes(get(c).astype(np.float64)), want_c)


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_e8m0_compiles(chip):
    for program in (_to_e8m0_and_back("float32", True), _from_e8m0("bfloat16")):
        kernel = tl.compile(program, out_idx=[1, 2], target=chip)
        assert kernel.get_kernel_source()


def test_reduce_max_of_e8m0(target, rng):
    """Tile operations on e8m0 fragments compute in float32, as on float8."""

    @T.prim_func
    def main(A: T.Tensor((4, 128), "float8_e8m0fnu"), B: T.Tensor((4,), "float8_e8m0fnu")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((4, 128), "float8_e8m0fnu")
            s = T.alloc_fragment((4,), "float8_e8m0fnu")
            T.copy(A, a)
            T.reduce_max(a, s, dim=1)
            T.copy(s, B)

    codes = rng.integers(0, 255, (4, 128)).astype(np.uint8)
    kernel = tl.compile(main, out_idx=[1], target=target)
    got = get(kernel(put(codes.view(ml_dtypes.float8_e8m0fnu), target)))
    np.testing.assert_array_equal(e8m0_codes(np.asarray(got, dtype=np.float64)),
                                  codes.max(axis=1))
