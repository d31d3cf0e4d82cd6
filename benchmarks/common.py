"""What every benchmark in this folder shares: checking and timing a
contender (ours: every compiled config, the fastest kept), table cells and
notes, compiling many kernels in parallel, the sidecar a prepare leaves in
the kernel cache, the environment header, the Triton split-KV combine
kernel of the decoding benchmarks and the script entry point.

Each benchmark script puts this folder on sys.path and imports it as
`common` (that works when the script runs directly and when a test loads it
by path). A contender's result is a triple (status, ms, detail):
('ok', ms, error), ('wrong', None, error), ('failed', None, reason) or
('n/a', None, why).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import numpy as np
import torch

from tilelang_mlir.compiler.compile import _compiler_id, offline
from tilelang_mlir.runtime.cuda import NoCUDADevice
from tilelang_mlir.runtime.profiler import bench_cuda

try:  # Triton is on the GPU machine only
    import triton
    import triton.language as tlang
except ImportError:
    triton = tlang = None

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # older torch
    SDPBackend = sdpa_kernel = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARMUP, REP = 25, 100


# ---------------------------------------------------------------------------
# Checking and timing
# ---------------------------------------------------------------------------


def rel_error(out, ref):
    """||out - ref|| / ||ref|| in float32 (ref is a float32 tensor)."""
    return ((out.float() - ref).norm() / ref.norm()).item()


def device_ms(fn, warmup=WARMUP, rep=REP, graph=True):
    """Median milliseconds of fn over `rep` CUDA-graph replays (calls
    without `graph`: for functions of milliseconds that a graph cannot
    capture, such as autograd), L2 flushed before each."""
    return float(np.median(bench_cuda(fn, warmup=warmup, rep=rep, flush_l2=True,
                                      cuda_graph=graph)))


L2_BYTES = 50 << 20  # the H100/H200 L2 (a copy set larger than it is cold)


def copies_for(nbytes):
    """How many copies of inputs of `nbytes` a rotation needs so that one
    call's bytes are gone from the L2 when it comes round again (at least
    twice the L2 between two calls on the same copy)."""
    return max(2, -(-2 * L2_BYTES // max(nbytes, 1)) + 1)


def rotate_ms(fns, calls=None, rep=30):
    """Median milliseconds per call of a CUDA graph calling fns[0], fns[1],
    ... round robin (`calls` calls, default 4 rounds), each fn on its own
    copy of the inputs: every call reads cold data (the copies exceed the
    L2) and no flush runs in the timed region. The benchmarks' usual flush
    (`device_ms`: a buffer zeroed before each replay) leaves the L2 full of
    dirty lines that a short kernel's reads must write back, about 3-5 us
    on the H200: that is most of the difference for a 10-20 us kernel, and
    none of it is the kernel's. The per-launch cost of the graph (about
    2 us for an empty kernel) stays in."""
    calls = calls or 4 * len(fns)
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fns[i % len(fns)]()
    for _ in range(3):
        graph.replay()
    times = []
    for _ in range(rep):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return float(np.median(times))


def reason(exc):
    """The first line of an exception's message (at most 200 characters)."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text[:200]


def within(ref, tol):
    """A check for `measure`: the relative error of an output against ref,
    raising AssertionError(error) when it is not below tol."""
    def check(out):
        err = rel_error(out, ref)
        if not err < tol:
            raise AssertionError(err)
        return err
    return check


def measure(fn, check, warmup=WARMUP, rep=REP, graph=True):
    """('ok', ms, error) after check(fn()) returned an error (it raises
    AssertionError(error) for a wrong result: ('wrong', None, error));
    ('failed', None, reason) when fn raises. A failing contender is
    reported and the run goes on. ms: `device_ms(fn, warmup, rep, graph)`."""
    try:
        err = check(fn())
    except AssertionError as e:
        return "wrong", None, e.args[0]
    except NoCUDADevice:
        raise
    except Exception as e:  # noqa: BLE001
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 (the context may be lost; the next case will say)
            pass
        return "failed", None, reason(e)
    try:
        return "ok", device_ms(fn, warmup, rep, graph), err
    except Exception as e:  # noqa: BLE001
        return "failed", None, reason(e)


def cell(result, text):
    """A table cell: text(ms) of an 'ok' result, else what went wrong
    ('wrong (error)', 'failed', 'n/a')."""
    status, ms, detail = result
    if status == "ok":
        return text(ms)
    if status == "wrong":
        return f"wrong ({detail:.1e})"
    return status


