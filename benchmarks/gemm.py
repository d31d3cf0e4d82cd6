"""GEMM on Hopper: ours next to cuBLAS (torch) and an autotuned Triton kernel.

Cases: float16 and bfloat16 in (float32 accumulate, output in the input
dtype) at M=N=K in {4096, 8192} and the LLM shapes (M, N, K) in
{(8192, 8192, 1024), (4096, 28672, 8192), (8192, 1024, 28672)}; float8 e4m3
in, bfloat16 out at 8192^3 (C = A @ B^T with B given (N, K), K-major, as
Hopper's float8 tensor cores read it).

Contenders: ours (`matmul` of tilelang_mlir.kernels.gemm, autotuned over
its CONFIGS; for float8 its K-major `matmul_nt` over FP8_CONFIGS, the same
space with block_K doubled), torch.matmul (cuBLAS; float8: torch._scaled_mm with unit
scales and fast accumulation, as Triton and wgmma accumulate) and a Triton
kernel written here, autotuned over six Hopper configs. Every contender is
first checked on fresh random inputs (relative Frobenius error against a
float32 reference without TF32: below 1e-2, 5e-2 for float8; a wrong result
is reported, not timed), then timed: median device time of CUDA-graph
replays after warm-up, L2 flushed before each. Prints one table.

    python benchmarks/gemm.py [--quick] [--shapes 4096,8192x1024x28672] [--dtypes float16]
                              [--no-autotune]

Without a GPU it compiles every kernel the full run would use (every config
of every case) into the kernel cache and exits: `scripts/gpu_check.sh
prepare-gemm` here, `scripts/gpu_check.sh run-gemm` on the GPU machine.
"""

import os
import sys
import time

import torch

from tilelang_mlir.compiler.cuda import resource_report
from tilelang_mlir.kernels import gemm as ours
from tilelang_mlir.runtime.cuda import NoCUDADevice

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402 (benchmarks/common.py)

try:  # Triton is on the GPU machine only
    import triton
    import triton.language as tlang
except ImportError:
    triton = None

describe = ours.describe

SQUARE = [(4096, 4096, 4096), (8192, 8192, 8192)]
LLM = [(8192, 8192, 1024), (4096, 28672, 8192), (8192, 1024, 28672)]
FP8 = "float8_e4m3"
DEVICE = "cuda"
SIDECAR = "gemm_benchmark.json"  # in the kernel cache: commit and compile failures of the prepare


class Case:
    def __init__(self, M, N, K, dtype):
        self.M, self.N, self.K, self.dtype = M, N, K, dtype
        self.fp8 = dtype == FP8
        self.out_dtype = "bfloat16" if self.fp8 else dtype
        self.program = ours.matmul_nt if self.fp8 else ours.matmul
        self.configs = ours.FP8_CONFIGS if self.fp8 else ours.CONFIGS
        self.tol = 5e-2 if self.fp8 else 1e-2

    @property
    def shape(self):
        return f"{self.M}x{self.N}x{self.K}"

    @property
    def label(self):
        return f"{self.shape} {self.dtype}"

    @property
    def flop(self):
        return 2 * self.M * self.N * self.K


def cases(args):
    shapes = SQUARE if args.quick else SQUARE + LLM
    result = [Case(*s, dt) for s in shapes for dt in ("float16", "bfloat16")]
    if not args.quick:
        result.append(Case(8192, 8192, 8192, FP8))
    if args.shapes:
        wanted = set()
        for item in args.shapes.split(","):
            dims = [int(d) for d in item.strip().lower().split("x")]
            wanted.add(tuple(dims * 3 if len(dims) == 1 else dims))
        result = [c for c in result if (c.M, c.N, c.K) in wanted]
    if args.dtypes:
        names = {"fp16": "float16", "bf16": "bfloat16", "fp8": FP8, "float8": FP8}
        wanted = {names.get(d.strip(), d.strip()) for d in args.dtypes.split(",")}
        result = [c for c in result if c.dtype in wanted]
    return result


# ---------------------------------------------------------------------------
# Triton: the classic tiled matmul (grouped block order, fp32 accumulator),
# autotuned over a handful of Hopper configs.
# ---------------------------------------------------------------------------

