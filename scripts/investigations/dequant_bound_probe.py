#!/usr/bin/env python3
"""What bounds the int4 decode GEMM at 16x28672x8192 (issue 8): timed cold
(common.rotate_ms) next to
- "TMA floor" kernels: the decode GEMM's ring (4 or 5 stages, the tiled
  words of 256 rows x two 128-k gemms a step, by TMA, 112 or 132 blocks
  each streaming a contiguous run of (tile, step) units) whose consumers
  only XOR the words, with and without the X and scale tiles;
- the read floor (plain 16-byte loads, no ring; benchmarks/dequant.py).
With --clocks it also runs the decode GEMM and the TMA floor back to back
for 2 s each and reports the SM clock and board power (nvidia-smi every
50 ms): the decode GEMM reaches the power cap. Timing only for the floors
(they compute nothing useful).

    TILELANG_MLIR_AOT_PREPARE=1 TILELANG_MLIR_CUDA_ARCH=sm_90a \\
        TILELANG_MLIR_CACHE_DIR=$PWD/.gpu-cache-probe scripts/investigations/dequant_bound_probe.py   (here)
    TILELANG_MLIR_OFFLINE=1 TILELANG_MLIR_CACHE_DIR=... scripts/investigations/dequant_bound_probe.py --clocks
"""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import torch  # noqa: E402

import common  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
import tilelang_mlir.language as T  # noqa: E402
from tilelang_mlir.kernels import dequant as dq  # noqa: E402

bench = common.load("benchmarks/dequant.py", "bench_probe")

M, N, K, BITS, GROUP = 16, 28672, 8192, 4, 128
CONFIG = dict(dq.PAIRS[0])  # the decode list's first: tiled, 256 rows, two gemms a step
BLOCK_N, SPAN = CONFIG["block_N"], CONFIG["block_K"] * CONFIG.get("splits", 1)
WORDS, STEPS, TILES = SPAN // 8, K // SPAN, N // CONFIG["block_N"]


def tma_floor(grid, stages, with_x, threads=256):
    units = TILES * STEPS

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"),
             Wp: T.Tensor((TILES, STEPS, BLOCK_N, WORDS), "int32"),
             S: T.Tensor((TILES, K // GROUP, BLOCK_N), "float16"),
             R: T.Tensor((grid, BLOCK_N, WORDS), "int32")):
        with T.Kernel(grid, threads=threads) as bx:
            W_s = T.alloc_shared((BLOCK_N, WORDS), "int32")
            Xs = T.alloc_shared((M, SPAN), "float16")
            S_s = T.alloc_shared((SPAN // GROUP, BLOCK_N), "float16")
            wq = T.alloc_fragment((BLOCK_N, WORDS), "int32")
            acc = T.alloc_fragment((BLOCK_N, WORDS), "int32")
            T.clear(acc)
            for u in T.Pipelined(bx * units // grid, (bx + 1) * units // grid,
                                 num_stages=stages):
                tile, k = u // STEPS, u % STEPS
                T.copy(Wp[tile, k, 0, 0], W_s)
                if with_x:
                    T.copy(A[0, k * SPAN], Xs)
                    T.copy(S[tile, k * SPAN // GROUP, 0], S_s)
                T.copy(W_s, wq)
                for n, w in T.Parallel(BLOCK_N, WORDS):
                    acc[n, w] = acc[n, w] ^ wq[n, w]
            T.copy(acc, R[bx, 0, 0])

    return main


def sample_clocks(fn, seconds=2.0):
    """(mean SM MHz, min SM MHz, mean W, max W, throttle reasons) while fn runs."""
    proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,"
                             "clocks_event_reasons.active", "--format=csv,noheader,nounits",
                             "-lms", "50"], stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
    proc.terminate()
    rows = [r.split(", ") for r in proc.communicate()[0].strip().splitlines()[5:-2]]
    rows = [r for r in rows if len(r) == 3]
    clk, pw = [float(r[0]) for r in rows], [float(r[1]) for r in rows]
    return (sum(clk) / len(clk), min(clk), sum(pw) / len(pw), max(pw),
            sorted({r[2] for r in rows}))


def main():
    gpu, target = common.init_cuda()
    floors = {f"TMA floor {grid} blocks s{stages} {'words+X+scales' if x else 'words'}":
              tl.compile(tma_floor(grid, stages, x), out_idx=[3], target=target)
              for grid in (112, 132) for stages in (4, 5) for x in (False, True)}
    cfg = {k: v for k, v in CONFIG.items() if k != "pairs"}
    pair = tl.compile(dq.dequant_gemm_pairs(M, N, K, BITS, GROUP, **cfg), out_idx=[3],
                      target=target)
    floor = tl.compile(bench.read_floor(N, K * BITS // 32), out_idx=[1], target=target)
    if not gpu:
        print("compiled only (no GPU here)")
        return
    nbytes = N * K // 2 + N * K // GROUP * 2 + 2 * (M * K + M * N)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(M, K, device="cuda", generator=gen).half()
    sets = []
    for _ in range(common.copies_for(nbytes)):
        Wq, S = dq.quantize((torch.randn(N, K, device="cuda", generator=gen) * 0.05).half(),
                            BITS, GROUP)
        sets.append((Wq, dq.inputs_for(CONFIG, x, Wq, S, BITS)))
    copy_gbs = common.copy_bandwidth()

    def report(name, ms):
        gbs = nbytes / ms / 1e6
        print(f"{name:44s} {ms * 1e3:7.1f} us  {gbs:6.0f} GB/s ({gbs / copy_gbs:.0%})", flush=True)

    report("decode GEMM (PAIRS[0])", common.rotate_ms([lambda a=a: pair(*a) for _, a in sets]))
    for name, k in floors.items():
        report(name, common.rotate_ms([lambda a=a: k(*a) for _, a in sets]))
    words = [Wq.view(torch.int32).reshape(N, K * BITS // 32) for Wq, _ in sets]
    report("read floor (plain loads)", common.rotate_ms([lambda w=w: floor(w) for w in words]))
    if "--clocks" in sys.argv:
        first = next(iter(floors.values()))
        for name, fn in (("decode GEMM", lambda: pair(*sets[0][1])),
                         ("TMA floor", lambda: first(*sets[0][1]))):
            mean, low, watts, peak, why = sample_clocks(fn)
            print(f"{name:12s} SM clock mean {mean:.0f} MHz (min {low:.0f}), power mean "
                  f"{watts:.0f} W (max {peak:.0f}), throttle reasons {why}", flush=True)


if __name__ == "__main__":
    main()
