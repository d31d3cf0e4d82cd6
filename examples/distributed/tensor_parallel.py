"""Tensor-parallel communication written in the tile language
(`tilelang_mlir.kernels.distributed`): a one-shot all-reduce, an all-gather
GEMM (column-parallel) and a GEMM + reduce-scatter (row-parallel), each
checked against the sequential collective.

On the CPU the ranks are simulated in one process (threads over NumPy
parts). On GPUs, run it under torchrun (one process per GPU); alone on
one GPU it is a world of one rank:

    python examples/distributed/tensor_parallel.py --target cpu --world 4
    torchrun --nproc-per-node 2 examples/distributed/tensor_parallel.py --target cuda
"""

import argparse
import os

import numpy as np

import tilelang_mlir as tl
from tilelang_mlir.kernels import distributed as kd

dist = tl.distributed


def programs(world=2, M=4096, N=4096, K=4096):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    return [("allreduce_oneshot", kd.allreduce_oneshot(world, 65536), [3]),
            ("allgather_gemm", kd.allgather_gemm(world, M, N, K), [3]),
            ("gemm_push", kd.gemm_push(world, M, N, K), []),
            ("reduce_finish", kd.reduce_finish(world, M, N), [2])]


def run_cpu(world, M, N, K, rng):
    """Every rank's results with simulated ranks, and the references."""
    n = 3000
    data, flag = kd.AllReduce.buffer_shapes(world, n)
    bufs, flags = dist.simulate(world, data, "float32"), dist.simulate(world, flag, "int32")
    ar = [kd.AllReduce(bufs[r], flags[r], n, "float32", target="cpu") for r in range(world)]
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(world)]
    checks = [("all-reduce", dist.run_ranks(world, lambda r: ar[r](xs[r])),
               [sum(x.astype(np.float64) for x in xs)] * world)]

    gshape, fshape = kd.AllGatherGemm.buffer_shapes(world, M, K)
    gathered, ready = dist.simulate(world, gshape, "float16"), dist.simulate(world, fshape, "int32")
    ag = [kd.AllGatherGemm(gathered[r], ready[r], M, N, K, target="cpu") for r in range(world)]
    A = rng.standard_normal((M, K)).astype(np.float16)
    Bs = [rng.standard_normal((K, N)).astype(np.float16) for _ in range(world)]
    rows = M // world
    checks.append(("all-gather GEMM",
                   dist.run_ranks(world, lambda r: ag[r](A[r * rows:(r + 1) * rows], Bs[r])),
                   [A.astype(np.float64) @ b.astype(np.float64) for b in Bs]))

    pshape, fshape = kd.GemmReduceScatter.buffer_shapes(world, M, N)
    parts, done = dist.simulate(world, pshape, "float16"), dist.simulate(world, fshape, "int32")
    rs = [kd.GemmReduceScatter(parts[r], done[r], M, N, K, target="cpu") for r in range(world)]
    As = [rng.standard_normal((M, K)).astype(np.float16) for _ in range(world)]
    full = sum(a.astype(np.float64) @ b.astype(np.float64) for a, b in zip(As, Bs))
    rows = M // world
    checks.append(("GEMM + reduce-scatter", dist.run_ranks(world, lambda r: rs[r](As[r], Bs[r])),
                   [full[r * rows:(r + 1) * rows] for r in range(world)]))
    return checks


def run_cuda(M, N, K):
    """This rank's results on its GPU (torch.distributed, NCCL), and the
    references from NCCL and cuBLAS."""
    import torch
    import torch.distributed as tdist

    if "WORLD_SIZE" in os.environ:
        tdist.init_process_group("nccl")
    else:
        tdist.init_process_group("nccl", store=tdist.HashStore(), rank=0, world_size=1)
    rank, world = tdist.get_rank(), tdist.get_world_size()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    torch.manual_seed(1234 + rank)
    dev = dict(device="cuda")
    n = 65536
    data, flag = kd.AllReduce.buffer_shapes(world, n)
    buf, flags = dist.empty(data, torch.float16), dist.empty(flag, torch.int32)
    flags.local.zero_()
    x = torch.randn(n, dtype=torch.float16, **dev)
    ref = x.clone()
    tdist.all_reduce(ref)
    checks = [("all-reduce", [kd.AllReduce(buf, flags, n)(x)], [ref])]

    gshape, fshape = kd.AllGatherGemm.buffer_shapes(world, M, K)
    gathering, ready = dist.empty(gshape, torch.float16), dist.empty(fshape, torch.int32)
    ready.local.zero_()
    shard = torch.randn(M // world, K, dtype=torch.float16, **dev)
    B = torch.randn(K, N, dtype=torch.float16, **dev) / K ** 0.5
    gathered = torch.empty(M, K, dtype=torch.float16, **dev)
    tdist.all_gather_into_tensor(gathered, shard)
    tdist.barrier()
    checks.append(("all-gather GEMM", [kd.AllGatherGemm(gathering, ready, M, N, K)(shard, B)],
                   [gathered @ B]))

    pshape, fshape = kd.GemmReduceScatter.buffer_shapes(world, M, N)
    parts, done = dist.empty(pshape, torch.float16), dist.empty(fshape, torch.int32)
    done.local.zero_()
    A = torch.randn(M, K, dtype=torch.float16, **dev)
    full = A @ B
    out = torch.empty(M // world, N, dtype=torch.float16, **dev)
    tdist.reduce_scatter_tensor(out, full)
    tdist.barrier()
    checks.append(("GEMM + reduce-scatter", [kd.GemmReduceScatter(parts, done, M, N, K)(A, B)],
                   [out]))
    torch.cuda.synchronize()
    return rank, world, checks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--world", type=int, default=2, help="simulated ranks (CPU)")
    parser.add_argument("--m", type=int, default=None)
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--k", type=int, default=None)
    args = parser.parse_args(argv)
    target = args.target
    if target == "auto":
        import torch

        target = "cuda" if torch.cuda.is_available() else "cpu"
    if target == "cpu":
        M, N, K = args.m or 64 * args.world, args.n or 96, args.k or 64
        rank, world = 0, args.world
        checks = run_cpu(world, M, N, K, np.random.default_rng())
    else:
        M, N, K = args.m or 4096, args.n or 4096, args.k or 4096
        rank, world, checks = run_cuda(M, N, K)
    worst = 0.0
    for name, outs, refs in checks:
        errs = []
        for out, ref in zip(outs, refs):
            out, ref = (np.asarray(t.double().cpu() if hasattr(t, "cpu") else t, np.float64)
                        for t in (out, ref))
            errs.append(float(np.linalg.norm(out - ref) / np.linalg.norm(ref)))
        worst = max(worst, *errs)
        if rank == 0:
            print(f"target {target}, {world} ranks: {name}: relative error {max(errs):.1e}")
    if not worst < 5e-3:
        raise SystemExit(f"FAILED: relative error {worst:.1e}")
    return worst


if __name__ == "__main__":
    main()
