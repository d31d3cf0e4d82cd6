"""FlashAttention backward on Hopper: ours next to the backward of torch's
scaled_dot_product_attention with each backend that runs.

Cases: B=8, H=32, S=4096, D in {64, 128}, causal and not, float16,
(batch, heads, seq, dim) tensors.

Contenders: ours (examples/attention/flash_attn_bwd.py: preprocess, main
kernel, postprocess; every config of its CONFIGS tried and the fastest
kept), and torch.autograd.grad through F.scaled_dot_product_attention with
each backend (CUDNN_ATTENTION, FLASH_ATTENTION, EFFICIENT_ATTENTION), its
forward run once outside the timing. All take the same random Q, K, V, dO;
ours takes O and the LSE of a float32 forward. Every contender is first
checked against float32 autograd (one batch element at a time): relative
Frobenius error of dQ, dK and dV each below 1e-2; a wrong result is
reported, not timed. Then each is timed: median device time of 20 calls
after warm-up, L2 flushed before each (no CUDA graph: a call takes
milliseconds). TFLOP/s count 2.5x the forward's 4 B H S^2 D (two gemms
forward, five backward), halved for causal.

    python benchmarks/flash_attn_bwd.py [--dims 128,64] [--causal both|yes|no] [--no-autotune]
                                        [--seq 4096] [--batch 8] [--heads 32]

Without a GPU it compiles every kernel the run would use into the kernel
cache and exits: `scripts/gpu_check.sh prepare-attn-bwd` here,
`scripts/gpu_check.sh run-attn-bwd` on the GPU machine.
"""

import argparse
import importlib.util
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from tilelang_mlir.compiler.compile import _compiler_id, offline
from tilelang_mlir.compiler.cuda import resource_report
from tilelang_mlir.runtime.cuda import NoCUDADevice
from tilelang_mlir.runtime.profiler import bench_cuda

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # older torch
    SDPBackend = sdpa_kernel = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load("examples/attention/flash_attn_bwd.py", "flash_attn_bwd_example")
forward_bench = _load("benchmarks/flash_attn.py", "flash_attn_benchmark")  # its environment print

WARMUP, REP = 3, 20
TOL = 1e-2
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
    def flop(self):  # 2.5x the forward's
        return 2.5 * 4 * self.batch * self.heads * self.seq ** 2 * self.dim / (
            2 if self.causal else 1)

    def compile(self, config, target):
        return example.FlashAttnBwd(self.batch, self.heads, self.seq, self.dim, self.causal,
                                    dtype=self.dtype, target=target, **config)


def cases(args):
    dims = [int(d) for d in args.dims.split(",")]
    causal = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    return [Case(args.batch, args.heads, args.seq, d, c) for d in dims for c in causal]


def device_ms(fn):
    return float(np.median(bench_cuda(fn, warmup=WARMUP, rep=REP, flush_l2=True)))


def check_grads(refs):
    """check(grads) -> the largest relative error of dQ, dK, dV; raises
    AssertionError with it when it is not below TOL."""
    def check(grads):
        err = max(((g.float() - r).norm() / r.norm()).item() for g, r in zip(grads, refs))
        if not err < TOL:  # (NaN fails too)
            raise AssertionError(err)
        return err
    return check


def measure(fn, check):
    """('ok', ms, err), ('wrong', None, err) or ('failed', None, reason)."""
    try:
        err = check(fn())
    except AssertionError as e:
        return "wrong", None, e.args[0]
    except NoCUDADevice:
        raise
    except Exception as e:  # noqa: BLE001 (a failing contender is reported, the run goes on)
        return "failed", None, forward_bench._reason(e)
    try:
        return "ok", device_ms(fn), err
    except Exception as e:  # noqa: BLE001
        return "failed", None, forward_bench._reason(e)


def sdpa_backward(backend, q, k, v, do, causal):
    """fn() -> (dq, dk, dv) of the backend's backward; its forward runs here
    once (or raises when the backend does not take the case)."""
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    with sdpa_kernel([getattr(SDPBackend, backend)]):
        out = F.scaled_dot_product_attention(*leaves, is_causal=causal)

    def fn():
        return torch.autograd.grad(out, leaves, do, retain_graph=True)
    return fn


