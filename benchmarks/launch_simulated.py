"""The host cost of the native CUDA launch path without a GPU: nanoseconds
per call of launch.cpp's CUDA path against a stub driver.

    python benchmarks/launch_simulated.py [--calls N] [--rounds R]

The stub is a small C library compiled here (it needs `cc`): cuCtxGetCurrent
answers one context, cuLaunchKernelEx reads the first parameter and returns
success, and the current stream comes from a C function standing for the
torch shim's aoti_torch_get_current_cuda_stream. CPU tensors stand for the
device's (the shim's CUDA device type is set to the CPU's), so an output is
allocated by torch's CPU allocator, not the CUDA caching allocator. What is
left is our own work per call (argument reading through the shim, checks,
the parameter buffer, the Python objects) plus torch's allocation through
aoti_torch_empty_strided: the part of `launch_overhead.py`'s GPU numbers
that is not the driver's. Each number is the minimum (and the median) over
`--rounds` rounds of `--calls` calls (the minimum is the steadier one on a
shared machine).
"""

import argparse
import ctypes
import os
import statistics
import subprocess
import tempfile
import time

import torch

from tilelang_mlir.base import dtypes as dt
from tilelang_mlir.base.signature import Param
from tilelang_mlir.runtime import launcher
from tilelang_mlir.runtime.loader import make_kernel

STUB = r"""
#include <stdint.h>
static volatile uint64_t sink;
int cuCtxGetCurrent(void **out) { *out = (void *)0xC0DE; return 0; }
int cuLaunchKernelEx(const void *config, void *fn, void **params, void **extra) {
  sink += *(uint64_t *)params[0];
  return 0;
}
int aoti_torch_get_current_cuda_stream(int32_t device, void **out) {
  *out = (void *)0x5EED;
  return 0;
}
"""
CTX, FUNCTION = 0xC0DE, 0xF00D


def stub_driver(folder: str) -> ctypes.CDLL:
    src, lib = os.path.join(folder, "stub.c"), os.path.join(folder, "libstub.so")
    with open(src, "w") as f:
        f.write(STUB)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", src, "-o", lib], check=True)
    return ctypes.CDLL(lib)


def simulate(stub: ctypes.CDLL) -> None:
    """Points the native module at the stub driver (the CUDA device type set
    to the CPU's)."""
    native = launcher._native
    if native is None or not launcher._configure_torch():
        raise SystemExit(f"the native launcher cannot serve torch here: {launcher.status()}")

    def address(name):
        return ctypes.cast(getattr(stub, name), ctypes.c_void_p).value

    fns, enums = launcher.torch_functions(torch)
    fns = dict(fns, aoti_torch_get_current_cuda_stream=address(
        "aoti_torch_get_current_cuda_stream"))
    probe = torch.arange(15, dtype=torch.float32).reshape(3, 5)
    native.configure_torch(fns, torch.Tensor, torch.nn.Parameter, probe, probe._cdata,
                           dict(enums, cuda=enums["cpu"]), None)
    native.enable("torch", True)
    native.configure_cuda({"cuCtxGetCurrent": address("cuCtxGetCurrent"),
                           "cuLaunchKernelEx": address("cuLaunchKernelEx")})
    launcher._configure_cuda = lambda: True


def tensor(name, shape):
    return Param(name, "tensor", dt.as_dtype("float32"), tuple(shape))


def kernel(name, params, out_idx, grid):
    """A CUDA kernel of a fake cubin on the fast path, the stub's context
    registered."""
    k = make_kernel(name, params, out_idx, "cuda:sm_90a", cubin=b"\x7fELF fake", entry=name,
                    block=[128], grid=grid, shared_bytes=0)
    k._native_setup()
    assert k._native_state() == "native", k._native_reason
    assert k._native_add_context(CTX, -1, 132, (FUNCTION,) * len(k._executables()))
    return k


def per_call_ns(fn, calls: int, rounds: int):
    for _ in range(max(100, calls // 10)):
        fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter_ns() - t0) / calls)
    return min(times), statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        stub = stub_driver(folder)
        simulate(stub)
        m, n, tiles = 64, 64, [{"const": 2}, {"const": 2}]
        inc = kernel("inc", [tensor("X", (m * n,))], [], [{"const": 32}])
        add = kernel("add", [tensor(c, (m, n)) for c in "ABC"], [2], tiles)
        dyn = kernel("dyn", [tensor(c, ("m", n)) for c in "ABC"], [2],
                     [{"const": 2}, {"op": "ceildiv", "args": [{"sym": "m"}, {"const": 32}]}])
        sum8 = kernel("sum8", [tensor(c, (m, n)) for c in "ABCDEFGO"], [7], tiles)
        scale = kernel("scale", [tensor("X", (m, n)), Param("alpha", "scalar",
                                                            dt.as_dtype("float32")),
                                 tensor("Y", (m, n))], [2], tiles)
        norm = kernel("norm", [tensor("X", (16, 128)), tensor("W", (128,)),
                               tensor("B", (128,)), tensor("Y", (16, 128))], [3],
                      [{"const": 4}])
        a, b, flat = torch.randn(m, n), torch.randn(m, n), torch.randn(m * n)
        seven = [torch.randn(m, n) for _ in range(7)]
        x, w, bias = torch.randn(16, 128), torch.randn(128), torch.randn(128)
        bound = add.get_profiler()._launcher([a, b])
        assert type(bound).__name__ == "BoundCall"
        cases = [
            ("1 tensor (x += 1, in place)", lambda: inc(flat)),
            ("3 tensors: add, checks + output", lambda: add(a, b)),
            ("3 tensors: add, pre-bound", bound),
            ("8 tensors: sum of 7 + output", lambda: sum8(*seven)),
            (f"dynamic size: add (m x {n})", lambda: dyn(a, b)),
            ("scalar argument: y = alpha x", lambda: scale(a, 2.5)),
            ("layer norm (4 tensors)", lambda: norm(x, w, bias)),
            ("(torch.empty_like(a), CPU)", lambda: torch.empty_like(a)),
            ("(an empty Python lambda)", lambda: None),
        ]
        print(f"ns per call against a stub driver, min (median) of {args.rounds} x "
              f"{args.calls} calls; torch {torch.__version__}")
        for name, fn in cases:
            low, mid = per_call_ns(fn, args.calls, args.rounds)
            print(f"{name:36} {low:7.0f} ({mid:.0f})", flush=True)


if __name__ == "__main__":
    main()