if triton is not None:
    def _triton_configs(block_k):
        shapes = [(128, 256, 8, 3), (128, 256, 8, 4), (256, 128, 8, 3),
                  (128, 128, 4, 4), (128, 128, 8, 3), (64, 256, 4, 4)]
        return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": block_k, "GROUP_M": 8},
                              num_warps=w, num_stages=s) for m, n, w, s in shapes]

    def _triton_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                              stride_bn, stride_cm, stride_cn, BLOCK_M: tlang.constexpr,
                              BLOCK_N: tlang.constexpr, BLOCK_K: tlang.constexpr,
                              GROUP_M: tlang.constexpr):
        pid = tlang.program_id(0)
        num_pid_m = tlang.cdiv(M, BLOCK_M)
        num_pid_n = tlang.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_M * num_pid_n
        first_pid_m = (pid // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_M + tlang.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tlang.arange(0, BLOCK_N)) % N
        offs_k = tlang.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
        acc = tlang.zeros((BLOCK_M, BLOCK_N), dtype=tlang.float32)
        for k in range(0, tlang.cdiv(K, BLOCK_K)):
            a = tlang.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tlang.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = tlang.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c = acc.to(c_ptr.dtype.element_ty)
        offs_cm = pid_m * BLOCK_M + tlang.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tlang.arange(0, BLOCK_N)
        c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
        tlang.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))

    _TRITON = {bits: triton.autotune(configs=_triton_configs(64 if bits == 16 else 128),
                                     key=["M", "N", "K"])(triton.jit(_triton_matmul_kernel))
               for bits in (16, 8)}

    def triton_matmul(a, b, out_dtype):
        """C = a @ b for a (M, K) and b (K, N) of any strides."""
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=out_dtype)
        kernel = _TRITON[8 if a.element_size() == 1 else 16]

        def grid(meta):
            return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1))
        return c

    def triton_best(a):
        return common.triton_config(_TRITON[8 if a.element_size() == 1 else 16],
                                    "BLOCK_M", "BLOCK_N", "BLOCK_K")


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def measure(fn, ref, tol):
    """common.measure against a float32 reference with tolerance tol."""
    return common.measure(fn, common.within(ref, tol))


def run_case(case, ours_configs, not_compiled, generator, target="cuda"):
    """Autotunes ours, then checks and times every contender on one set of
    fresh random inputs. Returns the table row's cells."""
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16,
          FP8: torch.float8_e4m3fn}[case.dtype]
    M, N, K = case.M, case.N, case.K
    a = torch.randn(M, K, device=DEVICE, generator=generator).to(dt)
    if case.fp8:
        b_nk = torch.randn(N, K, device=DEVICE, generator=generator).to(dt)
        b = b_nk.t()  # (K, N), column-major
        one = torch.ones((), device=DEVICE, dtype=torch.float32)
        cublas = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,  # noqa: E731
                                          out_dtype=torch.bfloat16, use_fast_accum=True)
    else:
        b = b_nk = torch.randn(K, N, device=DEVICE, generator=generator).to(dt)
        cublas = lambda: torch.matmul(a, b)  # noqa: E731
    ref = a.float() @ b.float()
    out_torch = torch.bfloat16 if case.fp8 else dt
    row = {"case": case}

    if ours_configs:
        try:
            config, kernel, _ = ours.autotune(
                M, N, K, case.dtype, target, configs=ours_configs, out_dtype=case.out_dtype,
                program=case.program, trans_B=case.fp8, warmup=10, rep=50,
                log=lambda line: print("   " + line))
            row["ours"] = measure(lambda: kernel(a, b_nk), ref, case.tol)
            row["config"] = describe(config)
        except NoCUDADevice:
            raise
        except Exception as e:  # noqa: BLE001 (no config ran correctly: reported in the row)
            row["ours"] = ("failed", None, ours.reason(e))
            row["config"] = "none ran correctly"
    else:
        row["ours"] = ("failed", None, f"not compiled: {not_compiled}")
    row["cublas"] = measure(cublas, ref, case.tol)
    if triton is None:
        row["triton"] = ("n/a", None, "triton is not installed")
    else:
        row["triton"] = measure(lambda: triton_matmul(a, b, out_torch), ref, case.tol)
        row["triton_config"] = triton_best(a) if row["triton"][0] == "ok" else ""
    if case.fp8:  # cuBLAS with float32 promotion of the accumulator, for the record
        precise = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,  # noqa: E731
                                           out_dtype=torch.bfloat16, use_fast_accum=False)
        row["cublas_precise"] = measure(precise, ref, case.tol)
    errs = ", ".join(f"{name} {row[key][2]:.1e}" for name, key in
                     (("ours", "ours"), ("cuBLAS", "cublas"), ("Triton", "triton"))
                     if isinstance(row[key][2], float))
    print(f"  errors: {errs}")
    del a, b, b_nk, ref
    torch.cuda.empty_cache()
    return row


