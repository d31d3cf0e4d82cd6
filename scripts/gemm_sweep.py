"""GEMM variants against cuBLAS, interleaved: each round times cuBLAS and
every variant once (median of CUDA-graph replays, L2 flushed), so that the
card's clock and power state, which move cuBLAS by 10% from run to run,
move both sides of each ratio alike. Prints per variant the median over
rounds of TFLOP/s and of the ratio to the same round's cuBLAS.

    python scripts/gemm_sweep.py [--shape 8192] [--dtype float16] [--rounds 5] [--only i,j]

Compiles only where no GPU is present (AOT prepare: TILELANG_MLIR_AOT_PREPARE
and a cache dir, as scripts/gpu_check.sh does).
"""

import argparse
import statistics

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels import gemm
from tilelang_mlir.runtime.cuda import NoCUDADevice
from tilelang_mlir.runtime.profiler import bench_cuda

FullRow = T.GemmWarpPolicy.FullRow
TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def swizzled(M, N, K, block_M, block_N, block_K, num_stages=3, threads=128, policy=None,
             dtype="float16", panel=8, accum_dtype="float32"):
    """The example's tile program with block rasterization in panels."""
    policy = policy or T.GemmWarpPolicy.Square

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, policy=policy)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def no_epilogue(M, N, K, block_M, block_N, block_K, num_stages=3, threads=128, dtype="float16",
                panel=8, accum_dtype="float32"):
    """Diagnostic: the swizzled program without its epilogue, to bound what
    the epilogue costs (its result is garbage)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                if C_local[i, j] == 12345.0:
                    C[by * block_M + i, bx * block_N + j] = C_local[i, j]

    return main


B256 = dict(block_M=128, block_N=256, block_K=64, threads=256)
# (label, program factory, config, pass_configs)
NP = {"tl.persistent_sms": 0}  # not persistent
DIRECT = {"tl.disable_tma_store": True}  # the epilogue as direct global stores
VARIANTS = [
    ("128x256 s4 c2 swz8 persistent", swizzled, dict(B256, num_stages=4, panel=8), {}),
    ("128x256 s3 c2 swz8 persistent direct", swizzled, dict(B256, num_stages=3, panel=8), DIRECT),
    ("128x256 s3 c2 swz8 persistent tma-store", swizzled, dict(B256, num_stages=3, panel=8), {}),
    ("128x256 s3 c2 persistent tma-store", gemm.matmul, dict(B256, num_stages=3), {}),
    ("128x256 s3 c1 swz8 persistent tma-store", swizzled, dict(B256, num_stages=3, panel=8),
     {"tl.cluster_size": 1}),
    ("256x128 s3 c2 swz8 FullRow persistent tma-store", swizzled,
     dict(block_M=256, block_N=128, block_K=64, threads=256, num_stages=3, policy=FullRow,
          panel=8), {}),
    ("no epilogue (diagnostic)", no_epilogue, dict(B256, num_stages=4, panel=8), {}),
]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", type=int, default=8192, help="N for an N^3 problem")
    p.add_argument("--mnk", help="M,N,K (instead of --shape)")
    p.add_argument("--dtype", default="float16")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rep", type=int, default=30)
    p.add_argument("--only", help="comma-separated variant indices (see VARIANTS)")
    args = p.parse_args()
    dtype = args.dtype
    M, N, K = ([int(x) for x in args.mnk.split(",")] if args.mnk else [args.shape] * 3)
    chosen = range(len(VARIANTS)) if not args.only else [int(i) for i in args.only.split(",")]
    kernels = []
    for i in chosen:
        label, factory, config, pcs = VARIANTS[i]
        try:
            k = tl.compile(factory(M, N, K, **config, dtype=dtype), out_idx=[2], target="cuda",
                           pass_configs=pcs)
            kernels.append((label, k))
        except NoCUDADevice:
            print(f"compiled {label} (no GPU here)")
        except Exception as e:  # noqa: BLE001
            print(f"{label}: does not compile: {str(e).splitlines()[0][:160]}")
    if not torch.cuda.is_available():
        return
    a = torch.randn(M, K, device="cuda", dtype=TORCH[dtype])
    b = torch.randn(K, N, device="cuda", dtype=TORCH[dtype])
    ref = (a.float() @ b.float())
    flop = 2 * M * N * K
    good = []
    for label, k in kernels:
        c = k(a, b)
        err = ((c.float() - ref).norm() / ref.norm()).item()
        if err < 1e-2 or "diagnostic" in label:
            good.append((label, k))
        else:
            print(f"{label}: WRONG, relative error {err:.2e}")
    tflops = {label: [] for label, _ in good}
    ratios = {label: [] for label, _ in good}
    cublas = []
    for r in range(args.rounds):
        ms = statistics.median(bench_cuda(lambda: torch.matmul(a, b), rep=args.rep,
                                          cuda_graph=True))
        cublas.append(flop / ms / 1e9)
        for label, k in good:
            ms_k = statistics.median(bench_cuda(lambda: k(a, b), rep=args.rep,
                                                cuda_graph=True))
            t = flop / ms_k / 1e9
            tflops[label].append(t)
            ratios[label].append(t / cublas[-1])
    print(f"\n{M}x{N}x{K} {dtype}, {args.rounds} rounds; cuBLAS median {statistics.median(cublas):.0f} "
          f"TFLOP/s (rounds: {' '.join(f'{x:.0f}' for x in cublas)})")
    print(f"{'variant':28} {'TFLOP/s':>8} {'/cuBLAS':>8}   per round")
    for label, _ in good:
        print(f"{label:28} {statistics.median(tflops[label]):8.0f} "
              f"{statistics.median(ratios[label]):8.3f}   "
              + " ".join(f"{x:.0f}" for x in tflops[label]))


if __name__ == "__main__":
    main()