def run_case(case, kernels, generator):
    dt = getattr(torch, case.dtype)
    shape = (case.batch, case.heads, case.seq, case.dim)
    q, k, v, do = (torch.randn(shape, device="cuda", generator=generator).to(dt)
                   for _ in range(4))
    o, lse = example.forward(q, k, v, case.causal)
    refs = example.reference(q, k, v, do, case.causal)
    check = check_grads(refs)
    row = {"case": case}
    results = []
    for config, bwd in kernels:
        result = measure(lambda: bwd(q, k, v, o, do, lse), check)
        status, ms, detail = result
        text = (f"{ms:8.3f} ms {case.flop / ms / 1e9:6.0f} TFLOP/s (error {detail:.1e})"
                if status == "ok" else f"{status}: {detail}")
        print(f"   ours {example.describe(config):20} {text}")
        results.append((config, result))
    ok = [r for r in results if r[1][0] == "ok"]
    if ok:
        config, row["ours"] = min(ok, key=lambda r: r[1][1])
        row["config"] = example.describe(config)
    else:
        row["ours"] = results[0][1] if results else ("failed", None, "not compiled")
        row["config"] = "none ran correctly"
    for backend in SDPA_BACKENDS:
        if sdpa_kernel is None:
            row[backend] = ("n/a", None, "torch.nn.attention is missing")
            continue
        try:
            fn = sdpa_backward(backend, q, k, v, do, case.causal)
        except Exception as e:  # noqa: BLE001
            row[backend] = ("failed", None, forward_bench._reason(e))
            continue
        row[backend] = measure(fn, check)
        del fn
    errs = ", ".join(f"{key.split('_')[0].lower()} {row[key][2]:.1e}"
                     for key in ["ours"] + SDPA_BACKENDS if isinstance(row[key][2], float))
    print(f"  errors (largest of dQ, dK, dV): {errs}")
    del q, k, v, do, o, lse, refs
    torch.cuda.empty_cache()
    return row


def print_table(rows):
    print()
    print("| D | causal | ours | cuDNN | FA2 (torch) | mem-efficient | ours / best torch "
          "| our config |")
    print("|---|---|---|---|---|---|---|---|")
    notes = []
    for row in rows:
        case = row["case"]
        cells = [forward_bench.tflops(row[key], case.flop) for key in ["ours"] + SDPA_BACKENDS]
        best = min((row[b][1] for b in SDPA_BACKENDS if row[b][0] == "ok"), default=None)
        ratio = (f"{best / row['ours'][1]:.2f}x" if best and row["ours"][0] == "ok" else "—")
        config = row.get("config", "")
        if row["ours"][0] == "failed":
            config = f"{config}: {row['ours'][2]}"
        print(f"| {case.dim} | {'yes' if case.causal else 'no'} | {' | '.join(cells)} | {ratio} "
              f"| {config} |")
        for key in SDPA_BACKENDS:
            if row[key][0] == "failed":
                notes.append(f"{case.label}: {key} failed: {row[key][2]}")
    print("(TFLOP/s counted as 2.5x the forward's FLOPs; ratio = ours / fastest torch backend)")
    for note in notes:
        print(f"  {note}")


def print_environment():
    print(f"date    : {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"commit  : {forward_bench._git_commit() or 'unknown'}")
    print(f"gpu     : {torch.cuda.get_device_name()}")
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    print(f"torch   : {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {cudnn})")
    print(f"timing  : median of {REP} calls after {WARMUP} warm-up, L2 flushed before each")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dims", default="128,64", help="comma-separated head dims")
    parser.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--no-autotune", action="store_true",
                        help="ours with the example's default tiles only")
    args = parser.parse_args(argv)

    try:
        torch.cuda.init()
    except Exception:  # noqa: BLE001
        pass
    gpu = torch.cuda.is_available()
    target = "cuda" if gpu or os.environ.get("TILELANG_MLIR_CUDA_ARCH") else "cuda:sm_90a"
    todo = cases(args)

    # 1. Compile (here, or load from the kernel cache where there is no compiler).
    t0 = time.perf_counter()
    compiler = None if offline() else _compiler_id()
    compiled, failures, spills = {}, [], []
    for case in todo:
        configs = [example.BLOCKS[case.dim]] if args.no_autotune else example.CONFIGS
        compiled[case.label] = []
        for config in configs:
            key = f"{case.label} {example.describe(config)}"
            try:
                bwd = case.compile(config, target)
            except Exception as e:  # noqa: BLE001 (a config that does not compile is skipped)
                failures.append(f"{key}: {forward_bench._reason(e)}")
                continue
            compiled[case.label].append((config, bwd))
            report = resource_report(getattr(bwd.main, "ptxas_info", "") or "")
            spilled = report["spill_stores"] + report["spill_loads"]
            if spilled:
                spills.append(f"{key} ({spilled} B)")
    count = sum(len(v) for v in compiled.values())
    print(f"compiled {count} configs for {len(todo)} cases in {time.perf_counter() - t0:.0f} s"
          f"{f'; {len(failures)} did not compile:' if failures else ''}")
    for line in failures:
        print(f"  {line}")
    if spills:
        print(f"{len(spills)} main kernels spill registers (ptxas): {'; '.join(spills)}")
    if compiler is not None and _compiler_id() != compiler:
        raise SystemExit("the compiler was rebuilt during this run; run it again")
    if not gpu:
        if offline() and failures:
            raise SystemExit("no GPU and no compiler here, and some kernels are not in the "
                             "kernel cache (TILELANG_MLIR_CACHE_DIR)")
        print("no GPU here: compiled only (AOT prepare)")
        return

    # 2. Measure.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print_environment()
    generator = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    rows = []
    for case in todo:
        print(f"{case.label}:")
        rows.append(run_case(case, compiled[case.label], generator))
    print_table(rows)


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice as e:
        print(f"compiled only: no GPU here (AOT prepare): {e}")
