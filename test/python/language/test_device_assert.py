"""T.device_assert: on the CPU a failing check stops the kernel and the call
raises DeviceAssertionError with the message, the user's file and line, the
function and the block; a passing check is silent. For CUDA the PTX calls
`__assertfail` (checked without a GPU, assembled for sm_90a)."""

import inspect
import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support import ROOT
from tilelang_mlir.frontend.errors import TileLangError

NO_CACHE = {"tl.disable_cache": True}


def line_of(fn, needle: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if needle in line)


def sqrt_kernel():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                T.device_assert(X[bx * 32 + i] >= 0, "X must be non-negative")
                Y[bx * 32 + i] = T.sqrt(X[bx * 32 + i])

    return main


def test_passing_assert_is_silent(rng, capfd):
    kernel = tl.compile(sqrt_kernel(), out_idx=[1], target="cpu", pass_configs=NO_CACHE)
    assert "tile.device_assert" in kernel.mlir("tile")
    x = rng.random(64).astype(np.float32)
    np.testing.assert_allclose(kernel(x), np.sqrt(x), rtol=1e-6)
    out = capfd.readouterr()
    assert out.out == "" and out.err == ""


def test_failing_assert_raises_with_position_and_block(rng):
    program = sqrt_kernel()
    kernel = tl.compile(program, out_idx=[1], target="cpu", pass_configs=NO_CACHE)
    x = rng.random(64).astype(np.float32)
    bad = int(rng.integers(32, 64))  # in block 1
    x[bad] = -1.0
    with pytest.raises(tl.DeviceAssertionError) as info:
        kernel(x)
    e = info.value
    assert isinstance(e, AssertionError)
    line = line_of(program.fn, "X must be non-negative")
    assert e.message == "X must be non-negative"
    assert e.location.filename == __file__ and e.location.line == line
    assert e.function == "main" and e.block == (1, 0, 0)
    assert str(e).startswith(f"{__file__}:{line}: main: block (1, 0, 0): device assertion "
                             "failed: X must be non-negative")
    # The stopped call left nothing behind: the next one runs normally.
    x[bad] = 4.0
    assert kernel(x)[bad] == 2.0


def test_default_message_is_the_source_line_and_constants():
    @T.prim_func
    def main(X: T.Tensor((8,), "int32"), n: T.int32):
        with T.Kernel(1, threads=32) as bx:
            T.device_assert(True, "always holds")  # no op at all
            T.device_assert(n < 9)
            if n == 7:
                T.device_assert(False, "n is never 7")
            X[0] = n

    kernel = tl.compile(main, target="cpu", pass_configs=NO_CACHE)
    text = kernel.mlir("tile")
    assert "always holds" not in text
    assert text.count("tile.device_assert") == 2
    x = np.zeros(8, np.int32)
    kernel(x, 3)
    assert x[0] == 3
    with pytest.raises(tl.DeviceAssertionError, match=r"failed: T.device_assert\(n < 9\)$"):
        kernel(x, 9)
    with pytest.raises(tl.DeviceAssertionError, match="n is never 7"):
        kernel(x, 7)


def test_device_assert_errors():
    @T.prim_func
    def not_a_string(X: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            T.device_assert(X[0] > 0, 42)

    with pytest.raises(TileLangError, match="T.device_assert takes a message string, got"):
        tl.compile(not_a_string, target="cpu")

    @T.prim_func
    def not_a_condition(X: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            T.device_assert("yes", "a string is no condition")

    with pytest.raises(TileLangError, match="T.device_assert takes a condition, got"):
        tl.compile(not_a_condition, target="cpu")

    @T.prim_func
    def outside(X: T.Tensor((8,), "float32")):
        T.device_assert(X[0] > 0, "outside")

    with pytest.raises(TileLangError, match=r"T.device_assert must be inside `with T.Kernel"):
        tl.compile(outside, target="cpu")


def test_cuda_ptx_calls_assertfail():
    program = sqrt_kernel()
    kernel = tl.compile(program, out_idx=[1], target="cuda:sm_90a", pass_configs=NO_CACHE)
    ptx = kernel.get_source()
    assert ".extern .func __assertfail" in ptx
    assert re.search(r"call(\.uni)?\s*(\(\S*\),\s*)?__assertfail", ptx), "no call of __assertfail"
    # The strings it is called with: message, file, function.
    strings = {}
    for name, body in re.findall(r"\.global \.align 1 \.b8 (__tile_assert_\w+)\[\d+\] = "
                                 r"\{([\d, ]+)\}", ptx):
        strings[name] = bytes(int(b) for b in body.split(",")).decode()
    assert sorted(strings.values()) == sorted(["X must be non-negative", __file__, "main"])
    assert kernel.cubin[:4] == b"\x7fELF"  # ptxas resolved the system call


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["pass", "fail"])
def test_cuda_device_assert_stops_the_kernel(mode):
    """On the GPU: a passing assert is silent and the result right; a failing
    one stops the kernel, prints the message with its position, and the
    launch (or the next synchronization) raises in the child process."""
    import os
    import subprocess
    import sys

    child = os.path.join(ROOT, "test", "python", "support", "assert_child.py")
    proc = subprocess.run([sys.executable, child, mode], capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    if "compiled" in proc.stdout:  # AOT prepare: no GPU here
        return
    if mode == "pass":
        assert proc.returncode == 0 and "ok" in proc.stdout, out
        return
    assert proc.returncode != 0, out
    assert "X must be non-negative" in out, out
    assert "assert_child.py" in out, out
