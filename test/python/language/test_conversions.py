"""Element conversions: every dtype pair of T.copy, and the one rule for
float-to-integer casts (saturate, NaN -> 0) and integer narrowing (wrap).

Each source dtype gets one kernel that copies a global tile into every
destination dtype along four paths (global -> shared -> global, global ->
fragment -> global, fragment -> fragment of another dtype, fragment ->
global with the conversion on the store), so the CPU run checks every pair
and the GPU targets compile every conversion of every copy lowering. The
expected values are NumPy's, with the rules of ConversionUtils.h where NumPy
has none (float -> int out of range).
"""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put
from tilelang_mlir.language import dtypes as dt

ml_dtypes = pytest.importorskip("ml_dtypes")

DTYPES = [d.name for d in dt.ALL]
M, N = 8, 32  # one 16-byte vector per row at 4 bytes; divides every thread count used
GPU_TARGETS = ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"]


def _np(name):
    return dt.to_numpy(dt.as_dtype(name))


def _is_float(name):
    return dt.as_dtype(name).is_float


def convert_reference(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """x (of dtype src) converted to dst by the tile rules."""
    d = dt.as_dtype(dst)
    if _is_float(src):
        xf = x.astype(np.float64)
        if d.is_float:
            # Every test value is exact in float32: one rounding, as ours.
            return x.astype(np.float32).astype(_np(dst))
        if d.is_bool:
            return xf != 0
        return _saturate(xf, dst)
    xi = x.astype(np.int64)
    if d.is_float:
        return xi.astype(np.float64).astype(np.float32).astype(_np(dst))
    if d.is_bool:
        return xi != 0
    return xi.astype(_np(dst))  # two's complement wrap


def source_values(src: str, rng) -> np.ndarray:
    """Values of dtype src that every destination can take without a float
    overflow (within +-96, exact in float32) and that exercise signs, zero,
    halves and integer wrap-around."""
    s = dt.as_dtype(src)
    if s.is_bool:
        return rng.random((M, N)) < 0.5
    if s.is_float:
        # Multiples of 1/2 in [-96, 96]: exact in every float type but fp8,
        # where they round; fp8 sources hold only their own values.
        v = rng.integers(-192, 193, (M, N)) / 2.0
        return v.astype(np.float32).astype(_np(src))
    info = np.iinfo(_np(src))
    lo, hi = max(info.min, -300), min(info.max, 300)
    return rng.integers(lo, hi + 1, (M, N)).astype(_np(src))


def copies_kernel(src: str, threads: int = 128):
    """X (src) copied into 12 outputs per path, one per destination dtype."""
    D = DTYPES

    @T.prim_func
    def main(X: T.Tensor((M, N), src),
             S0: T.Tensor((M, N), D[0]), S1: T.Tensor((M, N), D[1]), S2: T.Tensor((M, N), D[2]),
             S3: T.Tensor((M, N), D[3]), S4: T.Tensor((M, N), D[4]), S5: T.Tensor((M, N), D[5]),
             S6: T.Tensor((M, N), D[6]), S7: T.Tensor((M, N), D[7]), S8: T.Tensor((M, N), D[8]),
             S9: T.Tensor((M, N), D[9]), S10: T.Tensor((M, N), D[10]), S11: T.Tensor((M, N), D[11]),
             F0: T.Tensor((M, N), D[0]), F1: T.Tensor((M, N), D[1]), F2: T.Tensor((M, N), D[2]),
             F3: T.Tensor((M, N), D[3]), F4: T.Tensor((M, N), D[4]), F5: T.Tensor((M, N), D[5]),
             F6: T.Tensor((M, N), D[6]), F7: T.Tensor((M, N), D[7]), F8: T.Tensor((M, N), D[8]),
             F9: T.Tensor((M, N), D[9]), F10: T.Tensor((M, N), D[10]), F11: T.Tensor((M, N), D[11]),
             G0: T.Tensor((M, N), D[0]), G1: T.Tensor((M, N), D[1]), G2: T.Tensor((M, N), D[2]),
             G3: T.Tensor((M, N), D[3]), G4: T.Tensor((M, N), D[4]), G5: T.Tensor((M, N), D[5]),
             G6: T.Tensor((M, N), D[6]), G7: T.Tensor((M, N), D[7]), G8: T.Tensor((M, N), D[8]),
             G9: T.Tensor((M, N), D[9]), G10: T.Tensor((M, N), D[10]), G11: T.Tensor((M, N), D[11]),
             H0: T.Tensor((M, N), D[0]), H1: T.Tensor((M, N), D[1]), H2: T.Tensor((M, N), D[2]),
             H3: T.Tensor((M, N), D[3]), H4: T.Tensor((M, N), D[4]), H5: T.Tensor((M, N), D[5]),
             H6: T.Tensor((M, N), D[6]), H7: T.Tensor((M, N), D[7]), H8: T.Tensor((M, N), D[8]),
             H9: T.Tensor((M, N), D[9]), H10: T.Tensor((M, N), D[10]), H11: T.Tensor((M, N), D[11])):
        with T.Kernel(1, threads=threads) as bx:
            x = T.alloc_fragment((M, N), src)
            T.copy(X[0, 0], x)
            for d, Sd, Fd, Gd, Hd in (  # unrolled at compile time
                    zip(range(12), (S0, S1, S2, S3, S4, S5, S6, S7, S8, S9, S10, S11),
                        (F0, F1, F2, F3, F4, F5, F6, F7, F8, F9, F10, F11),
                        (G0, G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11),
                        (H0, H1, H2, H3, H4, H5, H6, H7, H8, H9, H10, H11))):
                s = T.alloc_shared((M, N), D[d])
                T.copy(X[0, 0], s)      # global -> shared
                T.copy(s, Sd[0, 0])
                f = T.alloc_fragment((M, N), D[d])
                T.copy(X[0, 0], f)      # global -> fragment
                T.copy(f, Fd[0, 0])
                g = T.alloc_fragment((M, N), D[d])
                T.copy(x, g)            # fragment -> fragment
                T.copy(g, Gd[0, 0])
                T.copy(x, Hd[0, 0])     # fragment -> global

    return main


def _check_outputs(src, x, outs):
    paths = ("global->shared", "global->fragment", "fragment->fragment", "fragment->global")
    for p, path in enumerate(paths):
        for d, dst in enumerate(DTYPES):
            got = outs[p * 12 + d]
            want = convert_reference(x, src, dst)
            if dt.as_dtype(dst).is_float:
                np.testing.assert_array_equal(
                    got.astype(np.float64), want.astype(np.float64),
                    err_msg=f"{src} -> {dst} ({path})")
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst} ({path})")