def tflops(result, flop):
    """A table cell: TFLOP/s of an 'ok' result, else what went wrong."""
    return cell(result, lambda ms: f"{flop / ms / 1e9:.0f}")


def fastest(row, kernels, call, check, flop, describe, width=20, not_compiled="not compiled",
            timer=measure, keep_fn=False):
    """Ours: checks and times call(kernel) for every compiled (config,
    kernel) with timer(fn, check) (`measure` or a benchmark's variant of
    it), printing a line each, and keeps the fastest correct result in
    row["ours"] and its config in row["config"]; where none ran correctly,
    the first result ("none ran correctly"); where none compiled, a failure
    saying why (`not_compiled`). keep_fn: the fastest's call also in
    row["ours_fn"] (for `retime`, which removes it)."""
    results = []
    for config, kernel in kernels:
        result = timer(lambda: call(kernel), check)
        status, ms, detail = result
        text = (f"{ms:8.3f} ms {flop / ms / 1e9:6.0f} TFLOP/s (error {detail:.1e})"
                if status == "ok" else f"{status}: {detail}")
        print(f"   ours {describe(config):{width}} {text}")
        results.append((config, result))
    ok = [r for r in results if r[1][0] == "ok"]
    if ok:
        config, row["ours"] = min(ok, key=lambda r: r[1][1])
        row["config"] = describe(config)
        if keep_fn:  # the fastest's call, for `retime`
            kernel = next(k for c, k in kernels if c is config)
            row["ours_fn"] = lambda: call(kernel)
    elif results:
        row["ours"] = results[0][1]
        row["config"] = "none ran correctly"
    else:
        row["ours"] = ("failed", None, not_compiled)
        row["config"] = ""
    return row


def retime(row, fns, rounds, time_ms):
    """Times again, in `rounds - 1` more rounds, every contender of `row`
    that ran correctly (fns: its key -> its fn; ours: row["ours_fn"] from
    `fastest`), each once a round in turn, and keeps the median of its
    rounds (time_ms(fn) -> ms). The GPU's clocks drift during a run (it is
    coolest at the start), so contenders timed one after the other once
    each are favoured by their place in the order; rounds in turn are not."""
    fns = {"ours": row.get("ours_fn"), **fns}
    times = {key: [row[key][1]] for key, fn in fns.items()
             if fn is not None and row.get(key, ("",))[0] == "ok"}
    for _ in range(rounds - 1):
        for key in times:
            times[key].append(time_ms(fns[key]))
    for key, t in times.items():
        status, _, detail = row[key]
        row[key] = (status, float(np.median(t)), detail)
    if len(times) > 1 and rounds > 1:
        print("  rounds (ms): " + "; ".join(f"{key} " + " ".join(f"{x:.3f}" for x in t)
                                            for key, t in times.items()))
    row.pop("ours_fn", None)
    return row


def speedup(ours, *others):
    """A table cell: the fastest time of `others` that ran correctly over
    ours ('1.25x': ours faster), where ours ran correctly too."""
    best = min((other[1] for other in others if other[0] == "ok"), default=None)
    return f"{best / ours[1]:.2f}x" if ours[0] == "ok" and best else "—"


def config_cell(row):
    """A table cell: our config, and why ours failed where it did."""
    config, ours = row.get("config", ""), row["ours"]
    if ours[0] == "failed":
        return f"{config}: {ours[2]}" if config else ours[2]
    return config


def failure_notes(row, keys, names=None):
    """'label: name failed: why' for every contender in `keys` that failed."""
    names = names or {}
    return [f"{row['case'].label}: {names.get(k, k)} failed: {row[k][2]}" for k in keys
            if row[k][0] == "failed"]


def print_notes(notes, footer=None):
    """What follows a table: a footer line, then the notes, indented."""
    if footer:
        print(footer)
    for note in notes:
        print(f"  {note}")


def copy_bandwidth():
    """GB/s of a 1 GiB device-to-device copy (bytes read + written)."""
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = float(np.median(bench_cuda(lambda: dst.copy_(src), warmup=5, rep=20, flush_l2=False)))
    return 2 * (1 << 28) * 4 / ms / 1e6


# ---------------------------------------------------------------------------
# Compiling (here, or from the kernel cache on a machine without the compiler)
# ---------------------------------------------------------------------------


