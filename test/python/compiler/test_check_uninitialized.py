"""tile-check-uninitialized: a thread's buffer (T.alloc_fragment / _local /
_var) read before anything writes it is a TileLangWarning at the program's
line (its elements start undefined, as TileLang's registers); written
first, or read under a condition, it is not."""

import warnings

import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import TileLangWarning


def _sum_of_squares(initialized):
    @T.prim_func
    def main(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=64):
            xsqr = T.alloc_fragment((8, 64), "float32")
            s = T.alloc_fragment((8,), "float32")
            if initialized:
                T.clear(xsqr)
            for i, j in T.Parallel(8, 64):
                xsqr[i, j] += X[i, j] * X[i, j]  # the read
            T.reduce_sum(xsqr, s, 1)
            T.copy(s, Y)

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda:sm_90a", "cuda:sm_80"])
def test_a_fragment_accumulated_before_any_write_warns_at_its_line(target):
    with pytest.warns(TileLangWarning) as record:
        tl.compile(_sum_of_squares(False), target=target)
    (w,) = [r for r in record if r.category is TileLangWarning]
    text = str(w.message)
    assert w.filename == __file__ and "# the read" in open(__file__).read().splitlines()[
        w.lineno - 1]
    assert "reads a T.alloc_fragment buffer before anything writes it" in text
    assert "xsqr[i, j] += X[i, j] * X[i, j]" in text and "allocated here" in text
    assert "see current operation" not in text


def test_written_first_or_guarded_reads_do_not_warn():
    @T.prim_func
    def guarded(X: T.Tensor((4,), "int32"), Y: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            prev = T.alloc_var("int32")
            loc = T.alloc_local((4,), "int32")
            for k in T.serial(4):
                if k > 0:
                    loc[k] = X[k] + prev  # a value kept from the trip before
                else:
                    loc[k] = X[k]
                prev = X[k]
            T.copy(loc, Y)

    with warnings.catch_warnings():
        warnings.simplefilter("error", TileLangWarning)
        kernel = tl.compile(guarded, target="cpu")
        tl.compile(_sum_of_squares(True), target="cpu")
    x = torch.tensor([1, 2, 3, 4], dtype=torch.int32)
    y = torch.empty_like(x)
    kernel(x, y)
    assert y.tolist() == [1, 3, 5, 7]


def test_the_warned_program_still_compiles_and_runs(tmp_path, monkeypatch):
    # a warning, not an error: the program is valid (its values are not
    # defined); it warns again from the in-memory and the disk cache; a
    # fragment filled before the read gives the sum
    from tilelang_mlir.compiler import compile as compile_module

    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    program = _sum_of_squares(False)
    compile_module._MEMORY_CACHE.clear()  # (the tests above compiled it)
    with monkeypatch.context() as m:
        for again in range(3):
            if again == 2:  # the disk entry's turn: nothing is lowered again
                compile_module._MEMORY_CACHE.clear()
                m.setattr(compile_module, "_lower", lambda *a: pytest.fail("lowered again"))
            with pytest.warns(TileLangWarning, match="before anything writes it"):
                tl.compile(program, target="cpu")
    assert any(f.suffix == ".json" and f.name != "COMPILER_ID" for f in tmp_path.iterdir())
    x = torch.randn(8, 64)
    y = torch.empty(8)
    tl.compile(_sum_of_squares(True), target="cpu")(x, y)
    torch.testing.assert_close(y, (x * x).sum(1))


def _accumulating_ops(cleared):
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"),
             C: T.Tensor((64, 64), "float32"), M: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            m = T.alloc_fragment((64,), "float32")
            T.copy(A, a)
            T.copy(B, b)
            if cleared:
                T.clear(acc)
                T.fill(m, -T.infinity("float32"))
            T.gemm(a, b, acc)  # the gemm
            T.reduce_max(acc, m, dim=1, clear=False)  # the reduction
            T.copy(acc, C)
            T.copy(m, M)

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda:sm_90a"])
def test_tile_operations_that_accumulate_into_an_unwritten_buffer_warn(target):
    """A gemm without clear_accum and a reduction with clear=False combine
    with their destination: into a fragment nothing wrote, each is a read
    of undefined elements (TileOPs' MHA decode combine: NaN now and then)."""
    with pytest.warns(TileLangWarning) as record:
        tl.compile(_accumulating_ops(False), target=target,
                   pass_configs={"tl.disable_cache": True})
    lines = open(__file__).read().splitlines()
    marks = sorted(lines[r.lineno - 1].split("# ")[-1] for r in record
                   if r.category is TileLangWarning)
    assert marks == ["the gemm", "the reduction"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TileLangWarning)
        kernel = tl.compile(_accumulating_ops(True), target=target)
    if target == "cpu":
        g = torch.Generator().manual_seed(3)
        a = torch.randn(64, 32, generator=g).half()
        b = torch.randn(32, 64, generator=g).half()
        c, m = torch.empty(64, 64), torch.empty(64)
        kernel(a, b, c, m)
        want = a.float() @ b.float()
        torch.testing.assert_close(c, want, rtol=1e-3, atol=1e-3)
        torch.testing.assert_close(m, want.max(dim=1).values, rtol=1e-3, atol=1e-3)
