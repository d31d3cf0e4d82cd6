"""One launch of our 8192^3 GEMM and of cuBLAS's, for a profiler to read
(ncu on the GPU machine): the kernels' hardware counters side by side.

    ncu --clock-control none --metrics <list> python3 benchmarks/profile_gemm.py [config]

config: block_M,block_N,block_K,threads,stages (default 128,256,64,256,4).
Compiles only where no GPU is present (AOT prepare).
"""

import sys

import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels import gemm
from tilelang_mlir.runtime.cuda import NoCUDADevice


def main():
    cfg = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "128,256,64,256,4").split(",")]
    bm, bn, bk, threads, stages = cfg
    n = 8192
    kernel = tl.compile(gemm.matmul(n, n, n, bm, bn, bk, num_stages=stages, threads=threads),
                        out_idx=[2], target="cuda")
    if not torch.cuda.is_available():
        print("compiled; no GPU here")
        return
    a = torch.randn(n, n, device="cuda").half()
    b = torch.randn(n, n, device="cuda").half()
    for _ in range(2):
        c = kernel(a, b)
        ref = torch.matmul(a, b)
    torch.cuda.synchronize()
    print("rel err", ((c.float() - ref.float()).norm() / ref.float().norm()).item())


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here")
