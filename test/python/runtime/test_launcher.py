"""The fast path of kernel calls (runtime/launcher.py, launch.cpp): the
same results and the same errors as the Python path, on random inputs, for
CPU kernels here and (marked gpu) CUDA kernels from hand-written PTX; the
@tl.jit call cache; saved kernels; building the native module."""

import copy
import ctypes
import math
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.runtime import launcher
from tilelang_mlir.runtime.kernel import Kernel

native_only = pytest.mark.skipif(not launcher.available(),
                                 reason="the native launcher is not built here")


@pytest.fixture(params=["native", "python"])
def path(request):
    """Runs the test with calls on the native fast path, then on the Python
    path."""
    if request.param == "native" and not launcher.available():
        pytest.skip("the native launcher is not built here")
    was = launcher.set_native(request.param == "native")
    yield request.param
    launcher.set_native(was)


def count_python_calls(monkeypatch):
    """How many calls went down the Python path, from now on."""
    calls = []
    real = Kernel._call_python

    def counted(self, *args, **kwargs):
        calls.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Kernel, "_call_python", counted)
    return calls


# ---------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------

def add_program(M, N, dtype="float32"):
    @T.prim_func
    def add(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=1) as bx:
            for i, j in T.Parallel(M, N):
                C[i, j] = A[i, j] + B[i, j]

    return add


def scalars_program():
    """Out[k] = the k-th scalar, as float64: one scalar of each kind."""
    @T.prim_func
    def scalars(X: T.Tensor((2,), "float32"), i8: T.int8, i16: T.int16, i32: T.int32,
                i64: T.int64, u8: T.uint8, u32: T.uint32, flag: T.bool, f: T.float32,
                d: T.float64, Out: T.Tensor((9,), "float64")):
        with T.Kernel(1, threads=1) as bx:
            Out[0] = T.Cast("float64", i8)
            Out[1] = T.Cast("float64", i16)
            Out[2] = T.Cast("float64", i32)
            Out[3] = T.Cast("float64", i64)
            Out[4] = T.Cast("float64", u8)
            Out[5] = T.Cast("float64", u32)
            Out[6] = T.if_then_else(flag, 1.0, 0.0)
            Out[7] = T.Cast("float64", f)
            Out[8] = d + T.Cast("float64", X[0])

    return scalars


def dynamic_program(N=8):
    """Y = X * scale + n, two outputs (Y and the row sums R), any number of
    rows m; the grid is m rows."""
    m = T.dynamic("m")

    @T.prim_func
    def dyn(X: T.Tensor((m, N), "float32"), scale: T.float32, Y: T.Tensor((m, N), "float32"),
            R: T.Tensor((m,), "float32")):
        with T.Kernel(m, threads=1) as bx:
            acc = T.alloc_var(dtype="float32")
            acc = 0.0
            for j in T.serial(N):
                Y[bx, j] = X[bx, j] * scale
                acc += X[bx, j]
            R[bx] = acc

    return dyn