def print_table(rows):
    print()
    print("| shape (MxNxK) | dtype | ours TFLOP/s | cuBLAS TFLOP/s | Triton TFLOP/s | ours / cuBLAS"
          " | our config | Triton config |")
    print("|---|---|---|---|---|---|---|---|")
    notes = []
    for row in rows:
        case = row["case"]
        ours, cublas = row["ours"], row["cublas"]
        print(f"| {case.shape} | {case.dtype} | {common.tflops(ours, case.flop)} | "
              f"{common.tflops(cublas, case.flop)} | {common.tflops(row['triton'], case.flop)} | "
              f"{common.speedup(ours, cublas)} | {common.config_cell(row)} | "
              f"{row.get('triton_config', '')} |")
        notes += common.failure_notes(row, ("cublas", "triton"),
                                      {"cublas": "cuBLAS", "triton": "Triton"})
        if "cublas_precise" in row:
            notes.append(f"{case.label}: cuBLAS without fast accumulation: "
                         f"{common.tflops(row['cublas_precise'], case.flop)} TFLOP/s")
    common.print_notes(notes)


def _compile_task(task):
    """Compiles one (case, config, target) into the in-memory and disk
    caches; returns (None, reason it failed or None, bytes of registers
    spilled): the kernel itself is compiled again from the cache by the
    autotuner."""
    case, config, target = task
    kernels, failed = ours.compile_configs(case.M, case.N, case.K, case.dtype, target,
                                              [config], case.out_dtype, case.program,
                                              log=lambda line: None)
    if failed:
        return None, failed[0][1], 0
    report = resource_report(getattr(kernels[0][1], "ptxas_info", "") or "")
    return None, None, report["spill_stores"] + report["spill_loads"]


# ---------------------------------------------------------------------------


def main(argv=None):
    parser = common.arguments(__doc__, "ours with the first config only", jobs=True)
    parser.add_argument("--quick", action="store_true", help="only 4096^3 and 8192^3, fp16/bf16")
    parser.add_argument("--shapes", help="comma-separated MxNxK (or N for N^3) to keep")
    parser.add_argument("--dtypes", help="comma-separated dtypes to keep (float16, bfloat16, "
                                         "float8_e4m3)")
    args = parser.parse_args(argv)

    gpu, target = common.init_cuda()
    todo = cases(args)
    prepared = common.read_sidecar(SIDECAR)
    known = prepared.get("failures", {})

    # 1. Compile every kernel the run uses (all of it from the cache on a
    #    machine without the compiler; here, in parallel processes).
    t0 = time.perf_counter()
    watch = common.CompilerWatch()
    tasks = [(case, config, target) for case in todo
             for config in (case.configs[:1] if args.no_autotune else case.configs)]
    results = common.compile_parallel(_compile_task, tasks, common.compile_jobs(gpu, args.jobs))
    compiled, failures, first_failure = common.collect_compiles(
        tasks, results, describe, known, time.perf_counter() - t0)
    watch.check()
    if not gpu:
        common.finish_without_gpu(failures, SIDECAR)
        return

    # 2. Measure.
    generator = common.start_measuring(
        prepared, f"median of {common.REP} CUDA-graph replays after {common.WARMUP} warm-up, "
        "L2 flushed before each; TF32 and reduced-precision reductions off")
    print_table(common.run_cases(todo, lambda case: run_case(
        case, [config for config, _ in compiled[case.label]], first_failure.get(case.label),
        generator, target)))


if __name__ == "__main__":
    common.run(main)
