#!/usr/bin/env python3
"""How the timing method moves the numbers of a short memory-bound kernel
(issue 8): the int4 dequant GEMV (1x8192x8192) and cuBLAS on the float16
weights, each timed

  flush-write  the benchmarks' method: 256 MB zeroed before each CUDA-graph
               replay (the L2 is left full of dirty lines, which the kernel's
               reads must write back), events around the replay;
  flush-read   a 256 MB buffer read (summed) instead: the L2 left clean;
  rotate       no flush: a graph of 16 calls over 4 copies of the weights
               (4 x the bytes > the 50 MB L2), time / 8;
and an empty kernel with the first two (what a replay costs by itself).

    scripts/investigations/timing_probe.py        (TILELANG_MLIR_AOT_PREPARE=1 here compiles)
"""
import os, sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from common import rotate_ms  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
import tilelang_mlir.language as T  # noqa: E402
from tilelang_mlir.kernels import dequant as dq  # noqa: E402

M, N, K, BITS = 1, 8192, 8192, 4
CONFIGS = {"pairs": dq.GEMV[0],  # the default: float16 pairs
           "chunked": dict(block_N=8, block_K=1024, threads=128, prefetch=False)}


@T.prim_func
def empty(X: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=32) as bx:
        X[0] = 1.0


gemvs = {name: tl.compile(dq.program(M, N, K, BITS, 128, "float16", c), out_idx=[3],
                          target="cuda") for name, c in CONFIGS.items()}
nop = tl.compile(empty, target="cuda")
if not torch.cuda.is_available():
    sys.exit("no GPU here: compiled only (AOT prepare)")
dev = "cuda"
A = torch.randn(M, K, device=dev).half()
copies = []
for _ in range(4):
    Wq, S = dq.quantize((torch.randn(N, K, device=dev) * 0.05).half(), BITS, 128)
    copies.append((Wq, S))
Wd = dq.dequantize(*copies[0], BITS, 128)
Wds = [dq.dequantize(w, s, BITS, 128) for w, s in copies]
ins = {name: [dq.inputs_for(c, A, w, s, BITS) for w, s in copies] for name, c in CONFIGS.items()}
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


flush_write = big.zero_
flush_read = lambda: torch.sum(big, 0, out=sink)  # noqa: E731
moved = copies[0][0].numel() + copies[0][1].numel() * 2 + (K + N) * 2
cases = {f"ours int4 {name}": (lambda g=g, i=ins[name][0]: g(*i),
                              [lambda g=g, i=i: g(*i) for i in ins[name]], moved)
         for name, g in gemvs.items()}
cases.update({
    "cuBLAS fp16": (lambda: torch.matmul(A, Wd.T), [lambda w=w: torch.matmul(A, w.T) for w in Wds],
                    N * K * 2),
})
print("| kernel | flush-write µs | flush-read µs | rotate µs | GB/s (rotate) |")
print("|---|---|---|---|---|")
for name, (one, many, nbytes) in cases.items():
    a, b, c = replay_ms(one, flush_write), replay_ms(one, flush_read), rotate_ms(many)
    print(f"| {name} | {a * 1e3:.1f} | {b * 1e3:.1f} | {c * 1e3:.1f} | {nbytes / c / 1e6:.0f} |")
print(f"| empty kernel | {replay_ms(lambda: nop(x), flush_write) * 1e3:.1f} | "
      f"{replay_ms(lambda: nop(x), flush_read) * 1e3:.1f} | "
      f"{rotate_ms([lambda: nop(x)]) * 1e3:.1f} | |")
