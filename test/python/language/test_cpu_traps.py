"""Integer division on the CPU target never ends the process: a zero divisor
is a DeviceAssertionError at the user's line (the host's division instruction
would raise SIGFPE), and the smallest signed value divided by -1 wraps."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import DeviceAssertionError


def divide(dtype):
    @T.prim_func
    def main(A: T.Tensor((16,), dtype), B: T.Tensor((16,), dtype), Q: T.Tensor((16,), dtype),
             R: T.Tensor((16,), dtype)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(16):
                Q[i] = A[i] // B[i]
                R[i] = A[i] % B[i]

    return main


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
def test_floor_division_and_modulo_follow_python(rng, dtype):
    k = tl.compile(divide(dtype), target="cpu")
    info = np.iinfo(dtype)
    a = rng.integers(info.min // 2, info.max // 2, 16).astype(dtype)
    b = rng.integers(-9, 10, 16).astype(dtype)
    b[b == 0] = 7
    q, r = np.zeros(16, dtype), np.zeros(16, dtype)
    k(a, b, q, r)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_smallest_value_by_minus_one_wraps(dtype):
    k = tl.compile(divide(dtype), target="cpu")
    info = np.iinfo(dtype)
    a = np.full(16, info.min, dtype)
    b = np.full(16, -1, dtype)
    q, r = np.zeros(16, dtype), np.ones(16, dtype)
    k(a, b, q, r)
    np.testing.assert_array_equal(q, a)  # -min wraps to min
    np.testing.assert_array_equal(r, np.zeros(16, dtype))


def test_division_by_zero_is_a_device_assertion(rng):
    k = tl.compile(divide("int32"), target="cpu")
    a = rng.integers(-100, 100, 16).astype(np.int32)
    b = rng.integers(1, 9, 16).astype(np.int32)
    b[5] = 0
    q, r = np.zeros(16, np.int32), np.zeros(16, np.int32)
    with pytest.raises(DeviceAssertionError, match="integer division by zero") as e:
        k(a, b, q, r)
    assert "A[i] // B[i]" in str(e.value)
