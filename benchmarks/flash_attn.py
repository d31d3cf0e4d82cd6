"""FlashAttention forward on Hopper: ours next to torch's
scaled_dot_product_attention backends and a Triton FlashAttention-2 kernel.

Cases: B=8, H=32, S=4096, D in {64, 128}, causal and not, float16,
(batch, heads, seq, dim) tensors.

Contenders: ours (examples/attention/flash_attn.py, every config of its
CONFIGS tried and the fastest kept; its first config once more without the
warpgroups' turns at the gemms, for comparison), torch.nn.functional.
scaled_dot_product_attention with each backend that runs (CUDNN_ATTENTION,
FLASH_ATTENTION, EFFICIENT_ATTENTION), and a Triton FlashAttention-2-style
kernel written here (online softmax in exp2, causal blocks split into the
unmasked part and the diagonal), autotuned over a few block/warp/stage
configs. Every contender is first checked on fresh random inputs against a
float32 reference computed one batch at a time (relative Frobenius error of
O below 1e-2; ours also returns the log-sum-exp, checked below 1e-3); a
wrong result is reported, not timed. Then each is timed: median device time
of CUDA-graph replays after warm-up, L2 flushed before each. TFLOP/s count
4 B H S^2 D, halved for causal. Prints one table with the ratio of ours to
cuDNN.

    python benchmarks/flash_attn.py [--dims 64,128] [--causal both|yes|no] [--no-autotune]
                                    [--seq 4096] [--batch 8] [--heads 32]

Without a GPU it compiles every kernel the run would use (every config of
every case) into the kernel cache and exits: `scripts/gpu_check.sh
prepare-attn` here, `scripts/gpu_check.sh run-attn` on the GPU machine.
"""

import argparse
import importlib.util
import json
import math
import os
import subprocess
import time

import numpy as np
import torch
import torch.nn.functional as F

import tilelang_mlir as tl
from tilelang_mlir.compiler.compile import _compiler_id, offline
from tilelang_mlir.compiler.cuda import resource_report
from tilelang_mlir.runtime.cuda import NoCUDADevice
from tilelang_mlir.runtime.profiler import bench_cuda

try:  # Triton is on the GPU machine only
    import triton
    import triton.language as tlang