def init_cuda():
    """(gpu, target): whether a GPU is here, and the target to compile for.
    Without a GPU that is TILELANG_MLIR_CUDA_ARCH or else sm_90a, so the
    target string (part of the cache key) is the one a Hopper GPU gets."""
    try:
        torch.cuda.init()
    except Exception:  # noqa: BLE001
        pass
    gpu = torch.cuda.is_available()
    target = "cuda" if gpu or os.environ.get("TILELANG_MLIR_CUDA_ARCH") else "cuda:sm_90a"
    return gpu, target


def _run_task(work):
    fn, task, env = work
    os.environ.update(env)
    return fn(task)


def compile_parallel(fn, tasks, jobs):
    """[fn(task) for task in tasks]; with jobs > 1 in worker processes, which
    only fills the disk cache (kernels stay in the workers): fn and the tasks
    must then be picklable (module-level functions) and fn must return
    something picklable. Workers start from a fork server (spawn where there
    is none), never by forking this process: it has threads (torch, the
    compiler), and a fork of a threaded process can deadlock. They get this
    process's environment (the cache directory, the CUDA arch)."""
    tasks = list(tasks)
    if jobs <= 1 or len(tasks) <= 1:
        return [fn(task) for task in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    env = {k: v for k, v in os.environ.items() if k.startswith(("TILELANG_MLIR_", "CUDA_"))}
    with ProcessPoolExecutor(min(jobs, len(tasks)),
                             mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(_run_task, [(fn, task, env) for task in tasks]))


def try_compile(build, ptxas_of=lambda kernel: kernel):
    """(kernel, None, bytes of registers spilled) of build(), or (None,
    the reason it failed, 0): a config that does not compile is reported
    and skipped. `ptxas_of(kernel)` is the compiled kernel whose ptxas
    report counts (a wrapper's main kernel)."""
    from tilelang_mlir.compiler.cuda import resource_report

    try:
        kernel = build()
    except Exception as e:  # noqa: BLE001
        text = reason(e)
        if ": error: " in text:
            text = text.split(": error: ", 1)[1]
        return None, text, 0
    report = resource_report(getattr(ptxas_of(kernel), "ptxas_info", "") or "")
    return kernel, None, report["spill_stores"] + report["spill_loads"]


def compile_wrappers(todo, choices):
    """{case label: [(key, wrapper)]}: for every case, every (key, name,
    build) of choices(case) compiled with `try_compile(build)` (the ptxas
    report of the wrapper's split kernel counts). Prints the count and
    the configs that failed or spill (reported; the run goes on)."""
    t0 = time.perf_counter()
    compiled, failures = {}, []
    for case in todo:
        compiled[case.label] = []
        for key, name, build in choices(case):
            kernel, why, spilled = try_compile(build, lambda k: k.split)
            if kernel is None:
                failures.append(f"{case.label} {name}: {why}")
                continue
            if spilled:
                failures.append(f"{case.label} {name}: spills {spilled} bytes")
            compiled[case.label].append((key, kernel))
    print(f"compiled {sum(len(v) for v in compiled.values())} kernel pairs for {len(todo)} "
          f"cases in {time.perf_counter() - t0:.0f} s")
    for f in failures:
        print(f"  {f}")
    return compiled


def compile_jobs(gpu, requested=0):
    """Compile processes: one where a GPU runs the kernels (they must stay in
    this process), else `requested` or one per core."""
    return 1 if gpu else (requested or os.cpu_count() or 1)


class CompilerWatch:
    """Notices a compiler rebuilt during a run: the cache key holds the
    compiler's identity, so kernels compiled before a rebuild would not be
    found by a run with the newer one."""

    def __init__(self):
        self.id = None if offline() else _compiler_id()

    def check(self):
        if self.id is not None and _compiler_id() != self.id:
            raise SystemExit("the compiler was rebuilt or edited during this run: its kernels "
                             "are keyed to different compiler ids; run it again")


def finish_without_gpu(failures, sidecar=None):
    """What a run without a GPU ends with: from the cache alone, refuse when
    kernels are missing; with a compiler, write the sidecar (AOT prepare),
    if the benchmark keeps one."""
    if offline():
        missing = sum("kernel cache" in why for why in failures.values())
        if missing:
            raise SystemExit(f"no GPU and no compiler here, and {missing} kernels are not in "
                             "the kernel cache (TILELANG_MLIR_CACHE_DIR)")
        print("no GPU here, no compiler: every kernel was found in the kernel cache")
        return
    if sidecar is not None:
        write_sidecar(sidecar, failures)
    print("no GPU here: compiled only (AOT prepare)")


# ---------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------


def git_commit():
    try:
        out = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _sidecar_path(name):
    d = os.environ.get("TILELANG_MLIR_CACHE_DIR")
    return os.path.join(d, name) if d else None


def read_sidecar(name):
    """What the prepare recorded in the kernel cache (commit, date, arch,
    compile failures), or {}."""
    try:
        with open(_sidecar_path(name)) as f:
            return json.load(f)
    except (TypeError, OSError, ValueError):
        return {}


def write_sidecar(name, failures):
    path = _sidecar_path(name)
    if path is None:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"commit": git_commit(), "prepared": time.strftime("%Y-%m-%d %H:%M"),
                   "arch": os.environ.get("TILELANG_MLIR_CUDA_ARCH"), "failures": failures}, f,
                  indent=1)


