"""Errors TileLang raises when a program is defined: the compat route's
`@T.prim_func` (tilelang_mlir.compat.prim_func) builds the body once at the
decorator and raises them there, as the Python exception types TileLang
uses; this package's own `@T.prim_func` stays lazy and raises the same
errors at the compile. Anything else waits for the compile."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir import compat
from tilelang_mlir.base.errors import TileLangError


def _atomic_load(order):
    def body(src: T.Tensor((4,), "int32"), out: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                out[i] = T.atomic_load(src[i], memory_order=order)
    return body


def _atomic_store(order):
    def body(dst: T.Tensor((4,), "int32"), src: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                T.atomic_store(dst[i], src[i] + 3, memory_order=order)
    return body


def _atomic_max(order):
    def body(dst: T.Tensor((4,), "int32"), src: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                T.atomic_max(dst[i], src[i], memory_order=order)
    return body


@pytest.mark.parametrize("order", ["release", "acq_rel", "sequential"])
def test_atomic_load_refuses_orders_a_load_cannot_take(order):
    with pytest.raises(ValueError, match=r"atomic_load does not support memory_order=") as e:
        compat.prim_func(_atomic_load(order))
    assert isinstance(e.value, TileLangError)
    assert "test_compat_definition_errors.py" in str(e.value)  # the user's line
    # The lazy decorator of this package raises the same error at the compile.
    with pytest.raises(ValueError, match="atomic_load does not support"):
        tl.compile(T.prim_func(_atomic_load(order)), target="cpu")


@pytest.mark.parametrize("order", ["consume", "acquire", "acq_rel", "weak"])
def test_atomic_store_refuses_orders_a_store_cannot_take(order):
    with pytest.raises(ValueError, match=r"atomic_store does not support memory_order="):
        compat.prim_func(_atomic_store(order))


def test_atomic_update_refuses_an_unknown_order():
    with pytest.raises(ValueError, match=r"atomic_max does not support memory_order='strong'"):
        compat.prim_func(_atomic_max("strong"))


@pytest.mark.parametrize("load,store", [("relaxed", "relaxed"), ("acquire", "release"),
                                        ("consume", "seq_cst"), ("seq_cst", "seq_cst")])
def test_valid_orders_still_compile_and_run(load, store):
    rng = np.random.default_rng(7)
    src = rng.integers(-1000, 1000, 4, dtype=np.int32)
    out = np.zeros(4, np.int32)
    tl.compile(compat.prim_func(_atomic_load(load)), target="cpu")(src, out)
    np.testing.assert_array_equal(out, src)
    dst = np.zeros(4, np.int32)
    tl.compile(compat.prim_func(_atomic_store(store)), target="cpu")(dst, src)
    np.testing.assert_array_equal(dst, src + 3)


def _dp4a(a_dtype, b_dtype, c_dtype):
    def body(A: T.Tensor((8,), a_dtype), B: T.Tensor((8,), b_dtype),
             C: T.Tensor((2,), c_dtype)):
        with T.Kernel(1, threads=1):
            for k in T.serial(2):
                T.dp4a(A[k * 4], B[k * 4], C[k])
    return body


@pytest.mark.parametrize("dtypes,culprit", [
    (("float16", "int8", "int32"), "A is float16"),
    (("int8", "uint8", "int32"), "B is uint8"),  # dp4a.s32.s32 is signed
    (("int8", "int8", "int64"), "an int32 accumulator: C is int64"),
])
def test_dp4a_refuses_other_dtypes(dtypes, culprit):
    with pytest.raises(ValueError, match=f"dp4a requires .*{culprit}"):
        compat.prim_func(_dp4a(*dtypes))


def test_dp4a_of_int8_runs():
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, 8, dtype=np.int8)
    b = rng.integers(-128, 128, 8, dtype=np.int8)
    c = rng.integers(-1000, 1000, 2, dtype=np.int32)
    want = c + (a.astype(np.int32) * b.astype(np.int32)).reshape(2, 4).sum(axis=1)
    tl.compile(compat.prim_func(_dp4a("int8", "int8", "int32")), target="cpu")(a, b, c)
    np.testing.assert_array_equal(c, want)


def test_reshape_to_another_element_count_is_an_assertion():
    def body(A: T.Tensor((64,), "float32"), B: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32):
            T.copy(T.reshape(A, (8, 9)), B)

    with pytest.raises(AssertionError, match=r"T.reshape: shape \(8, 9\) does not have the size"):
        compat.prim_func(body)


def test_float_initializer_out_of_range():
    def body(A: T.Tensor((1,), "float16")):
        with T.Kernel(1):
            v = T.alloc_var("float16", init=1e6)
            A[0] = v

    with pytest.raises(ValueError, match="exceeds maximum of float16"):
        compat.prim_func(body)


def test_bitwise_reducer_of_floats_is_an_assertion():
    def body(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_reducer((1,), "float32", op="bitxor")
            T.reducer_init(acc)
            for i in T.Parallel(8):
                T.reducer_update(acc[0], A[i])
            out = T.alloc_fragment((1,), "float32")
            T.finalize_reducer(acc, out)
            B[0] = out[0]

    with pytest.raises(AssertionError, match="bitwise reducer op 'bitxor' requires an integer"):
        compat.prim_func(body)


def test_other_errors_wait_for_the_compile():
    # A name bound after the decorator, and an error of this compiler that
    # is not TileLang's decorator's (a T.Kernel nested in another): neither
    # is raised at the decorator.
    def body(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            for i in T.Parallel(16):
                B[i] = A[i] * later_scale  # noqa: F821

    program = compat.prim_func(body)
    assert program is not None

    def nested(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            with T.Kernel(1, threads=16):
                A[0] = 1.0

    program = compat.prim_func(nested)
    with pytest.raises(TileLangError, match="cannot be nested"):
        tl.compile(program, target="cpu")


def test_reduce_knobs_and_bitwise_dtypes_are_value_errors():
    def bad_batch(A: T.Tensor((4, 32), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((4, 32), "float32")
            o = T.alloc_fragment((4,), "float32")
            T.copy(A, f)
            T.reduce_max(f, o, dim=1, batch=0)
            T.copy(o, B)

    def bitwise_float(A: T.Tensor((4, 32), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((4, 32), "float32")
            o = T.alloc_fragment((4,), "float32")
            T.copy(A, f)
            T.reduce_bitor(f, o, dim=1)
            T.copy(o, B)

    with pytest.raises(ValueError, match="batch must be an int >= 1, got 0"):
        compat.prim_func(bad_batch)
    with pytest.raises(ValueError, match="reduce_bitor requires integer or bool buffers"):
        compat.prim_func(bitwise_float)


def test_reduce_bitor_of_ints_runs():
    def body(A: T.Tensor((4, 32), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((4, 32), "int32")
            o = T.alloc_fragment((4,), "int32")
            T.copy(A, f)
            T.reduce_bitor(f, o, dim=1, batch=2)
            T.copy(o, B)

    rng = np.random.default_rng(11)
    a = rng.integers(0, 1 << 20, (4, 32), dtype=np.int32)
    b = np.zeros(4, np.int32)
    tl.compile(compat.prim_func(body), target="cpu")(a, b)
    np.testing.assert_array_equal(b, np.bitwise_or.reduce(a, axis=1))


def _strided_slice():
    def body(A: T.Tensor((10,), "int32"), B: T.Tensor((5,), "int32")):
        with T.Kernel(1):
            B[0:5:2] = A[0:10:2]
    return body


def test_a_strided_slice_is_refused_as_tilelang_does():
    """TileLang's parser refuses a slice with a step when the program is
    defined, as a RuntimeError."""
    with pytest.raises(RuntimeError, match=r"strided slices of 'B' are not supported") as e:
        compat.prim_func(_strided_slice())
    assert isinstance(e.value, TileLangError)
    assert "B[0:5:2] = A[0:10:2]" in str(e.value)  # the user's line
    with pytest.raises(RuntimeError, match="strided slices"):
        tl.compile(T.prim_func(_strided_slice()), target="cpu")
