"""Tensor-parallel communication on 2-8 GPUs (issue 23): our kernels
(tilelang_mlir.kernels.distributed) next to NCCL + cuBLAS one after the
other, PyTorch's symmetric-memory fused ops and the GEMM alone.

How the global problem (M tokens, N, K) is split over W ranks:
- ag_gemm, column-parallel (an MLP's up projection): rank r holds rows
  [r M/W, (r+1) M/W) of A (M, K) and the column shard B_r (K, N/W);
  C_r = all_gather(A) @ B_r, (M, N/W).
- gemm_rs, row-parallel (the down projection): rank r holds A_r (M, K/W)
  and the row shard B_r (K/W, N); out_r = rows r of sum_q A_q @ B_q, (M/W, N).
- allreduce: the sum of every rank's x, 8 KB to 256 KB (decode-sized).
--shapes: "8b" (hidden 4096, intermediate 14336), "70b" (8192, 28672) at
M = 8192 tokens (ag_gemm M x intermediate x hidden, gemm_rs M x hidden x
intermediate), or MxNxK for both.

Contenders, on the same random inputs (rank r's generator at a seed from
rank 0 plus r): ours (AllGatherGemm / GemmReduceScatter / AllReduce over
tl.distributed.empty buffers, flags zeroed); NCCL + cuBLAS
(all_gather_into_tensor, torch.matmul; torch.matmul, reduce_scatter_tensor;
all_reduce); torch.ops.symm_mem (fused_all_gather_matmul,
fused_matmul_reduce_scatter, one_shot_all_reduce_copy); the GEMM alone
(torch.matmul of the local problem: the aim is ours within 10% of it). Each
is first checked against the sequential collectives in float32 (relative
error, worst rank, below 1e-2 fp16 / 3e-2 bf16); a wrong one is not timed.
Timing: synchronize and barrier, then CUDA events on the current stream
around one call; median of --rep after --warmup, max over ranks (no L2
flush, no CUDA graphs: our wrappers pass a new epoch each call).

Hangs: our T.wait fails a device assert after 10 s (the device prints the
message and line, the next CUDA call raises); a rank that raises prints it
and exits at once (torchrun stops the others); NCCL times out after
--timeout s, and a watchdog dumps the stacks and exits after that per case.

    torchrun --nproc-per-node=8 benchmarks/distributed.py [--ops ag_gemm,gemm_rs,allreduce]
        [--shapes 8b,70b] [--dtype fp16,bf16] [--tile 128x128x64] [--stages 4]
        [--threads 128] [--warmup 5] [--rep 20] [--timeout 600]
    python benchmarks/distributed.py --simulate 4

--simulate W: W ranks as threads of this process (tl.distributed.simulate,
run_ranks, target "cpu") on tiny shapes, the same checks (NCCL + cuBLAS
become torch's CPU cat / sum and matmul; symm_mem is n/a): a smoke run
without GPUs whose times mean nothing.
"""

import datetime
import faulthandler
import os
import socket
import statistics
import sys
import time
import traceback

import numpy as np
import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels import distributed as kd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)

MODELS = {"8b": (4096, 14336), "70b": (8192, 28672)}  # hidden, intermediate
TOKENS = 8192
ALLREDUCE_KB = (8, 16, 32, 64, 128, 256)
TOL = {"float16": 1e-2, "bfloat16": 3e-2}
DTYPES = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
# Hopper: CONFIGS[3] of kernels/gemm.py (the kernels here take no warp policy;
# reduce_finish sums block_M x block_N tiles with 128 threads, so 128 x 256 would spill).
GPU_TILE, GPU_STAGES = "128x128x64", 4
SIM_TILE, SIM_STAGES = "64x64x32", 2  # the kernels' defaults, which the CPU tests run


# ---------------------------------------------------------------------------
# Worlds: the ranks this process plays, and the collectives over them. Tensors
# are dicts {rank: tensor} over `world.ranks` (this process's rank under
# torchrun, every rank in the simulation): each contender is written once.
# ---------------------------------------------------------------------------