except ImportError:
    triton = None

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # older torch
    SDPBackend = sdpa_kernel = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_example():
    path = os.path.join(ROOT, "examples", "attention", "flash_attn.py")
    spec = importlib.util.spec_from_file_location("flash_attn_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load_example()
# The example's configs, and its first with warpgroup turns at the gemms
# (pass config tl.enable_pingpong, off by default), to show what the turns do.
CONFIGS = example.CONFIGS + [dict(example.CONFIGS[0], pingpong=True)]


def describe(config):
    text = example.describe(config)
    return f"{text} pingpong" if config.get("pingpong", False) else text


def pass_configs(config):
    return {"tl.enable_pingpong": True} if config.get("pingpong", False) else {}

WARMUP, REP = 10, 50
DEVICE = "cuda"
TOL, LSE_TOL = 1e-2, 1e-3
SIDECAR = "flash_attn_benchmark.json"  # in the kernel cache: commit and compile failures
SDPA_BACKENDS = ["CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"]


class Case:
    def __init__(self, batch, heads, seq, dim, causal, dtype="float16"):
        self.batch, self.heads, self.seq, self.dim = batch, heads, seq, dim
        self.causal, self.dtype = causal, dtype

    @property
    def label(self):
        return (f"B{self.batch} H{self.heads} S{self.seq} D{self.dim} "
                f"{'causal' if self.causal else 'full'} {self.dtype}")

    @property
    def flop(self):
        return 4 * self.batch * self.heads * self.seq ** 2 * self.dim / (2 if self.causal else 1)

    def program(self, config):
        tile = {k: v for k, v in config.items() if k != "pingpong"}
        return example.flash_attn(self.batch, self.heads, self.seq, self.dim, self.causal,
                                  dtype=self.dtype, **tile)


def cases(args):
    dims = [int(d) for d in args.dims.split(",")]
    causal = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    return [Case(args.batch, args.heads, args.seq, d, c) for d in dims for c in causal]


# ---------------------------------------------------------------------------
# Triton: FlashAttention-2 forward (one program per BLOCK_M query rows of one
# (batch, head); K/V tiles streamed; running max and sum in exp2 units).
# ---------------------------------------------------------------------------

if triton is not None:
    @triton.jit
    def _fa_tile_loop(acc, l_i, m_i, q, k_base, v_base, offs_m, offs_n, offs_d, lo, hi,
                      qk_scale, HEAD_DIM: tlang.constexpr, BLOCK_N: tlang.constexpr,
                      MASKED: tlang.constexpr):
        for start_n in range(lo, hi, BLOCK_N):
            start_n = tlang.multiple_of(start_n, BLOCK_N)
            cols = start_n + offs_n
            k = tlang.load(k_base + cols[None, :] * HEAD_DIM + offs_d[:, None])
            s = tlang.dot(q, k) * qk_scale
            if MASKED:
                s = tlang.where(offs_m[:, None] >= cols[None, :], s, float("-inf"))
            m_new = tlang.maximum(m_i, tlang.max(s, 1))
            p = tlang.math.exp2(s - m_new[:, None])
            alpha = tlang.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tlang.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tlang.load(v_base + cols[:, None] * HEAD_DIM + offs_d[None, :])
            acc = tlang.dot(p.to(v.dtype), v, acc)
            m_i = m_new
        return acc, l_i, m_i

    def _triton_configs():
        shapes = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 128, 8, 3),
                  (64, 64, 4, 4), (128, 32, 4, 4)]
        return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s)
                for m, n, w, s in shapes]

    @triton.autotune(configs=_triton_configs(), key=["SEQ", "HEAD_DIM", "CAUSAL"])
    @triton.jit
    def _fa_fwd(Q, K, V, O, qk_scale, SEQ, HEAD_DIM: tlang.constexpr, CAUSAL: tlang.constexpr,
                BLOCK_M: tlang.constexpr, BLOCK_N: tlang.constexpr):
        start_m = tlang.program_id(0)
        head = tlang.program_id(1).to(tlang.int64)  # batch * heads + head
        base = head * SEQ * HEAD_DIM
        offs_m = start_m * BLOCK_M + tlang.arange(0, BLOCK_M)
        offs_n = tlang.arange(0, BLOCK_N)
        offs_d = tlang.arange(0, HEAD_DIM)
        q = tlang.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        m_i = tlang.full([BLOCK_M], float("-inf"), dtype=tlang.float32)
        l_i = tlang.zeros([BLOCK_M], dtype=tlang.float32)
        acc = tlang.zeros([BLOCK_M, HEAD_DIM], dtype=tlang.float32)
        if CAUSAL:
            # Tiles left of the diagonal block need no mask; BLOCK_N divides BLOCK_M.
            diag = start_m * BLOCK_M
            acc, l_i, m_i = _fa_tile_loop(acc, l_i, m_i, q, K + base, V + base, offs_m, offs_n,
                                          offs_d, 0, diag, qk_scale, HEAD_DIM, BLOCK_N, False)
            acc, l_i, m_i = _fa_tile_loop(acc, l_i, m_i, q, K + base, V + base, offs_m, offs_n,
                                          offs_d, diag, diag + BLOCK_M, qk_scale, HEAD_DIM,
                                          BLOCK_N, True)
        else:
            acc, l_i, m_i = _fa_tile_loop(acc, l_i, m_i, q, K + base, V + base, offs_m, offs_n,
                                          offs_d, 0, SEQ, qk_scale, HEAD_DIM, BLOCK_N, False)
        acc = acc / l_i[:, None]
        tlang.store(O + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
                    acc.to(O.dtype.element_ty))

    def triton_attention(q, k, v, causal):
        """q, k, v contiguous (B, H, S, D); S a multiple of 128."""
        B, H, S, D = q.shape
        o = torch.empty_like(q)
        qk_scale = math.log2(math.e) / math.sqrt(D)

        def grid(meta):
            return (triton.cdiv(S, meta["BLOCK_M"]), B * H)

        _fa_fwd[grid](q, k, v, o, qk_scale, S, HEAD_DIM=D, CAUSAL=causal)
        return o

    def triton_best():
        cfg = _fa_fwd.best_config
        if cfg is None:
            return "?"
        kw = cfg.kwargs
        return f"{kw['BLOCK_M']}x{kw['BLOCK_N']} w{cfg.num_warps} s{cfg.num_stages}"


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def reference(q, k, v, causal):
    """(O, LSE) in float32, one batch element at a time (the scores of all
    of them would take 17 GB)."""
    o = torch.empty(q.shape, device=q.device, dtype=torch.float32)
    lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
    S = q.shape[2]
    mask = torch.ones(S, S, device=q.device, dtype=torch.bool).triu(1) if causal else None
    for b in range(q.shape[0]):
        s = q[b].float() @ k[b].float().transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            s.masked_fill_(mask, float("-inf"))
        lse[b] = torch.logsumexp(s, dim=-1)
        o[b] = torch.softmax(s, dim=-1) @ v[b].float()
        del s
    return o, lse


