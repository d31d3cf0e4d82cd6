"""2:4 structured-sparse GEMM on Hopper: ours next to dense cuBLAS and
torch's semi-structured sparse matmul.

Cases: C = A @ B at M = N = K = 8192 (`--sizes`), float16 and bfloat16,
A (M x K) 2:4 sparse (two random nonzeros in every group of four columns),
B (K x N) dense, C in the input type.

Contenders, all on the same random A and B:
- ours: kernels/gemm_sp.py on A compressed by
  tilelang_mlir.sparse.compress (A_sparse M x K/2, int16 metadata E; the
  compression is not timed), every config of CONFIGS tried and the fastest
  correct one reported (wgmma.mma_async.sp, TMA, warp specialization);
- cuBLAS: torch.matmul(A, B) on the dense A (zeros included);
- cuSPARSELt and CUTLASS: torch.mm(to_sparse_semi_structured(A), B), the
  backend chosen with SparseSemiStructuredTensor._FORCE_CUTLASS (the
  conversion is not timed), where this torch build and GPU run them.
Every contender is first checked against a float32 torch.matmul of A and B
(relative Frobenius error below 1e-2; a wrong result is reported, not
timed), then timed: median of CUDA-graph replays (plain calls where a graph
does not capture), L2 flushed before each. TFLOP/s are dense-equivalent:
2 M N K / time for every contender, the sparse ones included (they do half
of those multiplications).

    python benchmarks/gemm_sp.py [--sizes 8192] [--dtypes float16,bfloat16] [--no-autotune]

Without a GPU it compiles every kernel a run would use into the kernel cache
(TILELANG_MLIR_CACHE_DIR) and exits: `scripts/gpu_check.sh prepare-gemm_sp`
here, `scripts/gpu_check.sh run-gemm_sp` on the GPU machine.
"""

import os
import sys
import time

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels import gemm_sp as ours
from tilelang_mlir.sparse import compress

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)


TOL = 1e-2
FullRow = T.GemmWarpPolicy.FullRow

# block_K = 128: E's rows of a tile are 16 bytes, the least a TMA box takes.
# Shared memory per stage: block_M * 64 * 2 (A_sparse) + block_M * 16 (E)
# + 128 * block_N * 2 (B) bytes.
CONFIGS = [
    dict(ours.FAST),                                                                      # 164 KB
    dict(block_M=256, block_N=128, block_K=128, num_stages=3, threads=256, policy=FullRow),  # 204 KB
    dict(block_M=256, block_N=128, block_K=128, num_stages=2, threads=256, policy=FullRow),  # 136 KB + TMA store
    dict(block_M=128, block_N=128, block_K=128, num_stages=4, threads=256, policy=FullRow),  # 200 KB
    dict(block_M=128, block_N=128, block_K=128, num_stages=3, threads=256, policy=FullRow),  # 150 KB + TMA store
    # block_K = 64: E's 8-byte rows are loaded by the consumers (no TMA).
    dict(block_M=128, block_N=256, block_K=64, num_stages=3, threads=256, policy=FullRow),   # 123 KB
]


def describe(config):
    c = config
    text = f"{c['block_M']}x{c['block_N']}x{c['block_K']} s{c['num_stages']} t{c['threads']}"
    return text + (" FullRow" if c.get("policy") == FullRow else "")


class Case:
    def __init__(self, size, dtype):
        self.M = self.N = self.K = size
        self.dtype = dtype

    @property
    def label(self):
        return f"{self.M}x{self.N}x{self.K} {self.dtype}"

    @property
    def flop(self):  # dense-equivalent
        return 2 * self.M * self.N * self.K


def measure(fn, check):
    """common.measure in a CUDA graph, else (a backend that does not
    capture) over plain calls."""
    result = common.measure(fn, check)
    if result[0] == "failed":
        result = common.measure(fn, check, graph=False)
    return result


def torch_sparse(a, backend):
    """A as torch's semi-structured sparse tensor for `backend`
    ('cuSPARSELt' or 'CUTLASS'); raises where that does not run."""
    from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured

    SparseSemiStructuredTensor._FORCE_CUTLASS = backend == "CUTLASS"
    try:
        return to_sparse_semi_structured(a)
    finally:
        SparseSemiStructuredTensor._FORCE_CUTLASS = False