def half_program(n=16):
    """Writes only the first half of its output (the rest stays poisoned)."""
    @T.prim_func
    def half(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(n // 2):
                Y[i] = X[i]

    return half


def inplace_program(n=32):
    @T.prim_func
    def inplace(X: T.Tensor((n,), "int32"), k: T.int32):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(n):
                X[i] = X[i] + k

    return inplace


@pytest.fixture(scope="module")
def add_kernel():
    return tl.compile(add_program(4, 6), out_idx=[2], target="cpu")


# ---------------------------------------------------------------------------
# Results: both paths
# ---------------------------------------------------------------------------

def test_results_and_output_types(path, add_kernel, rng, monkeypatch):
    a, b = rng.standard_normal((2, 4, 6), dtype=np.float32)
    calls = count_python_calls(monkeypatch)
    out = add_kernel(a, b)  # NumPy in, NumPy out
    assert type(out) is np.ndarray and out.dtype == np.float32
    np.testing.assert_array_equal(out, a + b)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    out = add_kernel(ta, tb)  # torch in, torch out
    assert type(out) is torch.Tensor and out.dtype == torch.float32
    torch.testing.assert_close(out, ta + tb, rtol=0, atol=0)
    # Parameters are tensors; a view that is contiguous is fine.
    w = torch.nn.Parameter(ta.clone())
    torch.testing.assert_close(add_kernel(w, tb[:, :]), ta + tb, rtol=0, atol=0)
    assert add_kernel._native_state() == ("native" if path == "native" else
                                          add_kernel._native_state())
    if path == "native":
        assert calls == []  # every call took the fast path
    else:
        assert len(calls) == 3


def test_every_scalar_kind(path, rng):
    k = tl.compile(scalars_program(), out_idx=[10], target="cpu")
    x = rng.standard_normal(2, dtype=np.float32)
    for values in ([-128, -32768, -2 ** 31, -2 ** 63, 0, 0, False, 1.5, 2.25],
                   [127, 32767, 2 ** 31 - 1, 2 ** 63 - 1, 255, 2 ** 32 - 1, True, -3, 7],
                   [5, -6, 7, -8, 9, 10, 1, 0.1, -1e300]):
        out = k(x, *values)
        want = [float(v) for v in values]
        want[7] = float(np.float32(values[7]))  # float32 rounds
        want[8] = float(values[8]) + float(x[0])
        assert out.tolist() == want


def test_symbolic_sizes_several_outputs_and_the_grid(path, rng):
    k = tl.compile(dynamic_program(), out_idx=[2, 3], target="cpu")
    for m in (1, 3, 17):
        x = torch.from_numpy(rng.standard_normal((m, 8), dtype=np.float32))
        y, r = k(x, 2.5)
        assert y.shape == (m, 8) and r.shape == (m,)
        torch.testing.assert_close(y, x * 2.5)
        torch.testing.assert_close(r, x.sum(1), rtol=1e-5, atol=1e-5)
    y, r = k(np.zeros((0, 8), np.float32), 1.0)  # no rows: an empty grid
    assert y.shape == (0, 8) and r.shape == (0,)


def test_outputs_are_poisoned_on_the_cpu(path, rng):
    k = tl.compile(half_program(), out_idx=[1], target="cpu")
    x = rng.standard_normal(16, dtype=np.float32)
    for arg in (x, torch.from_numpy(x)):
        y = np.asarray(k(arg))
        np.testing.assert_array_equal(y[:8], x[:8])
        assert np.isnan(y[8:]).all()


def test_no_outputs_and_in_place_writes(path, rng):
    k = tl.compile(inplace_program(), target="cpu")
    x = rng.integers(-100, 100, 32).astype(np.int32)
    want = x + 7
    assert k(x, 7) is None
    np.testing.assert_array_equal(x, want)
    t = torch.from_numpy(want.copy())
    k(t, -7)
    np.testing.assert_array_equal(t.numpy(), want - 7)


# ---------------------------------------------------------------------------
# Errors: the same on both paths, raised before anything runs
# ---------------------------------------------------------------------------

BAD_CALLS = [
    (lambda a, b: (a,), TypeError, r"^kernel 'add' takes 2 argument\(s\) \(A, B\), got 1$"),
    (lambda a, b: (a.double(), b), TypeError,
     r"^argument 'A' of kernel 'add' must have dtype float32, got float64$"),
    (lambda a, b: (a, b.numpy().astype(np.int32)), TypeError,
     r"^argument 'B' of kernel 'add' must have dtype float32, got int32$"),
    (lambda a, b: (a, b[:2]), ValueError,
     r"^argument 'B' of kernel 'add' must have shape \(4, 6\), got \(2, 6\)$"),
    (lambda a, b: (a.reshape(24), b), ValueError,
     r"^argument 'A' of kernel 'add' must have rank 2 \(shape \(4, 6\)\), got rank 1"),
    (lambda a, b: (a, torch.empty(6, 4).t()), ValueError,
     r"^argument 'B' of kernel 'add' must be contiguous"),
    (lambda a, b: (a, torch.empty(4, 6, device="meta")), ValueError,
     r"^argument 'B' of kernel 'add' is on meta, but the kernel was compiled for the CPU"),
    (lambda a, b: (a, [1.0] * 24), TypeError,
     r"^argument 'B' of kernel 'add' must be a NumPy array or a torch tensor, got list$"),
    (lambda a, b: (a, 3.0), TypeError,
     r"^argument 'B' of kernel 'add' must be a NumPy array or a torch tensor, got float$"),
]


@pytest.mark.parametrize("make, error, message", BAD_CALLS)
def test_bad_arguments_raise_the_same_errors(path, add_kernel, make, error, message):
    a, b = torch.zeros(4, 6), torch.zeros(4, 6)
    add_kernel(a, b)  # set up, and (native) a call that took the fast path
    with pytest.raises(error, match=message):
        add_kernel(*make(a, b))


def test_keyword_arguments_are_refused(path, add_kernel):
    a = torch.zeros(4, 6)
    with pytest.raises(TypeError, match=r"kernel 'add' takes its arguments by position, got "
                                        r"keyword argument\(s\) 'B'"):
        add_kernel(a, B=a)


@pytest.mark.parametrize("index, value, error, message", [
    (1, 128, ValueError, r"argument 'i8' of kernel 'scalars' = 128 does not fit in int8"),
    (2, -32769, ValueError, r"argument 'i16' .* = -32769 does not fit in int16"),
    (4, 2 ** 63, ValueError, r"argument 'i64' .* does not fit in int64"),
    (5, -1, ValueError, r"argument 'u8' of kernel 'scalars' = -1 does not fit in uint8"),
    (6, 2 ** 32, ValueError, r"argument 'u32' .* does not fit in uint32"),
    (3, 1.0, TypeError, r"argument 'i32' of kernel 'scalars' must be an integer, got float"),
    (3, True, TypeError, r"argument 'i32' of kernel 'scalars' must be an integer, got bool"),
    (8, "1", TypeError, r"argument 'f' of kernel 'scalars' must be a number, got str"),
    (8, True, TypeError, r"argument 'f' of kernel 'scalars' must be a number, got bool"),
    (7, 1.0, TypeError, r"argument 'flag' of kernel 'scalars' must be a bool, got float"),
    (9, np.zeros(1), TypeError, r"argument 'd' .* must be a scalar of type float64, got an "
                                r"array"),
])
def test_bad_scalars_raise_the_same_errors(path, index, value, error, message):
    k = tl.compile(scalars_program(), out_idx=[10], target="cpu")
    args = [np.zeros(2, np.float32), 1, 2, 3, 4, 5, 6, True, 0.5, 0.25]
    k(*args)
    args[index] = value
    with pytest.raises(error, match=message):
        k(*args)


def test_symbols_must_agree(path, rng):
    k = tl.compile(dynamic_program(), out_idx=[2, 3], target="cpu")
    with pytest.raises(ValueError, match=r"argument 'X' of kernel 'dyn' must have shape "
                                         r"\(m, 8\), got \(3, 7\)"):
        k(np.zeros((3, 7), np.float32), 1.0)


def test_what_the_fast_path_leaves_to_the_python_path_still_runs(path, add_kernel, rng,
                                                                 monkeypatch):
    """NumPy scalars and mixed NumPy and torch arguments are bound by the
    Python path, as before; so are big-endian arrays, refused there (kernels
    read the machine's byte order)."""
    a, b = rng.standard_normal((2, 4, 6), dtype=np.float32)
    calls = count_python_calls(monkeypatch)
    out = add_kernel(a, torch.from_numpy(b))  # mixed: torch out
    assert type(out) is torch.Tensor
    with pytest.raises(TypeError, match=r"argument 'A' of kernel 'add' must have dtype float32 "
                                        r"in the machine's byte order, got >f4"):
        add_kernel(a.astype(">f4"), b)
    k = tl.compile(scalars_program(), out_idx=[10], target="cpu")
    out = k(np.zeros(2, np.float32), np.int8(-3), 2, 3, 4, 5, 6, np.bool_(True),
            np.float32(0.5), 0.25)
    assert out.tolist()[:2] == [-3.0, 2.0] and out[6] == 1.0
    assert len(calls) == 3


# ---------------------------------------------------------------------------
# The native path itself
# ---------------------------------------------------------------------------

@native_only
def test_status_and_state(add_kernel):
    add_kernel(np.zeros((4, 6), np.float32), np.zeros((4, 6), np.float32))
    assert add_kernel._native_state() == "native", add_kernel._native_reason
    status = launcher.status()
    assert status["native"] and status["torch"] and status["numpy"], status


def test_bound_call_launches_on_the_arguments_given_once(path, add_kernel, rng):
    """A profiler's bound call returns the outputs it allocated once, on both
    paths, also when it is made before the kernel's first call."""
    k = copy.copy(add_kernel)  # not set up yet
    a, b = (torch.from_numpy(v) for v in rng.standard_normal((2, 4, 6), dtype=np.float32))
    bound = k.get_profiler()._launcher([a, b])
    out = bound()
    assert isinstance(out, torch.Tensor) and bound() is out  # the same output, written again
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    a.add_(1)
    bound()
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    if path == "native":
        with pytest.raises(TypeError, match="takes no arguments"):
            bound(a)


@native_only
def test_the_global_switch_leaves_no_trace_on_a_kernel(add_kernel, rng, monkeypatch):
    """A kernel set up, bound and called while `set_native(False)` is in
    effect takes the fast path once the switch is back on (the same object
    serves both)."""
    k = copy.copy(add_kernel)
    a, b = (torch.from_numpy(v) for v in rng.standard_normal((2, 4, 6), dtype=np.float32))
    was = launcher.set_native(False)
    try:
        calls = count_python_calls(monkeypatch)
        torch.testing.assert_close(k(a, b), a + b)
        torch.testing.assert_close(k.get_profiler()._launcher([a, b])(), a + b)
        assert len(calls) == 1 and k._native_bind(a, b) is None
    finally:
        launcher.set_native(was)
    calls.clear()
    torch.testing.assert_close(k(a, b), a + b)
    assert type(k.get_profiler()._launcher([a, b])).__name__ == "BoundCall"
    assert calls == [] and k._native_state() == "native", k._native_reason


@native_only
def test_device_assert_through_the_native_path(rng):
    @T.prim_func
    def checked(X: T.Tensor((8,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(8):
                T.device_assert(X[i] >= 0, "X must be non-negative")
                Y[i] = X[i] * 2.0

    k = tl.compile(checked, out_idx=[1], target="cpu")
    x = rng.random(8).astype(np.float32)
    np.testing.assert_array_equal(k(x), 2 * x)
    x[5] = -1
    with pytest.raises(tl.DeviceAssertionError, match="X must be non-negative") as info:
        k(x)
    assert info.value.block == (0, 0, 0)
    assert k._native_state() == "native"
    x[5] = 1
    np.testing.assert_array_equal(k(x), 2 * x)  # the next call runs normally


@native_only
def test_saved_kernel_takes_the_native_path(tmp_path, add_kernel, rng, monkeypatch):
    add_kernel.save(tmp_path / "add")
    loaded = tl.load(tmp_path / "add")
    a, b = rng.standard_normal((2, 4, 6), dtype=np.float32)
    calls = count_python_calls(monkeypatch)
    np.testing.assert_array_equal(loaded(a, b), a + b)
    assert loaded._native_state() == "native" and calls == []


@native_only
def test_numpy_first_then_torch(tmp_path, add_kernel):
    """A saved kernel called with NumPy in a process that has not imported
    torch takes the fast path; once torch is imported, its tensors do too."""
    add_kernel.save(tmp_path / "add")
    code = f"""
import sys
import numpy as np
import tilelang_mlir as tl
from tilelang_mlir.runtime.kernel import Kernel
k = tl.load({str(tmp_path / "add")!r})
a = np.arange(24, dtype=np.float32).reshape(4, 6)
assert (k(a, a) == 2 * a).all() and "torch" not in sys.modules
assert k._native_state() == "native", k._native_reason
import torch
t = torch.from_numpy(a)
assert torch.equal(k(t, t), 2 * t)  # the Python path, which makes a new plan
calls = []
real = Kernel._call_python
Kernel._call_python = lambda self, *args: calls.append(1) or real(self, *args)
assert torch.equal(k(t, t), 2 * t) and calls == [], calls
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stdout + result.stderr


@native_only
def test_a_torch_without_the_newer_shim_functions(add_kernel, rng, monkeypatch):
    """Where torch's shim lacks aoti_torch_is_contiguous and
    aoti_torch_get_layout, the fast path checks contiguity itself."""
    native = launcher._native
    assert launcher._configure_torch()
    fns, enums = launcher.torch_functions(torch)
    probe = torch.zeros(3, 5)

    def configure(functions):
        native.configure_torch(functions, torch.Tensor, torch.nn.Parameter, probe, probe._cdata,
                               enums, None)
        native.enable("torch", True)

    configure({k: v for k, v in fns.items()
               if k not in ("aoti_torch_is_contiguous", "aoti_torch_get_layout")})
    try:
        for t in (torch.zeros(4, 6), torch.zeros(6, 4).t(), torch.zeros(4, 1, 6)[:, 0],
                  torch.zeros(1, 4).expand(4, 4), torch.zeros(0, 3).t()):
            info = native.tensor_info(t)
            assert info[-1] == t.is_contiguous(), (t.shape, t.stride())
        a, b = (torch.from_numpy(v) for v in rng.standard_normal((2, 4, 6), dtype=np.float32))
        calls = count_python_calls(monkeypatch)
        torch.testing.assert_close(add_kernel(a, b), a + b, rtol=0, atol=0)
        assert calls == []
        with pytest.raises(ValueError, match=r"argument 'B' of kernel 'add' must be contiguous"):
            add_kernel(a, torch.zeros(6, 4).t())
    finally:
        configure(fns)


@native_only
def test_calls_from_threads(add_kernel, rng):
    """Each call builds its argument buffers on its own: concurrent calls
    (the CPU kernel runs without the GIL) do not mix arguments."""
    inputs = [tuple(torch.from_numpy(v) for v in rng.standard_normal((2, 4, 6),
                                                                      dtype=np.float32))
              for _ in range(4)]
    errors = []

    def run(a, b):
        for _ in range(200):
            if not torch.equal(add_kernel(a, b), a + b):
                errors.append("wrong result")
                return

    threads = [threading.Thread(target=run, args=ab) for ab in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@native_only
def test_copies_set_up_again(add_kernel):
    import copy

    a = torch.ones(4, 6)
    add_kernel(a, a)
    other = copy.copy(add_kernel)
    assert other._native_state() == "unset"
    torch.testing.assert_close(other(a, a), 2 * a)
    assert other._native_state() == "native"


def test_native_module_builds_from_source(tmp_path):
    """`python -m tilelang_mlir.runtime.launcher build DEST` compiles the
    module where the package did not (a source tree); it imports and reads
    tensors."""
    out = launcher.build(str(tmp_path))
    assert os.path.basename(out).startswith("_launch")
    code = ("import importlib.util, sys, torch\n"
            f"spec = importlib.util.spec_from_file_location('_launch', {out!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "print(sorted(n for n in dir(m) if not n.startswith('_')))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Launcher" in result.stdout and "JitCache" in result.stdout


# ---------------------------------------------------------------------------
# @tl.jit: calls by argument signature
# ---------------------------------------------------------------------------

def count_compiles(monkeypatch):
    from tilelang_mlir.compiler import compile as compile_module

    compiled = []
    real = compile_module.compile

    def counted(*args, **kwargs):
        compiled.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_module, "compile", counted)
    return compiled


def test_jit_eager_calls_hit_the_call_cache(path, rng, monkeypatch):
    @tl.jit(target="cpu")
    def scaled_add(A, B, factor):
        M, N = T.const("M, N")
        A: T.Tensor((M, N), T.float32)
        B: T.Tensor((M, N), T.float32)
        C = T.empty((M, N), T.float32)
        with T.Kernel(1, threads=1) as bx:
            for i, j in T.Parallel(M, N):
                C[i, j] = A[i, j] * factor + B[i, j]
        return C

    a, b = rng.standard_normal((2, 4, 6), dtype=np.float32)
    np.testing.assert_allclose(scaled_add(a, b, 2.0), 2 * a + b, rtol=1e-6)
    compiled = count_compiles(monkeypatch)
    for _ in range(3):
        np.testing.assert_allclose(scaled_add(a, b, 2.0), 2 * a + b, rtol=1e-6)
    assert compiled == [] and scaled_add._calls_size() == 1
    # Another compile-time value, another type of it, other sizes: other kernels.
    np.testing.assert_allclose(scaled_add(a, b, 3.0), 3 * a + b, rtol=1e-6)
    np.testing.assert_allclose(scaled_add(a[:2], b[:2], 2.0), 2 * a[:2] + b[:2], rtol=1e-6)
    np.testing.assert_allclose(scaled_add(a, b, 2), 2 * a + b, rtol=1e-6)
    assert len(scaled_add._kernels) == 4
    # Errors are the eager program's, as without the cache.
    with pytest.raises(ValueError, match=r"argument 'B' of 'scaled_add' must have rank 2"):
        scaled_add(a, b[0], 2.0)
    with pytest.raises(TypeError, match=r"argument 'B' .* must have dtype float32, got float64"):
        scaled_add(a, b.astype(np.float64), 2.0)
    # Keywords take the full path and agree.
    np.testing.assert_allclose(scaled_add(a, b, factor=2.0), 2 * a + b, rtol=1e-6)


@pytest.mark.parametrize("outputs", [1, 2])
def test_jit_eager_outputs_keep_their_form_on_the_call_cache(path, rng, outputs):
    """An eager function returning a tuple of outputs gets them in the same
    form from every call: the call cache gave a second call of two outputs
    as a one-element tuple holding their list (TileLang's per-token fp8
    cast example, timed after its check, unpacked two and got one)."""

    @tl.jit(target="cpu")
    def two(A):
        M, N = T.const("M, N")
        A: T.Tensor((M, N), T.float32)
        Y = T.empty((M, N), T.float32)
        Z = T.empty((M,), T.float32)
        with T.Kernel(1, threads=1) as bx:
            for i, j in T.Parallel(M, N):
                Y[i, j] = A[i, j] * 2
            for i in T.Parallel(M):
                Z[i] = A[i, 0]
        return Y, Z

    @tl.jit(target="cpu")
    def one(A):
        M, N = T.const("M, N")
        A: T.Tensor((M, N), T.float32)
        Y = T.empty((M, N), T.float32)
        with T.Kernel(1, threads=1) as bx:
            for i, j in T.Parallel(M, N):
                Y[i, j] = A[i, j] * 2
        return (Y,)

    split = two if outputs == 2 else one

    a = rng.standard_normal((4, 6), dtype=np.float32)
    first = split(a)
    for _ in range(3):
        again = split(a)
        assert type(again) is type(first) and len(again) == len(first) == outputs
        np.testing.assert_allclose(again[0], 2 * a, rtol=1e-6)
        if outputs == 2:
            np.testing.assert_allclose(again[1], a[:, 0], rtol=1e-6)
    assert split._calls_size() == 1


def test_jit_prim_func_calls_hit_the_call_cache(path, rng, monkeypatch):
    n = 16

    @tl.jit(out_idx=[1], target="cpu")
    @T.prim_func
    def negate(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(n):
                Y[i] = -X[i]

    x = rng.standard_normal(16).astype(np.float32)
    np.testing.assert_array_equal(negate(x), -x)
    compiled = count_compiles(monkeypatch)
    np.testing.assert_array_equal(negate(x), -x)
    assert compiled == []
    with pytest.raises(ValueError, match=r"argument 'X' of kernel 'negate' must have shape "
                                         r"\(16,\), got \(8,\)"):
        negate(x[:8])
    assert len(compiled) == 1  # (a miss takes the full path)
    # A closure cell holding another object: the full path decides again.
    n = 16.0  # noqa: F841 (read through the closure)
    negate(x)
    assert len(compiled) == 2


def test_jit_factory_calls_hit_the_call_cache(path, monkeypatch):
    @tl.jit(out_idx=[1], target="cpu")
    def double(n, factor):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                for i in T.serial(n):
                    B[i] = A[i] * factor

        return main

    k = double(8, 2.0)
    compiled = count_compiles(monkeypatch)
    assert double(8, 2.0) is k and compiled == []
    assert double(8, 3.0) is not k and double(8, 2) is not k and len(compiled) == 2
    assert double(n=8, factor=2.0) is k  # keywords: the full path, the same kernel


# ---------------------------------------------------------------------------
# CUDA kernels (hand-written PTX: no compiler needed on the GPU machine)
# ---------------------------------------------------------------------------

@pytest.fixture
def cuda_kernels(tmp_path):
    """test_cuda_runtime's PTX kernels, after its `gpu` checks (its
    `assemble` finds ptxas with find_ptxas, whose error names what to
    install: no skip where ptxas is missing)."""
    import test_cuda_runtime as rt

    pytest.importorskip("cuda.bindings.driver")
    rt._require_sm90()
    return rt


@pytest.mark.gpu
def test_cuda_fast_path_matches_the_python_path(cuda_kernels, tmp_path, monkeypatch):
    rt = cuda_kernels
    k = rt.axpb_kernel(tmp_path)
    x = torch.randn(1000, device="cuda")
    want = 2 * x + 1
    torch.testing.assert_close(k(x, 2.0, 1.0), want)  # the Python path sets up
    calls = count_python_calls(monkeypatch)
    for n in (1, 127, 128, 4097):
        x = torch.randn(n, device="cuda")
        torch.testing.assert_close(k(x, -1.5, 0.25), -1.5 * x + 0.25)
    assert k(torch.empty(0, device="cuda"), 1.0, 2.0).shape == (0,)  # an empty grid
    if launcher.available():
        assert k._native_state() == "native", k._native_reason
        assert k._native_contexts() == 1 and calls == []
    was = launcher.set_native(False)
    try:
        torch.testing.assert_close(k(x, -1.5, 0.25), -1.5 * x + 0.25)
    finally:
        launcher.set_native(was)


@pytest.mark.gpu
@pytest.mark.parametrize("on", [True, False])
def test_cuda_errors_are_the_same_on_both_paths(cuda_kernels, tmp_path, on):
    rt = cuda_kernels
    k = rt.axpb_kernel(tmp_path)
    x = torch.randn(64, device="cuda")
    k(x, 1.0, 0.0)
    was = launcher.set_native(on)
    try:
        with pytest.raises(TypeError, match=r"^argument 'x' of kernel 'axpb' must have dtype "
                                            r"float32, got float64$"):
            k(x.double(), 1.0, 0.0)
        with pytest.raises(ValueError, match=r"^argument 'x' of kernel 'axpb' is on cpu, but the "
                                             r"kernel runs on the GPU; move it with .cuda\(\)$"):
            k(x.cpu(), 1.0, 0.0)
        with pytest.raises(ValueError, match=r"argument 'x' of kernel 'axpb' must be contiguous"):
            k(torch.randn(64, 2, device="cuda")[:, 0], 1.0, 0.0)
        with pytest.raises(ValueError, match=r"argument 'x' of kernel 'axpb' is a NumPy array, "
                                             r"but the kernel runs on the GPU"):
            k(np.zeros(64, np.float32), 1.0, 0.0)
        with pytest.raises(TypeError, match=r"argument 'a' of kernel 'axpb' must be a number, "
                                            r"got str"):
            k(x, "1", 0.0)
    finally:
        launcher.set_native(was)


@pytest.mark.gpu
def test_cuda_every_scalar_type_and_symbolic_grid_on_the_fast_path(cuda_kernels, tmp_path,
                                                                   monkeypatch):
    rt = cuda_kernels
    k = rt.scalars_kernel(tmp_path / "scalars")
    values = [-100, -30000, -2_000_000_000, -(2 ** 40) + 3, 200, True, 1.5, math.pi]
    k(*values)
    t = rt.transpose_kernel(tmp_path / "transpose")
    t(torch.randn(3, 5, device="cuda"))
    calls = count_python_calls(monkeypatch)
    for values in ([-128, -32768, -2 ** 31, -2 ** 63, 0, False, -0.5, 1e300],
                   [127, 32767, 2 ** 31 - 1, 2 ** 63 - 1, 255, True, 3, -7]):
        out = k(*values).cpu().tolist()
        want = [float(v) for v in values]
        want[6] = float(np.float32(values[6]))
        assert out == want
    for M, N in ((1, 1), (100, 70), (33, 257)):
        A = torch.randn(M, N, device="cuda")
        torch.testing.assert_close(t(A), A.T.contiguous(), rtol=0, atol=0)
    if launcher.available():
        assert calls == []


@pytest.mark.gpu
def test_cuda_bound_call_and_graph_capture(cuda_kernels, tmp_path):
    rt = cuda_kernels
    k = rt.axpb_kernel(tmp_path)
    x = torch.randn(4096, device="cuda")
    bound = k.get_profiler()._launcher([x, 3.0, -1.0])
    y = bound()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 3 * x - 1)
    # A bound call launches on the stream current at each call: capture it.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph):
            bound()
            z = k(x, 2.0, 0.0)
    torch.cuda.current_stream().wait_stream(side)
    x.copy_(torch.randn(4096, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 3 * x - 1)
    torch.testing.assert_close(z, 2 * x)


@pytest.mark.gpu
def test_cuda_program_of_several_kernels(cuda_kernels, tmp_path):
    """A `Sequence` (a program of several T.Kernels) launches each part in
    order on the same arguments, on both paths."""
    from tilelang_mlir.runtime.kernel import Sequence

    rt = cuda_kernels
    first = rt.axpb_kernel(tmp_path / "a")
    second = rt.axpb_kernel(tmp_path / "b")
    k = Kernel(first.artifact, Sequence([first._executable, second._executable]),
               parts=[first, second])
    x = torch.randn(300, device="cuda")
    for on in (True, False):
        was = launcher.set_native(on)
        try:
            for _ in range(3):
                torch.testing.assert_close(k(x, 0.5, 2.0), 0.5 * x + 2)
        finally:
            launcher.set_native(was)
    if launcher.available():
        assert k._native_state() == "native", k._native_reason


# ---------------------------------------------------------------------------
# The CUDA fast path with the driver simulated (runs here, without a GPU)
# ---------------------------------------------------------------------------

class _LaunchConfig(ctypes.Structure):
    """The driver's CUlaunchConfig (cuda.h)."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint)]


@pytest.fixture
def simulated_cuda(monkeypatch):
    """The native CUDA path against a driver of Python callbacks: CPU
    tensors stand for the device's (the shim's CUDA device type is set to
    the CPU's), the current context is CTX, and each cuLaunchKernelEx is
    recorded (grid, block, shared bytes, stream, function and the bytes each
    kernel parameter points at) and answers `state["code"]`."""
    if not launcher.available():
        pytest.skip("the native launcher is not built here")
    native = launcher._native
    assert launcher._configure_torch()
    fns, enums = launcher.torch_functions(torch)
    state = {"code": 0, "launches": [], "stream": 0x5EED}
    ctx = 0xC0DE

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
    def get_current(out):
        out[0] = ctx
        return 0

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_LaunchConfig), ctypes.c_void_p,
                      ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
    def launch(config, fn, params, extra):
        c = config.contents
        state["launches"].append({
            "grid": tuple(c.grid), "block": tuple(c.block), "shared": c.shared,
            "stream": c.stream, "fn": fn, "extra": extra, "params": params})
        state["record"](params)
        return state["code"]

    def configure(cuda_type, raw_stream):
        probe = torch.arange(15, dtype=torch.float32).reshape(3, 5)
        native.configure_torch({k: v for k, v in fns.items()
                                if k != "aoti_torch_get_current_cuda_stream"},
                               torch.Tensor, torch.nn.Parameter, probe, probe._cdata,
                               dict(enums, cuda=cuda_type), raw_stream)
        native.enable("torch", True)

    configure(enums["cpu"], lambda device: state["stream"])
    native.configure_cuda({"cuCtxGetCurrent": ctypes.cast(get_current, ctypes.c_void_p).value,
                           "cuLaunchKernelEx": ctypes.cast(launch, ctypes.c_void_p).value})
    monkeypatch.setattr(launcher, "_configure_cuda", lambda: True)
    state["ctx"] = ctx
    state["keep"] = (get_current, launch)
    yield state
    native.enable("cuda", False)
    configure(enums["cuda"], getattr(torch._C, "_cuda_getCurrentRawStream", None))


@pytest.fixture
def simulated_loading(simulated_cuda, monkeypatch):
    """The simulated driver behind `Kernel._native_prepare` too: the current
    context is the simulated one (on device -1, as CPU tensors say) and each
    part's function loads as 0xF00D."""
    from tilelang_mlir.runtime import cuda

    state = simulated_cuda
    monkeypatch.setattr(cuda, "current_context", lambda name="kernel": (state["ctx"], -1))

    def load(self, ctx, device):
        self._handles[int(ctx)] = 0xF00D
        return 0xF00D

    monkeypatch.setattr(cuda.CUDAExecutable, "_function", load)
    state["record"] = lambda params: None
    return state


def test_simulated_cuda_bound_before_the_first_call(simulated_loading, monkeypatch):
    """A profiler's bound call made on a kernel that was never called (as
    do_bench and launch_overhead.py's pre-bound case make it) is the native
    one, and the kernel's calls after it take the fast path: the context it
    hands over is kept by the kernel's plan, made first. A bound call made
    while `set_native(False)` is in effect changes nothing of that."""
    from tilelang_mlir.runtime.loader import make_kernel

    state = simulated_loading
    params = [_tensor("A", (8, 16)), _tensor("B", (8, 16)), _tensor("C", (8, 16))]
    k = make_kernel("add", params, [2], "cuda:sm_90a", cubin=b"\x7fELF fake", entry="add",
                    block=[128], grid=[{"const": 1}], shared_bytes=0)
    a, b = torch.randn(8, 16), torch.randn(8, 16)
    assert k._native_state() == "unset"
    bound = k.get_profiler()._launcher([a, b])
    assert type(bound).__name__ == "BoundCall", k._native_reason
    c = bound()
    assert c.shape == (8, 16) and bound() is c
    assert state["launches"][-1]["fn"] == 0xF00D and k._native_contexts() == 1
    calls = count_python_calls(monkeypatch)
    was = launcher.set_native(False)
    try:
        assert k._native_bind(a, b) is None
        assert k._native_prepare()  # (the plan and its context are kept)
    finally:
        launcher.set_native(was)
    launches = len(state["launches"])
    for _ in range(3):
        assert k(a, b).shape == (8, 16)
    assert calls == [] and len(state["launches"]) == launches + 3
    # A plan made again (torch imported after the first call) gets the
    # context again.
    k._native_setup()
    assert k._native_contexts() == 0
    assert type(k.get_profiler()._launcher([a, b])).__name__ == "BoundCall"
    k(a, b)
    assert calls == [] and k._native_contexts() == 1


def _simulated_kernel(state, name, params, out_idx, grid, block=(128,), shared=0, maps=(),
                      words=0, sms=0):
    """A CUDA kernel of a fake cubin, set up on the fast path with the
    simulated context registered; each launch records its first `words`
    parameter words after `maps` 128-byte tensor maps."""
    from tilelang_mlir.runtime.loader import make_kernel

    k = make_kernel(name, params, out_idx, "cuda:sm_90a", cubin=b"\x7fELF fake", entry=name,
                    block=list(block), grid=grid, shared_bytes=shared, tensormaps=list(maps))
    k._native_setup()
    assert k._native_state() == "native", k._native_reason
    k._native_add_context(state["ctx"], -1, sms, (0xF00D,) * len(k._executables()))

    def record(params):
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        launch = state["launches"][-1]
        launch["maps"] = [ctypes.string_at(slots[i], 128) for i in range(len(maps))]
        launch["map_addresses"] = [slots[i] for i in range(len(maps))]
        launch["words"] = [ctypes.c_uint64.from_address(slots[len(maps) + i]).value
                           for i in range(words)]

    state["record"] = record
    return k


def _tensor(name, shape, dtype="float32"):
    from tilelang_mlir.base import dtypes as dt
    from tilelang_mlir.base.signature import Param

    return Param(name, "tensor", dt.as_dtype(dtype), tuple(shape))


def _scalar(name, dtype):
    from tilelang_mlir.base import dtypes as dt
    from tilelang_mlir.base.signature import Param

    return Param(name, "scalar", dt.as_dtype(dtype))


def test_simulated_cuda_launch_follows_the_kernel_abi(simulated_cuda, monkeypatch):
    state = simulated_cuda
    grid = [{"op": "ceildiv", "args": [{"sym": "n"}, {"const": 128}]},
            {"scalar": "k"}, {"op": "max", "args": [{"const": 1}, {"sym": "m"}]}]
    params = [_tensor("x", ("m", "n")), _tensor("y", ("m", "n")), _scalar("k", "int32"),
              _scalar("a", "float32"), _scalar("flag", "bool"), _scalar("d", "float64")]
    k = _simulated_kernel(state, "axpb", params, [1], grid, block=(128, 2), shared=4096,
                          words=2 * 7 + 4)
    calls = count_python_calls(monkeypatch)
    x = torch.randn(3, 300)
    y = k(x, 7, 1.5, True, -2.25)
    assert y.shape == (3, 300) and y.dtype == torch.float32 and calls == []
    launch = state["launches"][-1]
    assert launch["grid"] == (3, 7, 3)
    assert launch["block"] == (128, 2, 1) and launch["shared"] == 4096
    assert launch["stream"] == state["stream"] and launch["fn"] == 0xF00D
    assert launch["extra"] is None
    words = launch["words"]
    assert words[:7] == [x.data_ptr(), x.data_ptr(), 0, 3, 300, 300, 1]
    assert words[7:14] == [y.data_ptr(), y.data_ptr(), 0, 3, 300, 300, 1]
    assert words[14] & 0xFFFFFFFF == 7
    assert ctypes.c_float.from_buffer_copy(words[15].to_bytes(8, "little")[:4]).value == 1.5
    assert words[16] & 0xFF == 1
    assert ctypes.c_double.from_buffer_copy(words[17].to_bytes(8, "little")).value == -2.25


def test_simulated_cuda_grids(simulated_cuda):
    state = simulated_cuda
    grid = [{"op": "ceildiv", "args": [{"sym": "n"}, {"const": 128}]}, {"scalar": "k"},
            {"sms": 4}]
    params = [_tensor("x", ("n",)), _scalar("k", "int64")]
    k = _simulated_kernel(state, "g", params, [], grid, sms=132)
    x = torch.zeros(1000)
    for kk, want in ((1, (8, 1, 132)), (5, (8, 5, 132))):
        k(x, kk)
        assert state["launches"][-1]["grid"] == want
    launches = len(state["launches"])
    assert k(torch.zeros(0), 3) is None  # an empty grid launches nothing
    assert k(x, 0) is None and len(state["launches"]) == launches
    # A grid the fast path cannot launch goes to the Python path (which,
    # without a GPU, says so).
    from tilelang_mlir.base.errors import NoCUDADevice

    with pytest.raises((ValueError, NoCUDADevice)):
        k(x, 70000)  # grid y over 65535
    with pytest.raises((ValueError, NoCUDADevice)):
        k(x, -1)  # a negative extent


def test_simulated_cuda_launch_failure_names_the_call(simulated_cuda):
    pytest.importorskip("cuda.bindings.driver")
    state = simulated_cuda
    k = _simulated_kernel(state, "boom", [_tensor("x", (4,))], [], [{"const": 1}])
    state["code"] = 1  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(RuntimeError, match=r"^cuLaunchKernelEx failed with "
                                           r"CUDA_ERROR_INVALID_VALUE.*kernel 'boom' with grid "
                                           r"\(1, 1, 1\), block \(128, 1, 1\), 0 bytes"):
        k(torch.zeros(4))
    bound = k.get_profiler()._launcher([torch.zeros(4)])
    with pytest.raises(RuntimeError, match=r"^cuLaunchKernelEx failed with "
                                           r"CUDA_ERROR_INVALID_VALUE"):
        bound()
    state["code"] = 0
    bound()


def test_simulated_cuda_tensor_maps_come_first_and_are_cached(simulated_cuda, monkeypatch):
    from tilelang_mlir.runtime import cuda

    state = simulated_cuda
    encoded = []

    def fake_encode(enc, what=""):
        encoded.append(enc)
        return cuda.TensorMap(bytes([len(encoded)]) * 128)

    monkeypatch.setattr(cuda, "encode_tensormap", fake_encode)
    monkeypatch.setattr(cuda, "_TENSORMAP_CACHE", {})
    maps = [{"param": 1, "box": [64, 64], "swizzle": 128}, {"param": 0, "box": [32, 64],
                                                           "swizzle": 0}]
    params = [_tensor("A", ("M", 64), "float16"), _tensor("B", ("N", 64), "float16")]
    k = _simulated_kernel(state, "copy", params, [], [{"const": 2}], maps=maps, words=14)
    a, b = torch.zeros(100, 64, dtype=torch.float16), torch.zeros(100, 64, dtype=torch.float16)
    k(a, b)
    launch = state["launches"][-1]
    assert [e.address for e in encoded] == [b.data_ptr(), a.data_ptr()]
    assert launch["maps"] == [bytes([1]) * 128, bytes([2]) * 128]
    assert all(addr % 64 == 0 for addr in launch["map_addresses"])
    assert launch["words"] == [a.data_ptr(), a.data_ptr(), 0, 100, 64, 64, 1,
                               b.data_ptr(), b.data_ptr(), 0, 100, 64, 64, 1]
    k(a, b)  # the same tensors: nothing encoded (the launcher's own cache)
    assert len(encoded) == 2 and state["launches"][-1]["maps"] == launch["maps"]
    k(a[:50], b)  # another shape of A: its map again
    assert len(encoded) == 3 and encoded[-1].global_dim == (64, 50)
    with pytest.raises(ValueError, match=r"argument 'B' of kernel 'copy' cannot be copied with "
                                         r"TMA: its address 0x[0-9a-f]+ is not 16-byte"):
        k(a, torch.zeros(100 * 64 + 1, dtype=torch.float16)[1:].view(100, 64))


def test_simulated_cuda_program_of_several_kernels_and_bound_calls(simulated_cuda):
    from tilelang_mlir.runtime.kernel import Sequence
    from tilelang_mlir.runtime.loader import make_kernel

    state = simulated_cuda
    params = [_tensor("x", ("n",)), _tensor("y", ("n",))]
    parts = [make_kernel(f"part{i}", params, [1], "cuda:sm_90a", cubin=b"\x7fELF fake",
                         entry=f"part{i}", block=[64 * (i + 1)], grid=[{"const": i + 1}],
                         shared_bytes=0) for i in range(2)]
    k = Kernel(parts[0].artifact, Sequence([p._executable for p in parts]), parts=parts)
    k._native_setup()
    assert k._native_state() == "native", k._native_reason
    k._native_add_context(state["ctx"], -1, 0, (0xA, 0xB))
    state["record"] = lambda params: None
    x = torch.zeros(10)
    y = k(x)
    assert [(l["grid"], l["block"], l["fn"]) for l in state["launches"][-2:]] == [
        ((1, 1, 1), (64, 1, 1), 0xA), ((2, 1, 1), (128, 1, 1), 0xB)]
    bound = k.get_profiler()._launcher([x])
    state["stream"] = 0xBEEF  # a bound call takes the stream current at each call
    assert bound().shape == y.shape
    assert [l["stream"] for l in state["launches"][-2:]] == [0xBEEF, 0xBEEF]
    assert [l["fn"] for l in state["launches"][-2:]] == [0xA, 0xB]


@pytest.mark.parametrize("features", [{"cooperative": True}, {"pdl": True},
                                      {"l2_hit_ratio": ((0, 0.5),)}],
                         ids=["cooperative", "pdl", "l2_window"])
def test_simulated_cuda_launch_attributes_take_the_python_path(simulated_cuda, features):
    """A kernel launched with attributes (T.sync_grid's cooperative launch,
    PDL, an L2 window) is never launched by the fast path, which would drop
    them: its calls go down the Python path (`_launch_ex`)."""
    from tilelang_mlir.base.errors import NoCUDADevice
    from tilelang_mlir.runtime.loader import make_kernel

    state = simulated_cuda
    k = make_kernel("attrs", [_tensor("x", (8,))], [], "cuda:sm_90a", cubin=b"\x7fELF fake",
                    entry="attrs", block=[128], grid=[{"const": 2}], shared_bytes=0,
                    features=features)
    k._native_setup()
    assert k._native_state() != "native"
    assert "launched with attributes" in k._native_reason
    launches = len(state["launches"])
    with pytest.raises((RuntimeError, NoCUDADevice)):  # the Python path; no GPU here
        k(torch.zeros(8))
    assert len(state["launches"]) == launches