def rel_error(out, ref):
    return ((out.float() - ref).norm() / ref.norm()).item()


def device_ms(fn):
    return float(np.median(bench_cuda(fn, warmup=WARMUP, rep=REP, flush_l2=True, cuda_graph=True)))


def _reason(exc):
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text[:200]


def measure(fn, check):
    """('ok', ms, err) after check(fn()) returned an error below tolerance
    (it raises AssertionError otherwise); ('wrong', None, err) or ('failed',
    None, reason)."""
    try:
        err = check(fn())
    except AssertionError as e:
        return "wrong", None, e.args[0]
    except NoCUDADevice:
        raise
    except Exception as e:  # noqa: BLE001 (a failing contender is reported, the run goes on)
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass
        return "failed", None, _reason(e)
    try:
        return "ok", device_ms(fn), err
    except Exception as e:  # noqa: BLE001
        return "failed", None, _reason(e)


def check_o(o_ref):
    def check(o):
        err = rel_error(o, o_ref)
        if not err < TOL:
            raise AssertionError(err)
        return err
    return check


def check_ours(o_ref, lse_ref):
    def check(result):
        o, lse = result
        err, lse_err = rel_error(o, o_ref), rel_error(lse, lse_ref)
        if not (err < TOL and lse_err < LSE_TOL):
            raise AssertionError(max(err, lse_err))
        return err
    return check


