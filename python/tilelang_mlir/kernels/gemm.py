"""Dense GEMM, C = A @ B, as a short tile program, with the autotuning
space for Hopper (block sizes, pipeline stages, threads, warp policy).

- `matmul`: A (M, K) @ B (K, N) in float16 or bfloat16 (float32
  accumulate); DEFAULT is a small tile that every target compiles, CONFIGS
  the Hopper tuning space.
- `matmul_nt`: C = A @ B^T with B given (N, K), K-major, as Hopper's float8
  tensor cores read it (float8 e4m3 in, bfloat16 out); FP8_CONFIGS is
  CONFIGS with block_K doubled. `matmul_nt_scaled`: the same with
  per-tensor float32 scales of A and B (torch._scaled_mm's tensor-wise
  scaling).
- `compile_configs`, `autotune`: compile every config of a space (the
  failures with a one-line `reason`), or tune over it with `tl.autotune`.
"""

import tilelang_mlir as tl
import tilelang_mlir.language as T

Square, FullRow = T.GemmWarpPolicy.Square, T.GemmWarpPolicy.FullRow


def matmul(M, N, K, block_M, block_N, block_K, num_stages=3, threads=128, policy=Square,
           dtype="float16", accum_dtype="float32", out_dtype=None):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), out_dtype or dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=8)  # blocks walk the output in panels (L2 reuse)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, policy=policy)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# The demo's configuration (small and known-good on every target).
DEFAULT = dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128)

# The autotuning space, for Hopper (sm_90a: 227 KB of shared memory a block,
# warpgroups of 128 threads). Shared memory per block is
# num_stages * (block_M + block_N) * block_K * 2 bytes for 16-bit inputs,
# plus block_M * block_N * 2 bytes where the compiler can stage the epilogue
# for TMA stores (it does when that fits: the first entry, 208 KB).
# The first entry is what `--no-autotune` runs take.
CONFIGS = [
    dict(block_M=128, block_N=256, block_K=64, num_stages=3, threads=256),                  # 144 KB
    dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256),                  # 192 KB
    dict(block_M=256, block_N=128, block_K=64, num_stages=3, threads=256, policy=FullRow),  # 144 KB
    dict(block_M=128, block_N=128, block_K=64, num_stages=4, threads=128),                  # 128 KB
    dict(block_M=128, block_N=128, block_K=64, num_stages=3, threads=256, policy=FullRow),  # 96 KB
    dict(block_M=64, block_N=256, block_K=64, num_stages=4, threads=128),                   # 160 KB
    dict(DEFAULT),                                                     # the demo's tile: 48 KB
]


@T.macro
def _nt_accumulate(A, B, C_local, bx, by, K, block_M, block_N, block_K, num_stages, policy,
                   dtype):
    """Inside a kernel: the tile (by, bx) of A @ B^T, B given (N, K),
    accumulated over K into the (block_M, block_N) fragment C_local."""
    A_shared = T.alloc_shared((block_M, block_K), dtype)
    B_shared = T.alloc_shared((block_N, block_K), dtype)
    T.use_swizzle(panel_size=8)
    T.clear(C_local)
    for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
        T.copy(A[by * block_M, k * block_K], A_shared)
        T.copy(B[bx * block_N, k * block_K], B_shared)
        T.gemm(A_shared, B_shared, C_local, transpose_B=True, policy=policy)


def matmul_nt(M, N, K, block_M, block_N, block_K, num_stages=3, threads=128,
              policy=Square, dtype="float8_e4m3", accum_dtype="float32", out_dtype=None):
    """C = A @ B^T with B given (N, K): the K-major operand Hopper's float8
    tensor cores need."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
             C: T.Tensor((M, N), out_dtype or "bfloat16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            _nt_accumulate(A, B, C_local, bx, by, K, block_M, block_N, block_K, num_stages,
                           policy, dtype)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def matmul_nt_scaled(M, N, K, block_M, block_N, block_K, num_stages=3, threads=128,
                     policy=Square, dtype="float8_e4m3", accum_dtype="float32",
                     out_dtype=None):
    """C = (A @ B^T) * scale_a * scale_b, `matmul_nt` with per-tensor
    float32 scales (SA, SB: one element each, on the device) applied to the
    accumulator before it is rounded to the output dtype, as
    torch._scaled_mm does with tensor-wise scales."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
             SA: T.Tensor((1,), "float32"), SB: T.Tensor((1,), "float32"),
             C: T.Tensor((M, N), out_dtype or "bfloat16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            _nt_accumulate(A, B, C_local, bx, by, K, block_M, block_N, block_K, num_stages,
                           policy, dtype)
            scale = SA[0] * SB[0]
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = C_local[i, j] * scale
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# float8: the same tiles with twice the K depth (the same shared memory, and
# 128-byte rows of K, the widest swizzle).
FP8_CONFIGS = [dict(c, block_K=2 * c["block_K"]) for c in CONFIGS]


