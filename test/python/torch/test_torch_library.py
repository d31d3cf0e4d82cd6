"""Compiled kernels as PyTorch custom operators (tilelang_mlir.library):
the operator's schema and fake implementation come from the kernel's
signature; `torch.library.opcheck` passes; `torch.compile(fullgraph=True)`
over a function of two of our CPU kernels traces with no graph break
(torch._dynamo.explain) and matches eager, with static and dynamic sizes;
bad definitions are refused with a clear error. CPU kernels (CI); the
CUDA registration is the same code with the CUDA dispatch key."""

import itertools

import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import TileLangError

_names = itertools.count()


def fresh(name):
    """A new operator name per test run (torch.library names are global)."""
    return f"tltest::{name}_{next(_names)}"


def scale_program():
    N = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((N, 64), "float32"), s: T.float32,
             B: T.Tensor((N, 64), "float32")):
        with T.Kernel(T.ceildiv(N, 16), threads=64) as bx:
            for i, j in T.Parallel(16, 64):
                if bx * 16 + i < N:
                    B[bx * 16 + i, j] = A[bx * 16 + i, j] * s
    return main


def matmul_program(M, N, K):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):
            A_s = T.alloc_shared((32, K), "float32")
            B_s = T.alloc_shared((K, 32), "float32")
            C_l = T.alloc_fragment((32, 32), "float32")
            T.copy(A[by * 32, 0], A_s)
            T.copy(B[0, bx * 32], B_s)
            T.clear(C_l)
            T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 32, bx * 32])
    return main


@pytest.fixture(scope="module")
def ops():
    scale = tl.library.custom_op(fresh("scale"),
                                 tl.compile(scale_program(), out_idx=[2], target="cpu"))
    matmul = tl.library.custom_op(fresh("matmul"),
                                  tl.compile(matmul_program(64, 64, 64), out_idx=[2],
                                             target="cpu"))
    return scale, matmul


def test_op_runs_and_has_the_kernels_schema(ops):
    scale, matmul = ops
    a = torch.randn(40, 64)
    torch.testing.assert_close(scale(a, 3.0), a * 3.0)
    assert "(Tensor A, float s) -> Tensor" in str(scale._schemas[""])
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    torch.testing.assert_close(matmul(x, y), x @ y, rtol=1e-4, atol=1e-4)


def test_opcheck(ops):
    scale, matmul = ops
    torch.library.opcheck(scale, (torch.randn(33, 64), 0.5))
    torch.library.opcheck(matmul, (torch.randn(64, 64), torch.randn(64, 64)))


def test_compile_fullgraph_no_graph_breaks(ops):
    """Two of our kernels in one compiled function: no graph break, the
    same result as eager; the dynamic first size of `scale` traced
    symbolically (two lengths, one graph)."""
    scale, matmul = ops

    def f(x, w):
        return scale(matmul(x, w), 2.0)[:, :8].sum(dim=1) + 1

    x, w = torch.randn(64, 64), torch.randn(64, 64)
    explained = torch._dynamo.explain(f)(x, w)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, w), f(x, w), rtol=1e-4, atol=1e-4)

    g = torch.compile(lambda a: scale(a, 0.25) * 2, fullgraph=True, dynamic=True,
                      backend="aot_eager")
    for n in (17, 50):
        a = torch.randn(n, 64)
        torch.testing.assert_close(g(a), a * 0.5)


def test_compile_inductor(ops):
    """The default backend (Inductor) around the op."""
    scale, _ = ops
    f = torch.compile(lambda a: torch.relu(scale(a, -1.0)) + a, fullgraph=True)
    a = torch.randn(20, 64)
    torch.testing.assert_close(f(a), torch.relu(-a) + a)


def test_bad_definitions():
    k = tl.compile(matmul_program(32, 32, 32), out_idx=[2], target="cpu")
    with pytest.raises(TileLangError, match="namespace::op"):
        tl.library.custom_op("no_namespace", k)
    with pytest.raises(TileLangError, match="at least one compiled kernel"):
        tl.library.custom_op(fresh("none"))
    other = tl.compile(matmul_program(64, 64, 64), out_idx=[2], target="cpu")
    with pytest.raises(TileLangError, match="another signature"):
        tl.library.custom_op(fresh("mixed"), k, other)
    with pytest.raises(TileLangError, match="two kernels for cpu"):
        tl.library.custom_op(fresh("twice"), k, k)
    with pytest.raises(TileLangError, match="no outputs"):
        tl.library.custom_op(fresh("noout"), tl.compile(matmul_program(32, 32, 32),
                                                        target="cpu"))
    name = fresh("dup")
    tl.library.custom_op(name, k)
    with pytest.raises(TileLangError, match="already defined"):
        tl.library.custom_op(name, k)


def test_jit_prim_func_and_factory():
    """A @tl.jit prim_func becomes an operator directly; a @tl.jit
    factory through its .compile(...) (a dynamic size: one kernel for
    every row count); the factory itself is refused with what to pass."""
    jitted = tl.jit(out_idx=[2], target="cpu")(scale_program())
    op = tl.library.custom_op(fresh("jit_scale"), jitted)
    a = torch.randn(37, 64)
    torch.testing.assert_close(op(a, 3.0), a * 3.0)
    torch.library.opcheck(op, (a, 3.0))

    @tl.jit(out_idx=[2], target="cpu")
    def matmul(M, N, K):
        return matmul_program(M, N, K)

    op = tl.library.custom_op(fresh("jit_matmul"), matmul.compile(32, 64, 32))
    x, y = torch.randn(32, 32), torch.randn(32, 64)
    torch.testing.assert_close(op(x, y), x @ y, rtol=1e-4, atol=1e-4)
    with pytest.raises(TileLangError, match=r"is a @tl.jit factory.*matmul.compile"):
        tl.library.custom_op(fresh("jit_factory"), matmul)


def test_result_size_not_given_by_inputs():
    n = T.dynamic("n")
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                if i < m:
                    B[i] = 0.0

    with pytest.raises(TileLangError, match="not the size of any input"):
        tl.library.custom_op(fresh("unknown"), tl.compile(main, out_idx=[1], target="cpu"))