def sdpa(backend, q, k, v, causal):
    def fn():
        with sdpa_kernel([getattr(SDPBackend, backend)]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return fn


def run_case(case, kernels, not_compiled, generator):
    """Checks and times every contender on one set of fresh random inputs;
    ours: every compiled config, the fastest kept. Returns the table row."""
    dt = getattr(torch, case.dtype)
    shape = (case.batch, case.heads, case.seq, case.dim)
    q, k, v = (torch.randn(shape, device=DEVICE, generator=generator).to(dt) for _ in range(3))
    o_ref, lse_ref = reference(q, k, v, case.causal)
    row = {"case": case}

    results = []
    for config, kernel in kernels:
        result = measure(lambda: kernel(q, k, v), check_ours(o_ref, lse_ref))
        status, ms, detail = result
        text = (f"{ms:8.3f} ms {case.flop / ms / 1e9:6.0f} TFLOP/s (error {detail:.1e})"
                if status == "ok" else f"{status}: {detail}")
        print(f"   ours {describe(config):20} {text}")
        results.append((config, result))
    ok = [r for r in results if r[1][0] == "ok"]
    if ok:
        config, row["ours"] = min(ok, key=lambda r: r[1][1])
        row["config"] = describe(config)
    elif results:
        row["ours"] = results[0][1]
        row["config"] = "none ran correctly"
    else:
        row["ours"] = ("failed", None, f"not compiled: {not_compiled}")
    for backend in SDPA_BACKENDS:
        if sdpa_kernel is None:
            row[backend] = ("n/a", None, "torch.nn.attention is missing")
            continue
        row[backend] = measure(sdpa(backend, q, k, v, case.causal), check_o(o_ref))
    if triton is None:
        row["triton"] = ("n/a", None, "triton is not installed")
    else:
        row["triton"] = measure(lambda: triton_attention(q, k, v, case.causal), check_o(o_ref))
        row["triton_config"] = triton_best() if row["triton"][0] == "ok" else ""
    errs = ", ".join(f"{name} {row[key][2]:.1e}" for name, key in
                     [("ours", "ours")] + [(b.split("_")[0].lower(), b) for b in SDPA_BACKENDS] +
                     [("triton", "triton")] if isinstance(row[key][2], float))
    print(f"  errors: {errs}")
    del q, k, v, o_ref, lse_ref
    torch.cuda.empty_cache()
    return row


def tflops(result, flop):
    status, ms, detail = result
    if status == "ok":
        return f"{flop / ms / 1e9:.0f}"
    if status == "wrong":
        return f"wrong ({detail:.1e})"
    if status == "n/a":
        return "n/a"
    return "failed"


def print_table(rows):
    print()
    print("| D | causal | ours | cuDNN | FA2 (torch) | mem-efficient | Triton | ours / cuDNN "
          "| our config | Triton config |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for row in rows:
        case = row["case"]
        ours, cudnn = row["ours"], row["CUDNN_ATTENTION"]
        ratio = f"{cudnn[1] / ours[1]:.2f}x" if ours[0] == "ok" and cudnn[0] == "ok" else "—"
        config = row.get("config", "")
        if ours[0] == "failed":
            config = f"{config}: {ours[2]}" if config else ours[2]
        cells = [tflops(row[key], case.flop) for key in
                 ("ours", "CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "triton")]
        print(f"| {case.dim} | {'yes' if case.causal else 'no'} | {' | '.join(cells)} | {ratio} "
              f"| {config} | {row.get('triton_config', '')} |")
        for key in SDPA_BACKENDS + ["triton"]:
            if row[key][0] == "failed":
                notes.append(f"{case.label}: {key} failed: {row[key][2]}")
    print("(TFLOP/s; ratio = ours / cuDNN in TFLOP/s)")
    for note in notes:
        print(f"  {note}")


# ---------------------------------------------------------------------------
# Compiling (here, or from the kernel cache on a machine without the compiler)
# ---------------------------------------------------------------------------

_TASKS = []  # (case, config, target) of compile_all, inherited by forked workers


def _compile_task(i):
    """Compiles task i; returns (kernel or None, reason it failed, spilled bytes)."""
    case, config, target = _TASKS[i]
    try:
        kernel = tl.compile(case.program(config), out_idx=[3, 4], target=target,
                            pass_configs=pass_configs(config))
    except Exception as e:  # noqa: BLE001 (a config that does not compile is skipped)
        text = _reason(e)
        if ": error: " in text:
            text = text.split(": error: ", 1)[1]
        return None, text, 0
    report = resource_report(getattr(kernel, "ptxas_info", "") or "")
    return kernel, None, report["spill_stores"] + report["spill_loads"]


def compile_all(tasks, jobs):
    """Compiles every (case, config, target); `jobs` > 1 compiles in forked
    processes (to fill the disk cache only: kernels stay in the workers)."""
    _TASKS[:] = tasks
    if jobs <= 1 or len(tasks) <= 1:
        return [_compile_task(i) for i in range(len(tasks))]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(min(jobs, len(tasks)),
                             mp_context=multiprocessing.get_context("fork")) as pool:
        return [(None, *r) for r in pool.map(_strip_task, range(len(tasks)))]


def _strip_task(i):
    """_compile_task without the kernel (it lives in the worker)."""
    return _compile_task(i)[1:]


def _git_commit():
    try:
        out = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _sidecar_path():
    d = os.environ.get("TILELANG_MLIR_CACHE_DIR")
    return os.path.join(d, SIDECAR) if d else None


def _read_sidecar():
    try:
        with open(_sidecar_path()) as f:
            return json.load(f)
    except (TypeError, OSError, ValueError):
        return {}


def _write_sidecar(failures):
    path = _sidecar_path()
    if path is None:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"commit": _git_commit(), "prepared": time.strftime("%Y-%m-%d %H:%M"),
                   "arch": os.environ.get("TILELANG_MLIR_CUDA_ARCH"), "failures": failures}, f,
                  indent=1)


def print_environment(prepared):
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        gpu = smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        gpu = f"{torch.cuda.get_device_name()} (driver unknown)"
    commit = _git_commit() or f"{prepared.get('commit', 'unknown')} (as prepared)"
    print(f"date    : {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"commit  : {commit}")
    print(f"gpu     : {gpu}")
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    print(f"torch   : {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {cudnn}), triton "
          f"{triton.__version__ if triton is not None else 'not installed'}")
    print(f"timing  : median of {REP} CUDA-graph replays after {WARMUP} warm-up, L2 flushed "
          "before each")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", default="128,64", help="comma-separated head dims")
    parser.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--no-autotune", action="store_true",
                        help="ours with the first config only")
    parser.add_argument("--jobs", type=int, default=0,
                        help="compile processes without a GPU (default: one per core)")
    args = parser.parse_args(argv)

    try:
        torch.cuda.init()
    except Exception:  # noqa: BLE001
        pass
    gpu = torch.cuda.is_available()
    # Without a GPU, compile for TILELANG_MLIR_CUDA_ARCH or else sm_90a (the
    # target string, part of the cache key, is the one a Hopper GPU gets).
    target = "cuda" if gpu or os.environ.get("TILELANG_MLIR_CUDA_ARCH") else "cuda:sm_90a"
    todo = cases(args)
    configs = CONFIGS[:1] if args.no_autotune else CONFIGS
    prepared = _read_sidecar()
    known = prepared.get("failures", {})

    # 1. Compile every kernel the run uses (from the cache where there is no
    #    compiler; here, in parallel processes).
    t0 = time.perf_counter()
    compiler = None if offline() else _compiler_id()
    tasks = [(case, config, target) for case in todo for config in configs]
    jobs = 1 if gpu else (args.jobs or os.cpu_count() or 1)
    results = compile_all(tasks, jobs)
    compiled = {case.label: [] for case in todo}
    failures, first_failure, spills = {}, {}, []
    for (case, config, _), (kernel, why, spilled) in zip(tasks, results):
        key = f"{case.label} {describe(config)}"
        if why is None:
            compiled[case.label].append((config, kernel))
            if spilled:
                spills.append(f"{key} ({spilled} B)")
            continue
        if "not in the kernel cache" in why and key in known:
            why = f"{known[key]} (at prepare)"
        failures[key] = why
        first_failure.setdefault(case.label, why)
    count = sum(len(v) for v in compiled.values())
    print(f"compiled {count} kernels for {len(todo)} cases in {time.perf_counter() - t0:.0f} s"
          f"{f'; {len(failures)} configs did not compile:' if failures else ''}")
    for key, why in failures.items():
        print(f"  {key}: {why}")
    if spills:
        print(f"{len(spills)} kernels spill registers (ptxas): {'; '.join(spills)}")
    if compiler is not None and _compiler_id() != compiler:
        raise SystemExit("the compiler was rebuilt or edited during this run: its kernels are "
                         "keyed to different compiler ids; run it again")
    if not gpu:
        if offline():
            missing = sum("kernel cache" in why for why in failures.values())
            if missing:
                raise SystemExit(f"no GPU and no compiler here, and {missing} kernels are not in "
                                 "the kernel cache (TILELANG_MLIR_CACHE_DIR)")
            print("no GPU here, no compiler: every kernel was found in the kernel cache")
            return
        _write_sidecar(failures)
        print("no GPU here: compiled only (AOT prepare)")
        return

    # 2. Measure.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print_environment(prepared)
    generator = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    rows = []
    for case in todo:
        print(f"{case.label}:")
        rows.append(run_case(case, compiled[case.label], first_failure.get(case.label), generator))
    print_table(rows)


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice as e:
        print(f"compiled only: no GPU here (AOT prepare): {e}")
