"""T.* operations applied outside a tile program (language/host_expr.py):
as in TileLang, they build a typed expression (`tvm.tir.Call`), and an
operand of the wrong type is refused there with TileLang's exception type;
an expression of constants means the same inside a program that uses it
(compiled for sm_90a; run on a GPU); a variable made outside has no
value inside a program; operations that make no value stay refused."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir import TileLangError
from tilelang_mlir.compat import tvm_tir as tir

FAST = [T.__exp, T.__exp10, T.__log, T.__log2, T.__log10, T.__tan, T.__cos, T.__sin]


@pytest.mark.parametrize("fn", FAST, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_fast_math_of_a_float_variable_is_a_call_of_its_dtype(fn, dtype):
    x = tir.Var("x", dtype)
    e = fn(x)
    assert isinstance(e, tir.Call) and isinstance(e, tir.PrimExpr)
    assert e.dtype == dtype and e.op.name == fn.__name__ and e.args[0].same_as(x)


@pytest.mark.parametrize("fn", FAST, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint64", "float8_e4m3fn",
                                   "float8_e5m2"])
def test_fast_math_refuses_non_float_operands_outside_a_program(fn, dtype):
    with pytest.raises(TypeError, match=rf"T\.{fn.__name__} only supports floating-point "
                                        rf"inputs, but got {dtype}"):
        fn(tir.Var("v", dtype))


def test_accurate_math_of_an_integer_variable_is_float32():
    assert T.exp(tir.Var("n", "int32")).dtype == "float32"
    assert T.sqrt(tir.Var("h", "float16")).dtype == "float16"


@pytest.mark.parametrize("fn,dtype", [(T.any_sync, "int32"), (T.all_sync, "int32"),
                                      (T.ballot_sync, "uint64"), (T.ballot, "uint64"),
                                      (T.syncthreads_count, "int32")])
def test_votes_take_integer_or_bool_predicates(fn, dtype):
    for predicate in (1, True, tir.Var("p", "bool"), tir.Var("i", "int8")):
        assert fn(predicate).dtype == dtype
    with pytest.raises(TypeError, match="requires an integer or boolean predicate"):
        fn(tir.FloatImm("float32", 0.5))
    with pytest.raises(TypeError, match="requires an integer or boolean predicate"):
        fn(tir.Var("f", "float16"))


@pytest.mark.parametrize("fn", [T.add2, T.sub2, T.mul2, T.max2, T.min2])
def test_packed_pairs_need_one_dtype(fn):
    a, b = tir.Var("a", "float16x2"), tir.Var("b", "bfloat16x2")
    assert fn(a, tir.Var("c", "float16x2")).dtype == "float16x2"
    with pytest.raises(ValueError, match="same dtype"):
        fn(a, b)
    with pytest.raises(ValueError, match="same dtype"):
        T.fma2(a, a, b)


def test_extract_lane_outside_a_program():
    v = tir.Var("v", "bfloat16x2")
    e = T.extract_lane(v, tir.IntImm("int32", 1))
    assert isinstance(e, T.Shuffle) and e.dtype == "bfloat16"
    assert e.vectors[0].same_as(v) and e.indices[0].value == 1
    assert T.extract_lane(tir.Var("w", "int8x4"), 3).dtype == "int8"
    with pytest.raises(TypeError, match="PrimExpr"):
        T.extract_lane(1, 0)
    with pytest.raises(ValueError, match="vector expression"):
        T.extract_lane(tir.Var("s", "bfloat16"), 0)
    with pytest.raises(TypeError, match="compile-time integer"):
        T.extract_lane(v, tir.Var("lane", "int32"))
    for lane in (-1, 2):
        with pytest.raises(IndexError, match="out of bounds"):
            T.extract_lane(v, lane)


def test_operations_without_a_value_stay_refused_outside_a_program():
    assert T.shfl_sync(tir.Var("x", "float32"), 0).dtype == "float32"  # a value
    for call in (lambda: T.sync_threads(), lambda: T.fill(None, 0),
                 lambda: T.copy(np.zeros(4), np.zeros(4))):
        with pytest.raises(TileLangError, match="inside a function decorated with"):
            call()


def _ballot_program():
    votes = T.ballot(1)  # made outside: every lane of the warp votes 1

    @T.prim_func
    def prog(M: T.Tensor((64,), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            M[tx] = T.cast(votes, "int64") + tx

    return prog


def test_an_expression_of_constants_compiles_where_a_program_uses_it():
    ptx = tl.compile(_ballot_program(), target="cuda:sm_90a").get_kernel_source()
    assert "vote.sync.ballot.b32" in ptx


@pytest.mark.gpu
def test_an_expression_of_constants_is_evaluated_where_a_program_uses_it():
    import torch

    kernel = tl.compile(_ballot_program(), target="cuda")
    m = torch.full((64,), -1, dtype=torch.int64, device="cuda")
    kernel(m)
    expected = 0xFFFFFFFF + torch.arange(64, device="cuda")
    assert torch.equal(m, expected)


def test_a_variable_made_outside_has_no_value_inside():
    x = tir.Var("x", "float32")
    e = T.__exp(x)

    @T.prim_func
    def prog(B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            tx = T.get_thread_binding()
            B[tx] = e

    with pytest.raises(TileLangError, match="'x' .* outside this program"):
        tl.compile(prog, target="cpu")


def test_comparisons_of_symbolic_sizes():
    """`n < 8` of symbolic sizes on the host (TVM's comparison of size
    variables) is a symbolic truth value the program decides per call; it
    has no Python truth value."""
    n = T.dynamic("n")
    small = n < 8

    @T.prim_func
    def main(A: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=1):
            A[0] = T.if_then_else(small, 1, 2)
            A[1] = T.if_then_else(n * 2 >= 20, 3, 4)

    kernel = tl.compile(main, target="cpu")
    for size, want in ((4, [1, 4]), (8, [2, 4]), (16, [2, 3])):
        a = np.zeros(size, np.int32)
        kernel(a)
        np.testing.assert_array_equal(a[:2], want)
    with pytest.raises(TypeError, match="no truth value"):
        bool(n <= 3)