class Simulated:
    """`size` ranks as threads of this process on the CPU target."""
    gpu, target, rank, device = False, "cpu", 0, torch.device("cpu")

    def __init__(self, size, timeout):
        self.size, self.ranks, self.timeout = size, list(range(size)), timeout

    def symmetric(self, shape, dtype, zero=False):  # simulate's parts start zeroed
        return dict(enumerate(tl.distributed.simulate(self.size, shape, dtype)))

    def all_gather(self, d):
        return dict.fromkeys(self.ranks, torch.cat([d[r] for r in self.ranks]))

    def reduce_scatter(self, d):
        return dict(enumerate(sum(d.values()).chunk(self.size)))

    def all_reduce(self, d):
        return dict.fromkeys(self.ranks, sum(d.values()))

    def call(self, fn):
        return dict(enumerate(tl.distributed.run_ranks(self.size, fn, self.timeout)))

    def sync(self):
        pass

    def worst(self, value):  # over the ranks: these values already are
        return value

    def once_ms(self, fn):
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def time(self, fn, warmup, rep):
        """The median over `rep` timed calls after `warmup`, the worst rank's."""
        for _ in range(warmup):
            fn()
        return self.worst(statistics.median(self.once_ms(fn) for _ in range(rep)))

    def fatal(self, e):  # our T.wait timed out: a bug, not a contender's failure
        return isinstance(e, tl.DeviceAssertionError)


