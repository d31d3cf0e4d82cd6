"""Basic kernels on an NVIDIA GPU: ours next to PyTorch, same inputs.

GEMM 4096^3 (float16 and bfloat16 in, float32 accumulate, 3-stage cp.async
pipeline, mma.sync), row softmax and layer norm. Every kernel is checked
against PyTorch first (fresh random inputs), then timed on the device with
CUDA events around CUDA-graph replays (median, L2 flushed before each), and
the host cost of one call is measured apart. Prints one table.

    python benchmarks/basic_kernels.py            # on a GPU machine
    TILELANG_MLIR_AOT_PREPARE=1 ...               # compile only (see scripts/gpu_check.sh)
"""

import os

import numpy as np
import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels import programs as kernels
from tilelang_mlir.runtime.cuda import NoCUDADevice
from tilelang_mlir.runtime.profiler import bench_cuda, host_launch_us


def bench(fn):
    """Median device milliseconds of fn(): CUDA events around replays of a
    CUDA graph of it, L2 flushed before each (host launch cost excluded)."""
    return float(np.median(bench_cuda(fn, warmup=10, rep=50, cuda_graph=True)))


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
    launch = {}
    for name, kernel in compiled.items():
        if name.startswith("gemm"):
            dt = torch.float16 if "fp16" in name else torch.bfloat16
            a = torch.randn(n, n, device="cuda", generator=g).to(dt)
            b = torch.randn(n, n, device="cuda", generator=g).to(dt)
            c = kernel(a, b)
            err = rel(c, a.float() @ b.float())
            ours = bench(lambda: kernel(a, b))
            theirs = bench(lambda: torch.matmul(a, b))
            launch[name] = (host_launch_us(lambda: kernel(a, b)), host_launch_us(lambda: torch.matmul(a, b)))
            flop = 2 * n ** 3
            rows.append((name, err, ours, theirs, f"{flop / ours / 1e9:.0f} / {flop / theirs / 1e9:.0f} TFLOP/s"))
        elif name.startswith("softmax"):
            x = torch.randn(8192, 1024, device="cuda", generator=g) * 4
            err = rel(kernel(x), torch.softmax(x.double(), 1))
            ours = bench(lambda: kernel(x))
            theirs = bench(lambda: torch.softmax(x, 1))
            launch[name] = (host_launch_us(lambda: kernel(x)), host_launch_us(lambda: torch.softmax(x, 1)))
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
            launch[name] = (host_launch_us(lambda: kernel(x, w, bias)),
                            host_launch_us(lambda: torch.nn.functional.layer_norm(x, (1024,), w, bias, eps=1e-5)))
            gb = 2 * x.numel() * 4
            rows.append((name, err, ours, theirs, f"{gb / ours / 1e6:.0f} / {gb / theirs / 1e6:.0f} GB/s"))
    print("device time: median of CUDA-graph replays, L2 flushed; launch: host microseconds per call")
    print(f"{'case':28} {'rel err':>9} {'ours ms':>9} {'torch ms':>9}  {'ours / torch':26} launch us ours/torch")
    for name, err, ours, theirs, rate in rows:
        print(f"{name:28} {err:9.2e} {ours:9.3f} {theirs:9.3f}  {rate:26} {launch[name][0]:.0f} / {launch[name][1]:.0f}")


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here (AOT prepare)")
