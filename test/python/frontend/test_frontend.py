"""The DSL: Python control flow, closures, macros, math, and errors that point
at the user's line."""

import inspect

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put
from tilelang_mlir.frontend.errors import TileLangError


def line_of(fn, needle: str) -> int:
    """The file line of the first source line of `fn` containing `needle`."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if needle in line:
            return first + i
    raise AssertionError(f"{needle!r} not in source")


def test_closure_constants_python_if_and_macro(target, rng):
    N = 64
    scale = 3.0

    @T.macro
    def axpy(x, y, a):
        for i in T.Parallel(N):
            y[i] = a * x[i] + y[i]

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((N,), "float32")
            y = T.alloc_fragment((N,), "float32")
            T.copy(X, x)
            T.clear(y)
            if scale > 2:  # compile-time: only this branch is emitted
                axpy(x, y, scale)
            else:
                axpy(x, y, 1.0)
            T.copy(y, Y)

    kernel = tl.compile(main, out_idx=[1], target=target)
    assert "arith.constant 3.0" in kernel.mlir("tile") or "3.000000e+00" in kernel.mlir("tile")
    x = rng.standard_normal(N).astype(np.float32)
    np.testing.assert_allclose(get(kernel(put(x, target))), 3.0 * x, rtol=1e-6)


def test_runtime_if_while_serial_var_and_math(target, rng):
    N = 40

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"),
             Steps: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.serial(N):
                v = X[i]
                if v > 0:
                    Y[i] = T.sqrt(v) + T.exp2(1.0)
                else:
                    Y[i] = T.max(v, -0.5) * T.abs(v)
            # Collatz-like loop with a var: count halvings of 1000 + i.
            for i in range(N):
                n = T.alloc_var("int32", init=1000 + i)
                count = T.alloc_var("int32", init=0)
                while n > 1:
                    n = n // 2
                    count = count + 1
                Steps[i] = count

    kernel = tl.compile(main, out_idx=[1, 2], target=target)
    x = rng.standard_normal(N).astype(np.float32)
    y, steps = get(kernel(put(x, target)))
    ref = np.where(x > 0, np.sqrt(np.maximum(x, 0)) + 2.0, np.maximum(x, -0.5) * np.abs(x))
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    np.testing.assert_array_equal(steps, [int(np.floor(np.log2(1000 + i))) for i in range(N)])


def test_if_then_else_cast_and_integer_ops(target, rng):
    N = 32

    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                a = A[i]
                B[i] = T.if_then_else(a % 3 == 0, T.cast(a // 3, "float32"),
                                      T.cast(a, "float32") * 0.5)

    kernel = tl.compile(main, out_idx=[1], target=target)
    a = rng.integers(-50, 50, N).astype(np.int32)
    ref = np.where(a % 3 == 0, (a // 3).astype(np.float32), a.astype(np.float32) * 0.5)
    np.testing.assert_array_equal(get(kernel(put(a, target))), ref)


def test_slices_give_static_extents(target, rng):
    M, N, bm = 64, 32, 16

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M // bm, threads=32) as bx:
            s = T.alloc_shared((bm, N), "float32")
            T.copy(A[bx * bm:(bx + 1) * bm, :], s)
            T.copy(s, B[bx * bm:(bx + 1) * bm, 0:N])

    kernel = tl.compile(main, out_idx=[1], target=target)
    a = rng.standard_normal((M, N)).astype(np.float32)
    np.testing.assert_array_equal(get(kernel(put(a, target))), a)


def test_bounds_safe_copy_zero_fills_and_drops(target, rng):
    """A 16x16 tile read at the ragged edge sees zeros past the tensor; the
    write back drops elements past it."""

    @T.prim_func
    def main(A: T.Tensor((20, 20), "float32"), B: T.Tensor((20, 20), "float32"),
             Sums: T.Tensor((2, 2), "float32")):
        with T.Kernel(2, 2, threads=32) as (bx, by):
            t = T.alloc_fragment((16, 16), "float32")
            row = T.alloc_fragment((16,), "float32")
            total = T.alloc_fragment((1,), "float32")
            T.copy(A[by * 16, bx * 16], t)
            T.reduce_sum(t, row, dim=1)
            T.reduce_sum(row, total, dim=0)
            Sums[by, bx] = total[0]
            T.copy(t, B[by * 16, bx * 16])

    kernel = tl.compile(main, out_idx=[1, 2], target=target)
    a = rng.standard_normal((20, 20)).astype(np.float32)
    b, sums = get(kernel(put(a, target)))
    np.testing.assert_array_equal(b, a)
    for by in range(2):
        for bx in range(2):
            ref = a[by * 16:by * 16 + 16, bx * 16:bx * 16 + 16].astype(np.float64).sum()
            np.testing.assert_allclose(sums[by, bx], ref, rtol=1e-5, atol=1e-5)


def test_all_reductions(target, rng):
    M, N = 8, 24

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Out: T.Tensor((5, M), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((M, N), "float32")
            r = T.alloc_fragment((M,), "float32")
            T.copy(X, x)
            T.reduce_sum(x, r, dim=1)
            T.copy(r, Out[0, 0])
            T.reduce_max(x, r, dim=1)
            T.copy(r, Out[1, 0])
            T.reduce_min(x, r, dim=-1)
            T.copy(r, Out[2, 0])
            T.reduce_abssum(x, r, dim=1)
            T.copy(r, Out[3, 0])
            T.reduce_absmax(x, r, dim=1)
            T.copy(r, Out[4, 0])

    kernel = tl.compile(main, out_idx=[1], target=target)
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = get(kernel(put(x, target)))
    refs = [x.sum(1), x.max(1), x.min(1), np.abs(x).sum(1), np.abs(x).max(1)]
    # A float32 sum of N terms in any order is within N * eps * sum|x| of the
    # exact sum; a relative tolerance alone fails when the terms cancel.
    sum_tol = N * np.finfo(np.float32).eps * np.abs(x).sum(1)
    for index, (got, ref) in enumerate(zip(out, refs)):
        if index in (0, 3):
            assert np.all(np.abs(got - ref) <= sum_tol), (got, ref, sum_tol)
        else:
            np.testing.assert_array_equal(got, ref)


def test_reduce_without_clear_accumulates(target, rng):
    @T.prim_func
    def main(X: T.Tensor((4, 8), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((4, 8), "float32")
            r = T.alloc_fragment((4,), "float32")
            T.copy(X, x)
            T.fill(r, 10.0)
            T.reduce_sum(x, r, dim=1, clear=False)
            T.copy(r, Y)

    kernel = tl.compile(main, out_idx=[1], target=target)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    got = get(kernel(put(x, target)))
    tol = 9 * np.finfo(np.float32).eps * (10.0 + np.abs(x).sum(1))
    assert np.all(np.abs(got - (10.0 + x.sum(1))) <= tol), (got, 10.0 + x.sum(1))


def test_scalar_argument(target, rng):
    @T.prim_func
    def main(X: T.Tensor((16,), "float32"), alpha: T.float32, Y: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(16):
                Y[i] = X[i] * alpha

    kernel = tl.compile(main, out_idx=[2], target=target)
    x = rng.standard_normal(16).astype(np.float32)
    np.testing.assert_allclose(get(kernel(put(x, target), 1.5)), x * 1.5, rtol=1e-6)


def test_dtype_objects_and_strings_are_interchangeable():
    @T.prim_func
    def a(X: T.Tensor((4,), T.float16)):
        with T.Kernel(1, threads=32) as bx:
            T.alloc_shared((4,), T.bfloat16)

    @T.prim_func
    def b(X: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            T.alloc_shared((4,), "bfloat16")

    assert a.script().replace("@a", "@b") == b.script()


# ---------------------------------------------------------------------------
# Errors point at the user's line
# ---------------------------------------------------------------------------


def test_undefined_name_points_at_line():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((16,), "float32")
            T.copy(A, not_defined)  # noqa: F821

    with pytest.raises(TileLangError) as info:
        tl.compile(main, target="cpu")
    err = info.value
    assert "name 'not_defined' is not defined" in err.message
    assert err.location.line == line_of(main.fn, "not_defined")
    assert err.location.filename == __file__
    assert "T.copy(A, not_defined)" in str(err)


def test_verifier_error_maps_to_the_gemm_line():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, b, c)

    with pytest.raises(TileLangError) as info:
        tl.compile(main, target="cpu")
    assert "the K dimensions 32 and 64 differ" in info.value.message
    assert info.value.location.line == line_of(main.fn, "T.gemm(a, b, c)")


def test_errors_name_buffers_by_their_variables():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            B_shared = T.alloc_shared((64,), "float32")
            T.copy(A[0:128], B_shared[0:64])

    with pytest.raises(TileLangError) as info:
        tl.compile(main, target="cpu")
    assert "region of 'B_shared' (64) is smaller than the region of 'A'" in info.value.message
    assert info.value.location.line == line_of(main.fn, "T.copy(A[0:128]")


def test_compat_errors_carry_tilelangs_arrow_line():
    # TileLang's diagnostics name the place as `--> file:line:col`; the
    # compat route adds that line (its tests and tools look for it).
    from tilelang_mlir.base.errors import SourceLocation
    from tilelang_mlir.compat import _tilelang_defaults

    loc = SourceLocation(__file__, 3, 5)
    before = TileLangError.arrow_line  # (whether this process serves TileLang)
    _tilelang_defaults(False)
    try:
        assert "-->" not in str(TileLangError("bad", loc))
        _tilelang_defaults(True)
        assert str(TileLangError("bad", loc)).endswith(f"\n  --> {__file__}:3:5")
        assert "-->" not in str(TileLangError("bad"))  # no place, no line
    finally:
        _tilelang_defaults(before)


def test_runtime_reassignment_in_loop_is_rejected():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            acc = A[0]
            for i in T.serial(16):
                acc = acc + A[i]

    with pytest.raises(TileLangError, match="assigned inside a loop but was defined outside"):
        tl.compile(main, target="cpu")


def test_rebinding_in_a_branch_or_trip_holds_there(target, rng):
    """TileLang's scoping: a name bound before a runtime `if` (or a loop
    whose body has not read it) and assigned inside holds the new value for
    the rest of that branch (trip); reading it after the statement is an
    error naming both lines, never the stale value."""
    n = 32

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"),
             C: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n) as bx:
            for i in T.serial(n):
                x = A[i]
                if A[i] > 0.0:
                    x = A[i] * 10.0
                    if A[i] > 1.0:
                        x = x + 1.0
                        B[i] = x
                    else:
                        B[i] = x
                else:
                    B[i] = x - 1.0
            y = A[0]
            for i in T.serial(n):
                y = A[i] * 2.0
                C[i] = y + 1.0

    x = rng.standard_normal(n).astype(np.float32)
    kernel = tl.compile(main, out_idx=[1, 2], target=target)
    b, c = get(kernel(put(x, target)))
    want = np.where(x > 0, np.where(x > 1, x * 10 + 1, x * 10), x - 1)
    np.testing.assert_allclose(b, want.astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(c, x * 2 + 1, rtol=1e-6)


def test_rebinding_in_a_branch_inside_a_loop_that_reads_it(target, rng):
    """A loop that reads a name in one branch and rebinds it in the other
    (TileOPs' Mamba chunk scan: `anchor` used by the off-diagonal tiles,
    recomputed for the diagonal ones): the rebinding holds in its branch
    only, and later trips read the value from before the loop."""
    n = 32

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n) as bx:
            anchor = A[0] * 2.0
            for i in T.Pipelined(n, num_stages=2):
                if A[i] > 0.0:
                    B[i] = A[i] - anchor
                else:
                    anchor = A[i] * 3.0
                    B[i] = anchor + 1.0

    x = rng.standard_normal(n).astype(np.float32)
    kernel = tl.compile(main, out_idx=[1], target=target)
    b = get(kernel(put(x, target)))
    want = np.where(x > 0, x - 2 * x[0], 3 * x + 1)
    np.testing.assert_allclose(b, want.astype(np.float32), rtol=1e-6)


def test_reading_a_name_rebound_in_a_branch_or_trip_after_it_is_an_error():
    @T.prim_func
    def after_if(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = A[0]
            if A[1] > 0.0:
                if A[2] > 0.0:
                    x = A[3]
                A[4] = x
            A[5] = x

    @T.prim_func
    def after_loop(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = A[0]
            for i in T.serial(16):
                x = A[i]
            A[5] = x

    with pytest.raises(TileLangError) as info:
        tl.compile(after_if, target="cpu")
    assert info.value.location.line == line_of(after_if.fn, "A[4] = x")
    assert "'x' is read after a runtime `if` that assigned it (line " \
        f"{line_of(after_if.fn, 'x = A[3]')})" in info.value.message
    assert "x = T.alloc_var(dtype)" in info.value.message
    with pytest.raises(TileLangError) as info:
        tl.compile(after_loop, target="cpu")
    assert info.value.location.line == line_of(after_loop.fn, "A[5] = x")
    assert "read after a loop that assigned it" in info.value.message


def test_tile_op_outside_kernel_is_rejected():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        x = T.alloc_fragment((16,), "float32")

    with pytest.raises(TileLangError, match=r"T.alloc_fragment must be inside `with T.Kernel"):
        tl.compile(main, target="cpu")


def test_copy_shape_mismatch_is_rejected():
    """(TileLang's rule: a copy runs over the more local side's region,
    here the 16x16 tile, which must cover the source's 16x32:
    test_copy_extents.py has the copies it allows.)"""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((16, 16), "float32")
            T.copy(A[0:16, 0:32], s)

    with pytest.raises(TileLangError) as info:
        tl.compile(main, target="cpu")
    assert "(16x32)" in info.value.message and "(16x16)" in info.value.message
    assert info.value.location.line == line_of(main.fn, "T.copy(A[0:16, 0:32], s)")


def test_unsupported_syntax_is_rejected():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(16):
                if A[i] > 0:
                    break

    with pytest.raises(TileLangError, match="`break` outside a sequential loop"):
        tl.compile(main, target="cpu")


def test_missing_annotation_and_bad_dtype():
    with pytest.raises(TileLangError, match="argument 'A' of 'f' needs a type annotation"):
        @T.prim_func
        def f(A):
            pass

    with pytest.raises(TypeError, match="unknown dtype 'float12'"):
        T.Tensor((4,), "float12")


def test_calling_a_prim_func_directly_explains_what_to_do():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            pass

    with pytest.raises(TileLangError, match="compile it with tl.compile"):
        main(np.zeros(4, np.float32))


def test_gemm_k_pack_and_policy_reach_the_ir():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, a, c, transpose_B=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)

    text = main.script()
    assert "policy = #tile.policy<full_col>" in text and "clear_accum" in text
    assert "transpose_b" in text


def test_symbolic_size_shared_between_tensors_must_agree(target, rng):
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, 8), "float32"), B: T.Tensor((M, 8), "float32")):
        with T.Kernel(T.ceildiv(M, 4), threads=32) as bx:
            t = T.alloc_fragment((4, 8), "float32")
            T.copy(A[bx * 4, 0], t)
            T.copy(t, B[bx * 4, 0])

    kernel = tl.compile(main, target=target)
    a = rng.standard_normal((10, 8)).astype(np.float32)
    b = put(np.zeros((10, 8), np.float32), target)
    kernel(put(a, target), b)
    np.testing.assert_array_equal(a, get(b))
    with pytest.raises(ValueError, match="symbolic size 'M' = 12, but argument 'A' gave 'M' = 10"):
        kernel(put(a, target), put(np.zeros((12, 8), np.float32), target))


def test_index_value_slice_has_static_extent(target, rng):
    """A runtime row made an index value (T.cast(load, "index")) is one atom
    of index arithmetic: X[row:row + 4, :] has the static extent 4 (packed
    variable-length sequences start at such rows)."""
    M = T.dynamic("M")

    @T.prim_func
    def main(X: T.Tensor((M, 8), "float32"), Starts: T.Tensor((3,), "int32"),
             Y: T.Tensor((3, 4, 8), "float32")):
        with T.Kernel(3, threads=32) as bx:
            t = T.alloc_fragment((4, 8), "float32")
            row = T.cast(Starts[bx], "index") + 1
            T.copy(X[row:row + 4, :], t)
            T.copy(t, Y[bx, 0, 0])

    kernel = tl.compile(main, out_idx=[2], target=target)
    x = rng.standard_normal((13, 8)).astype(np.float32)
    starts = np.array([0, 5, 9], np.int32)
    y = get(kernel(put(x, target), put(starts, target)))
    want = np.zeros((3, 4, 8), np.float32)
    for b, s in enumerate(starts):
        rows = x[s + 1:s + 5]
        want[b, :len(rows)] = rows  # (rows past the end of X read as zero)
    np.testing.assert_array_equal(y, want)


def test_source_edited_after_import_is_named(tmp_path, monkeypatch):
    """A tile program's source is read when it is compiled: when its file
    changed since the import, the lines there belong to another function
    and the error says so instead of a confusing one from those lines."""
    import importlib

    path = tmp_path / "edited_module.py"
    body = '''import tilelang_mlir.language as T


def make(n):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                Y[i] = X[i] * 2.0

    return main
'''
    path.write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_module")
    x = torch.arange(8, dtype=torch.float32)
    assert torch.equal(tl.compile(module.make(8), out_idx=[1], target="cpu")(x), 2 * x)
    # Lines inserted above: the program's old line now holds another def.
    path.write_text(body.replace("\n\ndef make(n):",
                                 "\n\ndef other(A, B):\n    return A\n\n\ndef make(n):"))
    with pytest.raises(TileLangError, match="changed since it was imported"):
        tl.compile(module.make(8), out_idx=[1], target="cpu")


STALE_MODULE = '''import tilelang_mlir.language as T
from tilelang_mlir.language import Tensor


def make(n, scale):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                Y[i] = X[i] * scale + 1.0

    return main


@T.prim_func
def double(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(8):
            Y[i] = X[i] * 2.0


NOTE = "unrelated"
'''


def test_source_edited_in_place_is_an_error(tmp_path, monkeypatch, rng):
    """An edit that keeps the lines in place (issue 17): the text in the
    file is compiled and compared with the code Python loaded, so the kernel
    is never built from code that is not the one that runs. Edits outside
    the function, and a reload, are fine."""
    import importlib

    path = tmp_path / "stale_module.py"
    path.write_text(STALE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("stale_module")
    scale = float(rng.integers(2, 9))
    x = torch.from_numpy(rng.standard_normal(8).astype(np.float32))
    torch.testing.assert_close(tl.compile(module.make(8, scale), out_idx=[1], target="cpu")(x),
                               x * scale + 1.0)
    # Elsewhere in the file, lines kept: the functions are still the code loaded.
    path.write_text(STALE_MODULE.replace('"unrelated"', '"edited too"'))
    torch.testing.assert_close(tl.compile(module.make(16, scale), out_idx=[1], target="cpu")(
        torch.cat([x, x])), torch.cat([x, x]) * scale + 1.0)
    # The same lines, other code: in a factory's closure and at module level.
    for old, new, program in [("* scale + 1.0", "* scale - 1.0", lambda: module.make(24, scale)),
                              ("X[i] * 2.0", "X[i] * 3.0", lambda: module.double)]:
        path.write_text(STALE_MODULE.replace(old, new))
        with pytest.raises(TileLangError, match=r"changed since it was imported: the file no "
                                                r"longer holds the code Python loaded") as info:
            tl.compile(program(), out_idx=[1], target="cpu")
        assert str(path) in str(info.value)
        assert str(info.value).startswith(f"{path}:")
    # Reloaded, the new text is the code that runs.
    module = importlib.reload(module)
    torch.testing.assert_close(tl.compile(module.double, out_idx=[1], target="cpu")(x), x * 3.0)


def test_source_without_a_file_and_rewritten_asserts_are_not_stale(rng):
    """Text that is not a file (a notebook cell: the source in linecache)
    cannot go stale and compiles as before; a module compiled from a
    transformed text (this test file: pytest rewrites its asserts) is not
    called stale for differing from its file."""
    import linecache

    name = "<notebook-cell-17>"
    cell = ("import tilelang_mlir.language as T\n"
            "@T.prim_func\n"
            "def cell(X: T.Tensor((8,), 'float32'), Y: T.Tensor((8,), 'float32')):\n"
            "    with T.Kernel(1, threads=32) as bx:\n"
            "        for i in T.Parallel(8):\n"
            "            Y[i] = X[i] - 1.0\n")
    linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
    scope = {}
    exec(compile(cell, name, "exec"), scope)
    x = torch.from_numpy(rng.standard_normal(8).astype(np.float32))
    torch.testing.assert_close(tl.compile(scope["cell"], out_idx=[1], target="cpu")(x), x - 1.0)

    n = 8

    @T.prim_func
    def checked(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        assert n % 8 == 0, "n must be a multiple of 8"  # compile time; rewritten by pytest
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(n):
                Y[i] = X[i] * 0.5

    torch.testing.assert_close(tl.compile(checked, out_idx=[1], target="cpu")(x), x * 0.5)


def test_captured_slices_are_part_of_the_kernel(rng):
    """Closure values that differ only in their value (here slices, which
    the cache key once gave by their type alone) make different kernels,
    not one from the cache."""
    def make(sl):
        @T.prim_func
        def main(X: T.Tensor((16,), "float32"), Y: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                s = T.alloc_shared((16,), "float32")
                T.clear(s)
                T.copy(X[sl], s[sl])
                T.copy(s, Y)

        return main

    x = rng.standard_normal(16).astype(np.float32)
    for sl in (slice(0, 8), slice(4, 12), slice(4, 16)):
        y = np.ones_like(x)
        tl.compile(make(sl), target="cpu")(x, y)
        want = np.zeros_like(x)
        want[sl] = x[sl]
        np.testing.assert_array_equal(y, want)
