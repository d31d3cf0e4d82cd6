#!/usr/bin/env python3
"""How the timing method moves the numbers of a short memory-bound kernel
(issue 8): the int4 dequant GEMV (1x8192x8192) and cuBLAS on the float16
weights, each timed

  flush-write  the benchmarks' method: 256 MB zeroed before each CUDA-graph
               replay (the L2 is left full of dirty lines, which the kernel's
               reads must write back), events around the replay;
  flush-read   a 256 MB buffer read (summed) instead: the L2 left clean;
  rotate       no flush: a graph of 8 calls over 4 copies of the weights
               (4 x the bytes > the 50 MB L2), time / 8;
and an empty kernel with the first two (what a replay costs by itself).

    scripts/timing_probe.py        (TILELANG_MLIR_AOT_PREPARE=1 here compiles)
"""
import os, sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "dequant"))
import dequant_gemm as dq  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
import tilelang_mlir.language as T  # noqa: E402

M, N, K, BITS = 1, 8192, 8192, 4
CONFIG = dict(block_N=8, block_K=1024, threads=128, prefetch=False)


@T.prim_func
def empty(X: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        X[0] = 1.0


gemv = tl.compile(dq.program(M, N, K, BITS, 128, "float16", CONFIG), out_idx=[3], target="cuda")
nop = tl.compile(empty, target="cuda")
dev = "cuda"
A = torch.randn(M, K, device=dev).half()
copies = []
for _ in range(4):
    Wq, S = dq.quantize((torch.randn(N, K, device=dev) * 0.05).half(), BITS, 128)
    copies.append((Wq, S))
Wd = dq.dequantize(*copies[0], BITS, 128)
Wds = [dq.dequantize(w, s, BITS, 128) for w, s in copies]
ins = [dq.inputs_for(CONFIG, A, w, s, BITS) for w, s in copies]
x = torch.zeros(128, device=dev)
big = torch.empty(256 * 2**20 // 4, dtype=torch.float32, device=dev)
sink = torch.empty((), device=dev)


def replay_ms(fn, flush, rep=100):
    g = torch.cuda.CUDAGraph()
    fn()
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        fn()
    for _ in range(10):
        g.replay()
    times = []
    for _ in range(rep):
        flush()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return float(np.median(times))


def rotate_ms(fns, calls=8, rep=30):
    g = torch.cuda.CUDAGraph()
    for f in fns:
        f()
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for i in range(calls):
            fns[i % len(fns)]()
    for _ in range(3):
        g.replay()
    times = []
    for _ in range(rep):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / calls)
    return float(np.median(times))


flush_write = big.zero_
flush_read = lambda: torch.sum(big, 0, out=sink)  # noqa: E731
moved = copies[0][0].numel() + copies[0][1].numel() * 2 + (K + N) * 2
cases = {
    "ours int4": (lambda: gemv(*ins[0]), [lambda i=i: gemv(*i) for i in ins], moved),
    "cuBLAS fp16": (lambda: torch.matmul(A, Wd.T), [lambda w=w: torch.matmul(A, w.T) for w in Wds],
                    N * K * 2),
}
print("| kernel | flush-write µs | flush-read µs | rotate µs | GB/s (rotate) |")
print("|---|---|---|---|---|")
for name, (one, many, nbytes) in cases.items():
    a, b, c = replay_ms(one, flush_write), replay_ms(one, flush_read), rotate_ms(many)
    print(f"| {name} | {a * 1e3:.1f} | {b * 1e3:.1f} | {c * 1e3:.1f} | {nbytes / c / 1e6:.0f} |")
print(f"| empty kernel | {replay_ms(lambda: nop(x), flush_write) * 1e3:.1f} | "
      f"{replay_ms(lambda: nop(x), flush_read) * 1e3:.1f} | "
      f"{rotate_ms([lambda: nop(x)]) * 1e3:.1f} | |")
