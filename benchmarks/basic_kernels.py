"""Basic kernels on an NVIDIA GPU: ours next to PyTorch, same inputs.

GEMM 4096^3 (float16 and bfloat16 in, float32 accumulate, 3-stage cp.async
pipeline, mma.sync), row softmax and layer norm. Every kernel is checked
against PyTorch first (fresh random inputs), then timed with CUDA events
(median, L2 flushed). Prints one table.

    python benchmarks/basic_kernels.py            # on a GPU machine
    TILELANG_MLIR_AOT_PREPARE=1 ...               # compile only (see scripts/gpu_check.sh)
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python"))

import kernels  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
from tilelang_mlir.runtime.cuda import NoCUDADevice  # noqa: E402


def bench(fn, warmup=10, rep=50):
    """Median milliseconds of fn() with CUDA events, L2 flushed before each."""
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rep):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def rel(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm()).item()


def main():
    rows = []
    n = 4096
    prepared = []
    cases = [("gemm fp16 4096^3", kernels.matmul(n, n, n, 128, 128, 32, dtype="float16", num_stages=3), [2]),
             ("gemm bf16 4096^3", kernels.matmul(n, n, n, 128, 128, 32, dtype="bfloat16",
                                                 out_dtype="bfloat16", num_stages=3), [2]),
             ("softmax 8192x1024 fp32", kernels.softmax(8192, 1024, 4), [1]),
             ("layernorm 8192x1024 fp32", kernels.layer_norm(8192, 1024, 4), [3])]
    compiled = {name: tl.compile(prog, out_idx=out, target="cuda") for name, prog, out in cases}
    try:
        torch.cuda.init()
    except Exception:
        pass
    if not torch.cuda.is_available():
        print("compiled", len(compiled), "kernels; no GPU here (AOT prepare)")
        return
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    for name, kernel in compiled.items():
        if name.startswith("gemm"):
            dt = torch.float16 if "fp16" in name else torch.bfloat16
            a = torch.randn(n, n, device="cuda", generator=g).to(dt)
            b = torch.randn(n, n, device="cuda", generator=g).to(dt)
            c = kernel(a, b)
            err = rel(c, a.float() @ b.float())
            ours = bench(lambda: kernel(a, b))
            theirs = bench(lambda: torch.matmul(a, b))
            flop = 2 * n ** 3
            rows.append((name, err, ours, theirs, f"{flop / ours / 1e9:.0f} / {flop / theirs / 1e9:.0f} TFLOP/s"))
        elif name.startswith("softmax"):
            x = torch.randn(8192, 1024, device="cuda", generator=g) * 4
            err = rel(kernel(x), torch.softmax(x.double(), 1))
            ours = bench(lambda: kernel(x))
            theirs = bench(lambda: torch.softmax(x, 1))
            gb = 2 * x.numel() * 4
            rows.append((name, err, ours, theirs, f"{gb / ours / 1e6:.0f} / {gb / theirs / 1e6:.0f} GB/s"))
        else:
            x = torch.randn(8192, 1024, device="cuda", generator=g)
            w = torch.randn(1024, device="cuda", generator=g)
            bias = torch.randn(1024, device="cuda", generator=g)
            ref = torch.nn.functional.layer_norm(x.double(), (1024,), w.double(), bias.double(), eps=1e-5)
            err = rel(kernel(x, w, bias), ref)
            ours = bench(lambda: kernel(x, w, bias))
            theirs = bench(lambda: torch.nn.functional.layer_norm(x, (1024,), w, bias, eps=1e-5))
            gb = 2 * x.numel() * 4
            rows.append((name, err, ours, theirs, f"{gb / ours / 1e6:.0f} / {gb / theirs / 1e6:.0f} GB/s"))
    print(f"{'case':28} {'rel err':>9} {'ours ms':>9} {'torch ms':>9}  ours / torch")
    for name, err, ours, theirs, rate in rows:
        print(f"{name:28} {err:9.2e} {ours:9.3f} {theirs:9.3f}  {rate}")


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here (AOT prepare)")