def _prepared_commit():
    """The commit `gpu_check.sh prepare-NAME` compiled the cache at, or None."""
    d = os.environ.get("TILELANG_MLIR_CACHE_DIR")
    try:
        with open(os.path.join(d, "prepared_commit")) as f:
            return f.read().strip() or None
    except (TypeError, OSError):
        return None


def print_environment(prepared=None, timing=None):
    """Date, commit (or the prepare's), GPU and driver, torch/cuDNN/Triton
    versions and how timing is done: the header of every table."""
    prepared = prepared or {}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        gpu = smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        gpu = f"{torch.cuda.get_device_name()} (driver unknown)"
    here = git_commit()
    at_prepare = prepared.get("commit") or _prepared_commit()
    commit = here or "unknown"
    if at_prepare and at_prepare != here:
        commit = f"{at_prepare} (kernels compiled there; this checkout: {commit})"
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    print(f"date    : {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"commit  : {commit}")
    print(f"gpu     : {gpu}")
    print(f"torch   : {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {cudnn}), triton "
          f"{triton.__version__ if triton is not None else 'not installed'}")
    print(f"timing  : {timing or f'median of {REP} CUDA-graph replays after {WARMUP} warm-up, L2 flushed before each'}")


def start_measuring(prepared=None, timing=None):
    """Before the first timed case: torch's contenders in strict math and
    the environment header. Returns a seeded generator for the inputs."""
    strict_math()
    print_environment(prepared, timing)
    return seeded_generator()


def run_cases(todo, run_case):
    """[run_case(case) for each case], each announced by its label."""
    rows = []
    for case in todo:
        print(f"{case.label}:")
        rows.append(run_case(case))
    return rows


def strict_math():
    """No TF32 and no reduced-precision reductions in torch's contenders."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False


def seeded_generator():
    """A CUDA generator with a fresh random seed (new inputs every run)."""
    return torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))


def collect_compiles(tasks, results, describe, known=None, seconds=None):
    """Sorts compile results: tasks are (case, config, ...) and results
    (kernel or None, reason it failed or None, spilled bytes). Prints a
    summary (with the compile time `seconds`) and returns ({case label: [(config, kernel)]}, {"label config":
    reason}, {case label: first reason}). A kernel missing from the cache
    is reported with the reason the prepare recorded (`known`)."""
    known = known or {}
    compiled = {task[0].label: [] for task in tasks}
    failures, first_failure, spills = {}, {}, []
    for (case, config, *_), (kernel, why, spilled) in zip(tasks, results):
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
    took = f" in {seconds:.0f} s" if seconds is not None else ""
    print(f"compiled {count} kernels for {len(compiled)} case{'s' if len(compiled) != 1 else ''}"
          f"{took}"
          f"{f'; {len(failures)} configs did not compile:' if failures else ''}")
    for key, why in failures.items():
        print(f"  {key}: {why}")
    if spills:
        print(f"{len(spills)} kernels spill registers (ptxas): {'; '.join(spills)}")
    return compiled, failures, first_failure


# ---------------------------------------------------------------------------
# Command lines, shared contenders and cases
# ---------------------------------------------------------------------------


def arguments(doc, autotune_help=None, jobs=False):
    """A benchmark's argument parser (its docstring as the description),
    with `--no-autotune` (help: what ours runs then) and `--jobs` (compile
    processes) where asked for."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if autotune_help:
        parser.add_argument("--no-autotune", action="store_true", help=autotune_help)
    if jobs:
        parser.add_argument("--jobs", type=int, default=0,
                            help="compile processes without a GPU (default: one per core)")
    return parser


def attention_arguments(parser):
    """The attention benchmarks' problem: head dims, causal, batch, heads,
    sequence length."""
    parser.add_argument("--dims", default="128,64", help="comma-separated head dims")
    parser.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", default=None,
                        help="comma-separated KV head counts, each dividing --heads "
                        "(grouped-query attention; default: --heads, no grouping)")
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--dtypes", default="float16",
                        help="comma-separated input dtypes (float16, bfloat16)")
    return rounds_argument(parser)