def describe(config):
    """'128x256x64 s3 t256' (plus the warp policy where it is not Square)."""
    c = config
    text = f"{c['block_M']}x{c['block_N']}x{c['block_K']} s{c['num_stages']} t{c['threads']}"
    policy = c.get("policy", Square)
    return text if policy == Square else f"{text} {policy.name}"


def reason(exc):
    """One line saying why a config failed (the first line of the error,
    without the file:line prefix of the tile program)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if ": error: " in text:
        text = text.split(": error: ", 1)[1]
    return text[:200]


def compile_configs(M, N, K, dtype="float16", target="auto", configs=None, out_dtype=None,
                    program=matmul, log=print):
    """Compiles `program(M, N, K, **config, dtype=, out_dtype=)` for every
    config. Returns ([(config, kernel)], [(config, reason)]): a config that
    does not compile (shared memory too large, unsupported) is skipped with
    a one-line reason."""
    kernels, failures = [], []
    for config in CONFIGS if configs is None else configs:
        try:
            func = program(M, N, K, **config, dtype=dtype, out_dtype=out_dtype)
            kernels.append((config, tl.compile(func, out_idx=[2], target=target)))
        except Exception as e:  # noqa: BLE001 (any compile failure skips the config)
            failures.append((config, reason(e)))
            log(f"  {describe(config):28} skipped: {reason(e)}")
    return kernels, failures


def autotune(M, N, K, dtype="float16", target="auto", configs=None, out_dtype=None,
             program=matmul, trans_B=False, warmup=10, rep=50, log=print, cache=True):
    """`tl.autotune` over `configs` (default CONFIGS): compiles every config
    in parallel processes, checks each on random inputs against a float32
    reference (relative Frobenius error below 1e-2, 5e-2 for float8), times
    the correct ones (median device time of CUDA-graph replays, L2 flushed)
    and returns the fastest as (config, kernel, milliseconds). Logs one line
    per config; the winner is cached on disk (`cache=False`: tune anyway).

    `trans_B`: the program takes B as (N, K) and computes A @ B^T.
    """
    tol = 5e-2 if "float8" in dtype else 1e-2

    def reference(a, b):
        return a.float() @ (b.float().T if trans_B else b.float())

    def relative_error(c, ref):
        err = ((c.float() - ref).norm() / ref.norm()).item()
        if not err < tol:
            raise AssertionError(f"relative error {err:.2e}")
        return err

    tuner = tl.autotune(configs=list(CONFIGS if configs is None else configs), warmup=warmup,
                        rep=rep, ref_prog=reference, manual_check_prog=relative_error,
                        cache=cache, out_idx=[2], target=target)(program)
    try:
        kernel = tuner(M, N, K, dtype=dtype, out_dtype=out_dtype)
    except tl.AutotuneError as e:
        _log_configs(e.skipped, [], M, N, K, log)
        stages = {s["stage"] for s in e.skipped}
        what = "compiled" if stages == {"compile"} else "ran correctly"
        raise RuntimeError(f"no configuration of the {M}x{N}x{K} {dtype} GEMM {what}") from e
    result = kernel.autotune_result
    _log_configs(result.skipped, result.timings, M, N, K, log)
    if result.cache_hit:
        log(f"  (the autotuning cache's winner, tuned earlier: {result.cache_path})")
    return result.best_config, kernel, result.best_latency


def _log_configs(skipped, timings, M, N, K, log):
    """One line per config, in config order, as `autotune` logs them."""
    words = {"compile": "skipped", "check": "wrong", "run": "failed"}
    rows = [(s["index"], f"  {describe(s['config']):28} {words[s['stage']]}: {s['reason']}")
            for s in skipped]
    for t in timings:
        ms = t["latency"]
        error = f"  (error {t['check']:.1e})" if isinstance(t["check"], float) else ""
        rows.append((t["index"], f"  {describe(t['config']):28} {ms:8.3f} ms  "
                                 f"{2 * M * N * K / ms / 1e9:7.1f} TFLOP/s{error}"))
    for _, line in sorted(rows, key=lambda r: r[0]):
        log(line)