@pytest.mark.parametrize("src", DTYPES)
def test_copy_every_dtype_pair_cpu(src, rng):
    kernel = tl.compile(copies_kernel(src), out_idx=list(range(1, 49)), target="cpu")
    x = source_values(src, rng)
    _check_outputs(src, x, kernel(x))


@pytest.mark.parametrize("target", GPU_TARGETS)
@pytest.mark.parametrize("src", DTYPES)
def test_copy_every_dtype_pair_compiles(src, target):
    if target.startswith("rocm"):
        pytest.importorskip("llvmlite.binding")
        pytest.importorskip("ziglang")
    kernel = tl.compile(copies_kernel(src), out_idx=list(range(1, 49)), target=target,
                        pass_configs={"tl.disable_cache": True})
    assert kernel.get_source()


@pytest.mark.gpu
@pytest.mark.parametrize("src", DTYPES)
def test_copy_every_dtype_pair_gpu(src, rng):
    import torch

    kernel = tl.compile(copies_kernel(src), out_idx=list(range(1, 49)), target="cuda")
    x = source_values(src, rng)
    # torch has no ml_dtypes: 16- and 8-bit floats travel as float32 (exact).
    narrow = src in ("bfloat16", "float8_e4m3", "float8_e5m2")
    xt = put(x.astype(np.float32) if narrow else x, "cuda").to(dt.to_torch(src))
    outs = [get(o.float() if o.dtype in (torch.bfloat16, torch.float8_e4m3fn,
                                         torch.float8_e5m2) else o)
            for o in kernel(xt)]
    _check_outputs(src, x, outs)