def attention_cases(args, case_class):
    """case_class(batch, heads, seq, dim, causal, dtype, kv_heads=) for
    every head dim, causal flag, dtype and KV head count the arguments
    name."""
    dims = [int(d) for d in args.dims.split(",")]
    causal = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    dtypes = args.dtypes.split(",")
    for dt in dtypes:
        if dt not in ("float16", "bfloat16"):
            raise SystemExit(f"--dtypes: {dt!r} is not float16 or bfloat16")
    kv = [int(h) for h in args.kv_heads.split(",")] if args.kv_heads else [args.heads]
    for h in kv:
        if h < 1 or args.heads % h:
            raise SystemExit(f"--kv-heads: {h} does not divide --heads {args.heads}")
    return [case_class(args.batch, args.heads, args.seq, d, c, dt, kv_heads=h)
            for dt in dtypes for h in kv for d in dims for c in causal]


def rounds_argument(parser):
    """`--rounds` (see `retime`)."""
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of timing, every contender once a round in turn; the "
                        "table shows each one's median (default 5)")
    return parser


# ---------------------------------------------------------------------------
# ---------------------------------------------------------------------------


class AttentionCase:
    """An attention problem: (batch, heads, seq, dim), causal or not, the
    dtype, `kv_heads` K/V heads (grouped-query attention: query head h
    reads K/V head h // groups); `flop` is the forward's (4 B H S^2 D, half
    of it when causal)."""

    def __init__(self, batch, heads, seq, dim, causal, dtype="float16", kv_heads=None):
        self.batch, self.heads, self.seq, self.dim = batch, heads, seq, dim
        self.causal, self.dtype = causal, dtype
        self.kv_heads = kv_heads or heads
        self.groups = heads // self.kv_heads

    @property
    def kv_shape(self):
        return (self.batch, self.kv_heads, self.seq, self.dim)

    @property
    def label(self):
        kv = f" KV{self.kv_heads}" if self.groups > 1 else ""
        return (f"B{self.batch} H{self.heads}{kv} S{self.seq} D{self.dim} "
                f"{'causal' if self.causal else 'full'} {self.dtype}")

    @property
    def flop(self):
        return 4 * self.batch * self.heads * self.seq ** 2 * self.dim / (2 if self.causal else 1)


def triton_config(kernel, *names):
    """'64x128 w4 s3': an autotuned Triton kernel's best config (the block
    sizes `names`, warps, stages), or '?' before it has one."""
    cfg = kernel.best_config
    if cfg is None:
        return "?"
    return f"{'x'.join(str(cfg.kwargs[n]) for n in names)} w{cfg.num_warps} s{cfg.num_stages}"


if triton is not None:
    @triton.jit
    def triton_splitkv_combine(OPART, LSEPART, O, SPLITS, H: tlang.constexpr,
                               D: tlang.constexpr, NS: tlang.constexpr):
        """The Triton contenders' split-KV combine: O[b, h] from the
        partial outputs (batch, SPLITS, H, D) and their base-2 LSEs,
        weighted by exp2(lse_s - max); grid (batch, H), NS >= SPLITS."""
        b = tlang.program_id(0)
        h = tlang.program_id(1)
        s = tlang.arange(0, NS)
        lse = tlang.load(LSEPART + (b * SPLITS + s) * H + h, mask=s < SPLITS,
                         other=float("-inf"))
        m = tlang.max(lse, 0)
        w = tlang.math.exp2(lse - m)
        w = w / tlang.sum(w, 0)
        d = tlang.arange(0, D)
        parts = tlang.load(OPART + ((b * SPLITS + s[:, None]) * H + h) * D + d[None, :],
                           mask=(s < SPLITS)[:, None], other=0.0)
        o = tlang.sum(parts * w[:, None], 0)
        tlang.store(O + (b * H + h) * D + d, o.to(O.dtype.element_ty))


def run(main):
    """A benchmark's entry point: main(), or a note where no GPU is here
    (the kernels were compiled: AOT prepare)."""
    try:
        main()
    except NoCUDADevice as e:
        print(f"compiled only: no GPU here (AOT prepare): {e}")