class Torchrun(Simulated):
    """One rank per process, one GPU per local rank, NCCL."""
    gpu, target = True, "cuda"

    def __init__(self, timeout):
        import torch.distributed as dist

        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA GPU here: run under torchrun on GPUs, or --simulate W")
        self.dist, local = dist, int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local)
        self.device = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=self.device,
                                timeout=datetime.timedelta(seconds=timeout))
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        self.ranks, self.group = [self.rank], dist.group.WORLD.group_name
        self.places = [None] * self.size
        dist.all_gather_object(self.places, (socket.gethostname(), local,
                                             torch.cuda.get_device_name(self.device)))

    def symmetric(self, shape, dtype, zero=False):
        s = tl.distributed.empty(shape, dtype)
        if zero:
            s.local.zero_()
        return {self.rank: s}

    def all_gather(self, d):
        x = d[self.rank]
        out = x.new_empty((self.size * x.shape[0], *x.shape[1:]))
        self.dist.all_gather_into_tensor(out, x)
        return {self.rank: out}

    def reduce_scatter(self, d):
        x = d[self.rank]
        out = x.new_empty((x.shape[0] // self.size, *x.shape[1:]))
        self.dist.reduce_scatter_tensor(out, x)
        return {self.rank: out}

    def all_reduce(self, d):
        x = d[self.rank].clone()
        self.dist.all_reduce(x)
        return {self.rank: x}

    def call(self, fn):
        return {self.rank: fn(self.rank)}

    def sync(self):  # e.g. zeroed flags are zero everywhere before any peer signals
        torch.cuda.synchronize()
        self.dist.barrier()

    def worst(self, value):
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.item()

    def once_ms(self, fn):
        self.sync()
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def fatal(self, e):  # the CUDA context is gone after a device assert
        return isinstance(e, tl.DeviceAssertionError) or "CUDA error" in str(e)


def write(sym, t):
    """Copies t into the local part of a symmetric buffer (a CUDA tensor, or
    the simulation's NumPy array, byte for byte: NumPy has no bfloat16 of
    torch's)."""
    if isinstance(sym.local, torch.Tensor):
        sym.local.copy_(t)
    else:
        sym.local.view(np.uint8)[...] = t.contiguous().view(torch.uint8).numpy()


def mm(X, Y):
    return {r: torch.matmul(X[r], Y[r]) for r in X}


def as_torch(x):
    """A kernel's output as a tensor (the CPU target returns NumPy arrays
    where no input was a tensor)."""
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype.name == "bfloat16":
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)


# ---------------------------------------------------------------------------
# Checking and timing
# ---------------------------------------------------------------------------


def measure(world, fn, ref, tol, args):
    """('ok', ms, error), ('wrong', None, error) or ('failed', None, why):
    fn() -> {rank: output} checked against ref on every rank, then timed.
    All ranks reach the same verdict (the worst rank's)."""
    why, err = None, float("inf")
    try:
        out = fn()
        err = max(common.rel_error(as_torch(out[r]), ref[r]) for r in world.ranks)
    except Exception as e:  # noqa: BLE001 (reported in the table)
        if world.fatal(e):
            raise
        why = common.reason(e)
    if world.worst(1.0 if why else 0.0):
        return "failed", None, why or "failed on another rank"
    err = world.worst(err)
    if not err < tol:
        return "wrong", None, err
    return "ok", world.time(fn, args.warmup, args.rep), err


def ours(world, build, call, ref, tol, args):
    """measure() of our wrapper, build(rank) (concurrent compiles share the
    disk cache: its writes are atomic)."""
    try:
        ops = {r: build(r) for r in world.ranks}
    except Exception as e:  # noqa: BLE001
        if world.fatal(e):
            raise
        return "failed", None, f"compile: {common.reason(e)}"
    return measure(world, lambda: world.call(lambda r: call(ops[r], r)), ref, tol, args)


def fused(world, fn, ref, tol, args):
    if not world.gpu:
        return "n/a", None, "needs CUDA"
    return measure(world, lambda: {r: fn(r) for r in world.ranks}, ref, tol, args)


class Case:
    def __init__(self, op, name, dtype, M=0, N=0, K=0):
        self.op, self.name, self.dtype, self.M, self.N, self.K = op, name, dtype, M, N, K
        self.tdtype = getattr(torch, dtype)

    @property
    def label(self):
        dims = f"{self.M}x{self.N}x{self.K} " if self.op != "allreduce" else ""
        return f"{self.name + ' ' if self.name else ''}{dims}{self.dtype}"


def cases(args, world):
    gemms = []
    for item in args.shapes.split(","):
        item = item.strip().lower()
        if item in MODELS:
            hidden, inter = MODELS[item]
            gemms.append((item, (TOKENS, inter, hidden), (TOKENS, hidden, inter)))
        elif item == "tiny":
            s = 64 * world.size
            gemms.append((item, (s, s, s), (s, s, s)))
        else:
            dims = tuple(int(d) for d in item.split("x"))
            gemms.append(("", dims, dims))
    todo = []
    for dtype in args.dtype:
        for op in args.ops:
            if op == "allreduce":
                sizes = (8, 32) if not world.gpu else ALLREDUCE_KB
                todo += [Case(op, f"{kb} KB", dtype, N=kb * 1024 // 2) for kb in sizes]
            else:
                todo += [Case(op, name, dtype, *(ag if op == "ag_gemm" else rs))
                         for name, ag, rs in gemms]
    return todo


# ---------------------------------------------------------------------------
# The ops
# ---------------------------------------------------------------------------


def run_case(world, case, args, gens, config):
    """One case: the inputs, the float32 reference, every contender checked then timed."""
    W, tol, dt = world.size, TOL[case.dtype], case.tdtype
    M, N, K = case.M, case.N, case.K
    randn = lambda shape, r: torch.randn(shape, generator=gens[r],  # noqa: E731
                                         device=world.device).to(dt)
    row = {"case": case, "alone": ("n/a", None, "")}
    block_M = config["block_M"]
    split = "N" if case.op == "ag_gemm" else "K"
    if case.op != "allreduce" and (M % (W * block_M) or (N if split == "N" else K) % W):
        why = f"M must split into {W} x {block_M}-row tiles and {split} into {W}"
        return dict(row, ours=("n/a", None, why), seq=("n/a", None, why),
                    fused=("n/a", None, why))

    if case.op == "ag_gemm":
        A = {r: randn((M // W, K), r) for r in world.ranks}
        B = {r: randn((K, N // W), r) for r in world.ranks}
        A_full = world.all_gather(A)  # exact: a gather only copies
        ref = mm({r: a.float() for r, a in A_full.items()}, {r: b.float() for r, b in B.items()})
        gshape, fshape = kd.AllGatherGemm.buffer_shapes(W, M, K)
        gathered = world.symmetric(gshape, case.dtype)
        flags = world.symmetric(fshape, "int32", zero=True)
        world.sync()
        row["ours"] = ours(world, lambda r: kd.AllGatherGemm(
            gathered[r], flags[r], M, N // W, K, case.dtype, world.target, **config),
            lambda op, r: op(A[r], B[r]), ref, tol, args)
        row["seq"] = measure(world, lambda: mm(world.all_gather(A), B), ref, tol, args)
        row["fused"] = fused(world, lambda r: torch.ops.symm_mem.fused_all_gather_matmul(
            A[r], [B[r]], 0, world.group, return_A=False)[1][0], ref, tol, args)
        row["alone"] = measure(world, lambda: mm(A_full, B), ref, tol, args)
    elif case.op == "gemm_rs":
        A = {r: randn((M, K // W), r) for r in world.ranks}
        B = {r: randn((K // W, N), r) for r in world.ranks}
        ref = world.reduce_scatter({r: A[r].float() @ B[r].float() for r in world.ranks})
        pshape, fshape = kd.GemmReduceScatter.buffer_shapes(W, M, N, block_M, config["block_N"])
        parts = world.symmetric(pshape, case.dtype)
        flags = world.symmetric(fshape, "int32", zero=True)
        world.sync()
        row["ours"] = ours(world, lambda r: kd.GemmReduceScatter(
            parts[r], flags[r], M, N, K // W, case.dtype, world.target, **config),
            lambda op, r: op(A[r], B[r]), ref, tol, args)
        row["seq"] = measure(world, lambda: world.reduce_scatter(mm(A, B)), ref, tol, args)
        row["fused"] = fused(world, lambda r: torch.ops.symm_mem.fused_matmul_reduce_scatter(
            A[r], B[r], "sum", 0, world.group), ref, tol, args)
        local = mm({r: a.float() for r, a in A.items()}, {r: b.float() for r, b in B.items()})
        row["alone"] = measure(world, lambda: mm(A, B), local, tol, args)
    else:
        x = {r: randn((N,), r) for r in world.ranks}
        ref = world.all_reduce({r: x[r].float() for r in world.ranks})
        dshape, fshape = kd.AllReduce.buffer_shapes(W, N)
        buf = world.symmetric(dshape, case.dtype)
        flags = world.symmetric(fshape, "int32", zero=True)
        world.sync()
        row["ours"] = ours(world, lambda r: kd.AllReduce(buf[r], flags[r], N, case.dtype,
                                                         world.target),
                           lambda op, r: op(x[r]), ref, tol, args)
        row["seq"] = measure(world, lambda: world.all_reduce(x), ref, tol, args)
        staging = None
        if world.gpu:  # torch's own symmetric buffer (one_shot_all_reduce_copy copies x in)
            import torch.distributed._symmetric_memory as symm_mem

            staging = symm_mem.empty((N,), dtype=dt, device=world.device)
            symm_mem.rendezvous(staging, world.group)
        row["fused"] = fused(world, lambda r: torch.ops.symm_mem.one_shot_all_reduce_copy(
            staging, x[r], "sum", world.group), ref, tol, args)
    errors = ", ".join(f"{k} {v[2]:.1e}" for k, v in row.items()
                       if k != "case" and isinstance(v[2], float))
    if world.rank == 0:
        print(f"  errors: {errors}", flush=True)
    return row


# ---------------------------------------------------------------------------
# Output and the entry point
# ---------------------------------------------------------------------------

TITLES = {"ag_gemm": "AG+GEMM (column-parallel: C_r = all_gather(A) @ B_r)",
          "gemm_rs": "GEMM+RS (row-parallel: out_r = rows r of sum_q A_q @ B_q)",
          "allreduce": "all-reduce (one-shot)"}


def print_tables(world, rows):
    cpu = (" (simulated on the CPU: NCCL+cuBLAS is torch on the CPU; the times mean nothing)"
           if not world.gpu else "")
    for op, title in TITLES.items():
        mine = [row for row in rows if row["case"].op == op]
        if not mine:
            continue
        ar = op == "allreduce"
        unit, scale = ("us", 1e3) if ar else ("ms", 1.0)
        fmt = (lambda ms: f"{ms * scale:.1f}") if ar else (lambda ms: f"{ms:.3f}")
        fused_name = "symm_mem one-shot" if ar else "symm_mem fused"
        seq_name = "NCCL" if ar else "NCCL+cuBLAS"
        print(f"\n{title}, {world.size} ranks{cpu}\n")
        head = ["case", f"ours {unit}", f"{seq_name} {unit}", f"{fused_name} {unit}"]
        head += [] if ar else [f"GEMM alone {unit}"]
        head += ["ours / best"] + ([] if ar else ["ours / GEMM alone"])
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        notes = []
        for row in mine:
            cells = [row["case"].label]
            cells += [common.cell(row[k], fmt) for k in ("ours", "seq", "fused")]
            cells += [] if ar else [common.cell(row["alone"], fmt)]
            cells.append(ratio(row["ours"], row["seq"], row["fused"]))
            cells += [] if ar else [ratio(row["ours"], row["alone"])]
            print("| " + " | ".join(cells) + " |")
            notes += [f"{row['case'].label}: {k} {row[k][0]}: {row[k][2]}"
                      for k in ("ours", "seq", "fused", "alone")
                      if row[k][0] in ("failed", "n/a") and row[k][2] and row[k][2] != "needs CUDA"]
        common.print_notes(notes, "ours / x: ours' time over x's (below 1: ours faster)")


def ratio(ours_result, *others):
    best = min((o[1] for o in others if o[0] == "ok"), default=None)
    return f"{ours_result[1] / best:.2f}" if ours_result[0] == "ok" and best else "—"


def arguments(argv=None):
    parser = common.arguments(__doc__)
    parser.add_argument("--ops", default="ag_gemm,gemm_rs,allreduce")
    parser.add_argument("--shapes", help="comma-separated 8b, 70b, tiny or MxNxK (global: see "
                                         "above; default 8b,70b, with --simulate tiny)")
    parser.add_argument("--dtype", default="float16,bfloat16", help="float16/fp16, bfloat16/bf16")
    parser.add_argument("--tile", help=f"our block_MxNxK (default {GPU_TILE}; simulated "
                                       f"{SIM_TILE})")
    parser.add_argument("--stages", type=int, help=f"our num_stages (default {GPU_STAGES})")
    parser.add_argument("--threads", type=int, default=128, help="our GEMM kernels' threads")
    parser.add_argument("--warmup", type=int, help="untimed calls (default 5; simulated 1)")
    parser.add_argument("--rep", type=int, help="timed calls, median (default 20; simulated 3)")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds before NCCL or the watchdog gives up on a case")
    parser.add_argument("--simulate", type=int, metavar="W",
                        help="W ranks as threads on the CPU target: a smoke run, no GPU")
    args = parser.parse_args(argv)
    args.ops = [op.strip() for op in args.ops.split(",")]
    args.dtype = [DTYPES.get(d.strip().lower(), d) for d in args.dtype.split(",")]
    if set(args.ops) - set(TITLES) or set(args.dtype) - set(TOL):
        parser.error(f"--ops takes {', '.join(TITLES)}; --dtype {', '.join(DTYPES)}")
    sim = args.simulate is not None
    args.shapes = args.shapes or ("tiny" if sim else "8b,70b")
    args.warmup = args.warmup if args.warmup is not None else (1 if sim else 5)
    args.rep = args.rep if args.rep is not None else (3 if sim else 20)
    bm, bn, bk = (int(d) for d in (args.tile or (SIM_TILE if sim else GPU_TILE)).split("x"))
    args.config = dict(block_M=bm, block_N=bn, block_K=bk, threads=args.threads,
                       num_stages=args.stages or (SIM_STAGES if sim else GPU_STAGES))
    return args


def header(world, args):
    c = args.config
    tile = f"{c['block_M']}x{c['block_N']}x{c['block_K']} s{c['num_stages']} t{c['threads']}"
    if world.gpu:
        common.print_environment(timing=f"median of {args.rep} calls after {args.warmup} "
                                 "warm-up, CUDA events, barrier before each, max over ranks")
        print("ranks   : " + ", ".join(f"{r}={host}:cuda:{local}" for r, (host, local, _)
                                         in enumerate(world.places)) +
              f" ({world.places[0][2]})")
    else:
        print(f"simulated world of {world.size} ranks (threads of one process, CPU target): "
              "correctness only, the times mean nothing")
    print(f"our tile: {tile}")


def run(world, args):
    seed = int.from_bytes(os.urandom(4), "little") % (1 << 30)
    if world.gpu:
        t = torch.tensor([seed], device=world.device)
        world.dist.broadcast(t, 0)
        seed = int(t.item())
        common.strict_math()
    gens = {r: torch.Generator(device=world.device).manual_seed(seed + r) for r in world.ranks}
    if world.rank == 0:
        header(world, args)
        print(f"seed    : {seed}")
    rows = []
    for case in cases(args, world):
        if world.rank == 0:
            print(f"{case.op} {case.label}:", flush=True)
        faulthandler.dump_traceback_later(args.timeout, exit=True)  # a hang anywhere else
        rows.append(run_case(world, case, args, gens, args.config))
        world.sync()  # no rank frees its buffers while a peer's kernel may still read them
        faulthandler.cancel_dump_traceback_later()
        if world.gpu:
            torch.cuda.empty_cache()
    if world.rank == 0:
        print_tables(world, rows)
    bad = [r["case"].label for r in rows if r["ours"][0] in ("wrong", "failed")]
    return 1 if bad else 0


def main(argv=None):
    args = arguments(argv)
    world = None
    try:
        world = (Simulated(args.simulate, args.timeout) if args.simulate is not None
                 else Torchrun(args.timeout))
        status = run(world, args)
    except BaseException as e:  # noqa: BLE001 (any rank's failure ends the run, loudly)
        rank = world.rank if world is not None else os.environ.get("RANK", "?")
        print(f"rank {rank}: {type(e).__name__}: {e}", file=sys.stderr)
        if "device-side assert" in str(e) or isinstance(e, tl.DeviceAssertionError):
            print(f"rank {rank}: a device assert in our kernel (the device printed the line): "
                  "a T.wait that timed out is a peer that never signalled", file=sys.stderr)
        traceback.print_exc()
        os._exit(1)  # not the NCCL teardown, which would wait for peers that may be stuck
    if world.gpu:
        world.dist.destroy_process_group()
    sys.exit(status)


if __name__ == "__main__":
    main()