def run_case(case, kernels, generator):
    dt = getattr(torch, case.dtype)
    vals = torch.randn(case.M, case.K, device="cuda", generator=generator)
    keep = torch.rand(case.M, case.K // 4, 4, device="cuda", generator=generator).argsort(-1)[..., :2]
    mask = torch.zeros(case.M, case.K // 4, 4, dtype=torch.bool, device="cuda").scatter_(-1, keep, True)
    a = (vals * mask.reshape(case.M, case.K)).to(dt)
    b = torch.randn(case.K, case.N, device="cuda", generator=generator).to(dt)
    del vals, keep, mask
    ref = a.float() @ b.float()
    check = common.within(ref, TOL)
    a_sparse, e = compress(a)
    row = common.fastest({"case": case}, kernels, lambda kernel: kernel(a_sparse, e, b), check,
                         case.flop, describe, width=28, timer=measure)
    row["cuBLAS"] = measure(lambda: torch.matmul(a, b), check)
    for backend in ("cuSPARSELt", "CUTLASS"):
        try:
            a_sp = torch_sparse(a, backend)
        except Exception as ex:  # noqa: BLE001 (this torch build or GPU has no such backend)
            row[backend] = ("failed", None, common.reason(ex))
            continue
        row[backend] = measure(lambda: torch.mm(a_sp, b), check)
        del a_sp
    errs = ", ".join(f"{key} {row[key][2]:.1e}" for key in ("ours", "cuBLAS", "cuSPARSELt", "CUTLASS")
                     if isinstance(row[key][2], float))
    print(f"  errors: {errs}")
    del a, b, ref, a_sparse, e
    torch.cuda.empty_cache()
    return row


def print_table(rows):
    keys = ["ours", "cuBLAS", "cuSPARSELt", "CUTLASS"]
    print()
    print("| M=N=K | dtype | ours | cuBLAS (dense) | cuSPARSELt | CUTLASS sparse | ours / cuBLAS "
          "| ours / best sparse | our config |")
    print("|---|---|---|---|---|---|---|---|---|")
    notes = []
    for row in rows:
        case = row["case"]
        cells = [common.tflops(row[k], case.flop) for k in keys]
        vs_dense = common.speedup(row["ours"], row["cuBLAS"])
        vs_sparse = common.speedup(row["ours"], row["cuSPARSELt"], row["CUTLASS"])
        print(f"| {case.M} | {case.dtype} | {' | '.join(cells)} | {vs_dense} | {vs_sparse} "
              f"| {row['config']} |")
        notes += common.failure_notes(row, keys)
    common.print_notes(notes, "(TFLOP/s dense-equivalent: 2 M N K / time for every contender; "
                       "ratios > 1: ours faster)")


def main(argv=None):
    parser = common.arguments(__doc__, "ours with the library's FAST tile only")
    parser.add_argument("--sizes", default="8192", help="comma-separated M = N = K")
    parser.add_argument("--dtypes", default="float16,bfloat16")
    args = parser.parse_args(argv)

    gpu, target = common.init_cuda()
    todo = [Case(int(s), d) for s in args.sizes.split(",") for d in args.dtypes.split(",")]
    configs = [ours.FAST] if args.no_autotune else CONFIGS

    t0 = time.perf_counter()
    watch = common.CompilerWatch()
    tasks = [(case, config) for case in todo for config in configs]
    results = [common.try_compile(lambda: tl.compile(
        ours.gemm_sp(case.M, case.N, case.K, dtype=case.dtype, **config), out_idx=[3],
        target=target)) for case, config in tasks]
    compiled, failures, _ = common.collect_compiles(tasks, results, describe,
                                                    seconds=time.perf_counter() - t0)
    watch.check()
    if not gpu:
        common.finish_without_gpu(failures)
        return

    generator = common.start_measuring()
    print_table(common.run_cases(todo, lambda case: run_case(case, compiled[case.label],
                                                             generator)))


if __name__ == "__main__":
    common.run(main)
