"""Host cost of launching a kernel: microseconds per call of ours next to a
comparable PyTorch op, issued back to back on tiny inputs (the device work is
negligible, so the host is the bound). With --profile, a cProfile breakdown
of our call path.

    python benchmarks/launch_overhead.py [--profile]
"""

import cProfile
import os
import pstats
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python"))

import kernels  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
from tilelang_mlir.runtime.cuda import NoCUDADevice  # noqa: E402
from tilelang_mlir.runtime.profiler import host_launch_us  # noqa: E402


def main():
    add = tl.compile(kernels.elementwise_add(64, 64, 32, 32), out_idx=[2], target="cuda")
    norm = tl.compile(kernels.layer_norm(16, 128, 4), out_idx=[3], target="cuda")
    if not torch.cuda.is_available():
        print("compiled; no GPU here (AOT prepare)")
        return
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    x, w, bias = torch.randn(16, 128, device="cuda"), torch.randn(128, device="cuda"), torch.randn(128, device="cuda")
    out = torch.empty_like(a)
    prebound = add.get_profiler()._launcher([a, b])  # checks and output allocation done once
    rows = [
        ("add 64x64 (3 tensors)", lambda: add(a, b), lambda: torch.add(a, b)),
        ("add, arguments pre-bound", prebound, lambda: torch.add(a, b, out=out)),
        ("layer norm (4 tensors)", lambda: norm(x, w, bias),
         lambda: torch.nn.functional.layer_norm(x, (128,), w, bias)),
    ]
    print(f"{'case':28} {'ours us':>8} {'torch us':>9}")
    for name, ours, theirs in rows:
        print(f"{name:28} {host_launch_us(ours, 2000):8.1f} {host_launch_us(theirs, 2000):9.1f}")
    if "--profile" in sys.argv:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            norm(x, w, bias)
        prof.disable()
        torch.cuda.synchronize()
        pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here (AOT prepare)")