# ---------------------------------------------------------------------------
# Float -> integer: truncate toward zero, saturate, NaN -> 0 (T.cast and copies)
# ---------------------------------------------------------------------------

SPECIAL = np.array([1e10, -1e10, 300.7, -300.7, 255.9, 256.0, 127.9, 128.0, -128.9, -129.0,
                    2.5, -2.5, -0.5, 0.0, np.nan, np.inf, -np.inf, 65535.5, -32768.5,
                    3e9, -3e9, 1e19, -1e19, 7.0, 1.0, -1.0, 0.9, -0.9, 100.0, -100.0,
                    40000.0, -40000.0], dtype=np.float32)
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]


def _expected_saturated(x, dst):
    return _saturate(x.astype(np.float64), dst)


def _saturate(xf, dst):
    """trunc, clamp to dst's range, NaN -> 0 (element by element, exact for
    int64 where float64 cannot hold the bounds)."""
    info = np.iinfo(_np(dst))
    out = []
    for v in xf.ravel():
        if np.isnan(v):
            out.append(0)
        elif v >= 2.0 ** (info.bits - (info.min < 0)):
            out.append(int(info.max))
        elif v < float(info.min):
            out.append(int(info.min))
        else:
            out.append(int(np.trunc(v)))
    return np.array(out, dtype=_np(dst)).reshape(xf.shape)


def cast_kernel(n, dst):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), dst), Z: T.Tensor((n,), dst)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                Y[i] = T.cast(X[i], dst)        # scalar cast (frontend)
            T.copy(X, Z)                       # converting copy (lowering)

    return main


@pytest.mark.parametrize("dst", INT_DTYPES)
def test_float_to_int_saturates_cpu(dst):
    n = SPECIAL.size
    kernel = tl.compile(cast_kernel(n, dst), out_idx=[1, 2], target="cpu")
    y, z = kernel(SPECIAL)
    want = _expected_saturated(SPECIAL, dst)
    np.testing.assert_array_equal(y, want, err_msg=f"T.cast float32 -> {dst}")
    np.testing.assert_array_equal(z, want, err_msg=f"T.copy float32 -> {dst}")


@pytest.mark.gpu
@pytest.mark.parametrize("dst", INT_DTYPES)
def test_float_to_int_saturates_gpu(dst):
    n = SPECIAL.size
    kernel = tl.compile(cast_kernel(n, dst), out_idx=[1, 2], target="cuda")
    y, z = kernel(put(SPECIAL, "cuda"))
    want = _expected_saturated(SPECIAL, dst)
    np.testing.assert_array_equal(get(y), want)
    np.testing.assert_array_equal(get(z), want)


@pytest.mark.parametrize("src,dst", [("int32", "int8"), ("int64", "int16"), ("int16", "uint8"),
                                     ("uint8", "int8"), ("int8", "uint8")])
def test_integer_narrowing_wraps_cpu(src, dst, rng):
    n = 64
    info = np.iinfo(_np(src))
    x = rng.integers(info.min, info.max, n, endpoint=True).astype(_np(src))
    kernel = tl.compile(cast_kernel_int(n, src, dst), out_idx=[1, 2], target="cpu")
    y, z = kernel(x)
    want = x.astype(np.int64).astype(_np(dst))
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(z, want)


def cast_kernel_int(n, src, dst):
    @T.prim_func
    def main(X: T.Tensor((n,), src), Y: T.Tensor((n,), dst), Z: T.Tensor((n,), dst)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                Y[i] = T.cast(X[i], dst)
            T.copy(X, Z)

    return main
