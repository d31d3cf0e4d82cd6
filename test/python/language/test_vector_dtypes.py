"""Variables and local buffers of vector dtypes (`T.alloc_var(T.float16x2)`,
`T.alloc_local((n,), "float32x4")`), as TileLang's extract_lane test and
its vectorized kernels write them: `T.float16x2(a, b)` builds a value, a
store takes a vector of as many lanes (or a scalar for every lane),
arithmetic applies lane by lane and `T.extract_lane` reads one lane. The
lanes live in a last dimension of the thread's buffer. Tensors, shared
and fragment buffers of a vector dtype are refused with the reason.

Against NumPy on the CPU target and the GPU (marked `gpu`); compiled for
sm_80, sm_90a and gfx942."""

import ml_dtypes
import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put

CASES = [("float16", "float16x2", np.float16), ("bfloat16", "bfloat16x2", ml_dtypes.bfloat16),
         ("float32", "float32x4", np.float32), ("int8", "int8x4", np.int8)]


def _program(dtype: str, vdt: str):
    lanes = int(vdt.rsplit("x", 1)[1])

    @T.prim_func
    def main(A: T.Tensor((32, lanes), dtype), B: T.Tensor((32, 2 * lanes), dtype)):
        with T.Kernel(32, threads=1) as tx:  # one row a block
            v = T.alloc_var(vdt)
            v = A[tx, 0:lanes]  # a row of A as one vector value
            acc = T.alloc_local((2,), vdt)
            acc[0] = v
            acc[1] = acc[0] + v  # lane by lane
            acc[0] = 1  # a scalar into every lane
            for k in T.unroll(lanes):
                B[tx, k] = T.extract_lane(acc[1], k)
                B[tx, lanes + k] = T.extract_lane(acc[0], k) + T.extract_lane(v, lanes - 1 - k)

    return main


@pytest.mark.parametrize("dtype,vdt,np_dtype", CASES)
def test_vector_variables(target, rng, dtype, vdt, np_dtype):
    lanes = int(vdt.rsplit("x", 1)[1])
    a = rng.integers(-20, 20, (32, lanes)).astype(np_dtype)
    kernel = tl.compile(_program(dtype, vdt), out_idx=[1], target=target)
    b = np.asarray(get(kernel(put(a, target))), dtype=np.float64)
    want = np.concatenate([2 * a.astype(np.float64), 1 + a[:, ::-1].astype(np.float64)], axis=1)
    np.testing.assert_array_equal(b, want)


def test_float16x2_constructor_and_extract_lane(target):
    """TileLang's extract_lane kernel: `packed = T.float16x2(A[0], A[1])`."""

    @T.prim_func
    def main(A: T.Tensor((2,), "float16"), B: T.Tensor((2,), "float16")):
        with T.Kernel(1, threads=1):
            packed = T.alloc_var(T.float16x2)
            packed = T.float16x2(A[0], A[1])
            B[0] = T.extract_lane(packed, 1)
            B[1] = T.extract_lane(packed, 0)

    a = np.array([1.25, -2.5], dtype=np.float16)
    kernel = tl.compile(main, out_idx=[1], target=target)
    np.testing.assert_array_equal(get(kernel(put(a, target))), a[::-1])


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_vector_variables_compile(chip):
    for dtype, vdt, _ in CASES:
        assert tl.compile(_program(dtype, vdt), out_idx=[1], target=chip).get_kernel_source()


def test_vector_dtype_buffers_elsewhere_are_refused():
    @T.prim_func
    def shared(A: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4,), "float16x2")
            s[0] = T.float16x2(A[0], A[1])

    with pytest.raises(tl.TileLangError, match="shared or fragment buffers of the vector dtype "
                                               "float16x2"):
        tl.compile(shared, target="cpu")

    @T.prim_func
    def wrong_lanes(A: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=1):
            v = T.alloc_var("float16x2")
            v = A[0:4]

    with pytest.raises(tl.TileLangError, match="takes a vector of 2 lanes, got 4"):
        tl.compile(wrong_lanes, target="cpu")
