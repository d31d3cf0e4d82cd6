#!/usr/bin/env python3
"""Runs TileLang's own example programs, unchanged, through the
compatibility route (`python -m tilelang_mlir.compat prog.py`) and records
one row per file in docs/compat.md.

    python scripts/tilelang_corpus.py --examples /path/to/tilelang/examples
    python scripts/tilelang_corpus.py --examples ... --dry      # no GPU here

Each example runs in its own process from its own folder, as a user would
run it; PASS means it ran to the end (its own correctness checks passed),
FAIL gives the first error line. The lines in which an example reports a
time (latency, TFLOPs) are kept next to its row.

--dry is for machines without a GPU: `auto` compiles for sm_90a
(TILELANG_MLIR_CUDA_ARCH), torch's CUDA tensors stay on the CPU, and the
first kernel launch stops the program: COMPILED means every kernel it
built before that compiled to PTX. It finds the language and frontend gaps;
only a GPU run says PASS.

TileLang's examples are not part of this repository (their licence is
theirs): point --examples at a checkout of tile-ai/tilelang.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The folders of examples/ the issue puts in scope.
FOLDERS = ["gemm", "gemm_fp8", "gemm_splitk", "gemm_streamk", "grouped_gemm", "flash_attention",
           "flash_decoding", "deepseek_mla", "norm", "elementwise", "gemv", "dequantize_gemm",
           "gemm_sp", "blocksparse_attention", "block_causal_attention", "topk", "convolution",
           "warp_specialize", "online_softmax", "cast", "dynamic_shape", "linear_attention",
           "attention_sink"]

# Files of those folders that are not TileLang programs for an NVIDIA Hopper
# GPU, with the reason (they get a row, outside the count).
OUT_OF_SCOPE = {
    "gemm_fp8/example_tilelang_gemm_amd.py": "AMD only",
    "gemm_fp8/example_tilelang_gemm_amd_fp8_preshuffle.py": "AMD only",
    "gemm_fp8/example_tilelang_gemm_fp8_sm100.py": "Blackwell only (tcgen05)",
    "dequantize_gemm/example_dequant_gemm_bf16_mxfp4_cdna4.py": "AMD only",
    "blocksparse_attention/block_sparse_attn_triton.py": "a Triton program",
    "blocksparse_attention/example_triton_sparse_gqa_decode_varlen_indice.py": "a Triton program",
    "blocksparse_attention/example_triton_sparse_gqa_decode_varlen_mask.py": "a Triton program",
    "cast/example_triton_cast_to_fp8.py": "a Triton program",
    "attention_sink/benchmark_gqa_sink_fwd.py": "broken in TileLang's tree: it imports "
                                                "example_gqa_sink_fwd_bhsd, which does not exist",
}

STATUS_ORDER = ["PASS", "COMPILED", "FAIL", "TIMEOUT", "MISSING-DEP", "OUT"]


def corpus(examples: str) -> List[str]:
    files = []
    for folder in FOLDERS:
        d = os.path.join(examples, folder)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(".py") or name.startswith(("test_", "regression_")):
                continue
            files.append(f"{folder}/{name}")
    return files


def is_program(path: str) -> bool:
    """A script (a `__main__` block, or calls at the top level) rather than
    a module of helpers for other examples."""
    import ast

    with open(path) as f:
        text = f.read()
    if "__main__" in text:
        return True
    return any(isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
               for n in ast.parse(text).body)


_TVM_IMPORT = re.compile(r"^\s*(import tvm\b|from tvm\b|from tilelang import tvm\b)", re.M)
_LOCAL_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_]\w*)\S*\s+import|import\s+([A-Za-z_]\w*))",
                           re.M)


def uses_tvm(path: str, seen=None) -> Optional[str]:
    """The file (this one, or a module of its folder it imports) that
    imports TVM, or None."""
    seen = seen if seen is not None else set()
    if path in seen or not os.path.exists(path):
        return None
    seen.add(path)
    with open(path) as f:
        text = f.read()
    if _TVM_IMPORT.search(text):
        return path
    folder = os.path.dirname(path)
    for m in _LOCAL_IMPORT.finditer(text):
        name = m.group(1) or m.group(2)
        for cand in (os.path.join(folder, name + ".py"), os.path.join(folder, name)):
            if os.path.isdir(cand):
                for f in sorted(os.listdir(cand)):
                    if f.endswith(".py") and (hit := uses_tvm(os.path.join(cand, f), seen)):
                        return hit
            elif (hit := uses_tvm(cand, seen)):
                return hit
    return None


def classify(examples: str, rel: str) -> Optional[str]:
    """Why `rel` is not run as an in-scope program, or None."""
    if rel in OUT_OF_SCOPE:
        return OUT_OF_SCOPE[rel]
    path = os.path.join(examples, rel)
    if not is_program(path):
        return "a helper module of other examples, not a program"
    hit = uses_tvm(path)
    if hit:
        return (f"TVM-only: {os.path.relpath(hit, examples)} imports tvm (TVM's APIs are "
                "out of scope)")
    return None


_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt)|AssertionError|"
                         r"tilelang_mlir\.\S+)(:.*)?$")
_TIME_LINE = re.compile(r"(latenc|tflop|tflops|ms\b|speedup|time)", re.I)


def first_error(text: str) -> str:
    """The exception line of the (last) traceback in `text`."""
    lines = text.strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback"):
            for line in lines[i + 1:]:
                if _ERROR_LINE.match(line.strip()) and not line.startswith(" "):
                    return line.strip()
            break
    for line in reversed(lines):
        if _ERROR_LINE.match(line.strip()):
            return line.strip()
    return lines[-1].strip() if lines else "(no output)"


def _needs_stand_in(path: str) -> bool:
    """Whether `path` imports flash_attn and no real flash_attn is installed."""
    import importlib.util

    with open(path) as f:
        if not re.search(r"^\s*(import flash_attn|from flash_attn import)", f.read(), re.M):
            return False
    return importlib.util.find_spec("flash_attn") is None


def _save_log(logs: Optional[str], rel: str, text: str) -> None:
    if logs:
        os.makedirs(logs, exist_ok=True)
        with open(os.path.join(logs, rel.replace("/", "__") + ".log"), "w") as f:
            f.write(text[-200000:])


def run_one(examples: str, rel: str, dry: bool, timeout: float, python: str,
            logs: Optional[str] = None) -> Dict:
    path = os.path.join(examples, rel)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["CORPUS_STACK_AFTER"] = str(max(timeout - 15, 5))
    paths = [os.path.dirname(path), env.get("PYTHONPATH", "")]
    stand_in = _needs_stand_in(path)
    if stand_in:
        paths.append(os.path.join(HERE, "corpus_refs"))  # after everything: a real one wins
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    cmd = [python, os.path.abspath(__file__), "--child", path]
    if dry:
        cmd.insert(2, "--dry")
        env.setdefault("TILELANG_MLIR_CUDA_ARCH", "sm_90a")
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=os.path.dirname(path), env=env, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        def text(x):
            return (x or b"").decode(errors="replace") if isinstance(x, bytes) else (x or "")

        out = text(e.stdout)
        _save_log(logs, rel, out + text(e.stderr))
        return {"file": rel, "status": "TIMEOUT", "detail": f"over {timeout:.0f} s",
                "seconds": round(time.time() - t0, 1), "times": _times(out)}
    out = p.stdout + p.stderr
    _save_log(logs, rel, out)
    secs = round(time.time() - t0, 1)
    if p.returncode == 0:
        # A dry run ends COMPILED whether it stopped at a launch or ran to
        # the end without one.
        status = "COMPILED" if dry else "PASS"
        detail = ("checked against scripts/corpus_refs/flash_attn (a torch reference: the "
                  "real flash_attn is not installed)" if stand_in else "")
        return {"file": rel, "status": status, "detail": detail, "seconds": secs,
                "times": _times(p.stdout)}
    err = first_error(out)
    m = re.match(r"(ModuleNotFoundError|ImportError): No module named '([^']+)'", err)
    if m and not m.group(2).startswith(("tilelang", "tvm")):
        return {"file": rel, "status": "MISSING-DEP", "detail": err, "seconds": secs,
                "times": []}
    return {"file": rel, "status": "FAIL", "detail": err, "seconds": secs,
            "times": _times(p.stdout)}


def _times(stdout: str) -> List[str]:
    return [line.strip()[:120] for line in stdout.splitlines()
            if _TIME_LINE.search(line) and any(c.isdigit() for c in line)][:6]


# ---------------------------------------------------------------------------
# the child: one example
# ---------------------------------------------------------------------------


class DryStop(BaseException):
    """Raised at the first kernel launch of a --dry run."""


def _dry_patches() -> None:
    import torch

    def host(device):
        text = str(device) if device is not None else ""
        return "cpu" if text.startswith("cuda") or isinstance(device, int) else device

    def wrap_factory(fn):
        def inner(*a, **k):
            if "device" in k:
                k["device"] = host(k["device"])
            return fn(*a, **k)
        return inner

    for name in ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange",
                 "tensor", "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like",
                 "full_like", "randperm", "linspace", "as_tensor", "eye", "normal",
                 "empty_strided"):
        if hasattr(torch, name):
            setattr(torch, name, wrap_factory(getattr(torch, name)))
    torch.Tensor.cuda = lambda self, *a, **k: self
    orig_to = torch.Tensor.to

    def to(self, *a, **k):
        a = tuple(host(x) if isinstance(x, (str, torch.device)) and str(x).startswith("cuda")
                  else x for x in a)
        if "device" in k:
            k["device"] = host(k["device"])
        return orig_to(self, *a, **k)

    torch.Tensor.to = to
    torch.cuda.is_available = lambda: True
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    torch.cuda.current_device = lambda: 0
    torch.cuda.manual_seed = lambda *a, **k: None
    torch.cuda.manual_seed_all = lambda *a, **k: None

    class _Props:  # an H200's
        name = "NVIDIA H200"
        multi_processor_count = 132
        total_memory = 143771009024
        major, minor = 9, 0
        shared_memory_per_block_optin = 232448
        shared_memory_per_multiprocessor = 233472
        regs_per_multiprocessor = 65536
        max_threads_per_multi_processor = 2048
        L2_cache_size = 52428800
        warp_size = 32

    torch.cuda.get_device_properties = lambda *a, **k: _Props()
    torch.cuda.get_device_name = lambda *a, **k: _Props.name
    torch.cuda.device_count = lambda: 1

    from tilelang_mlir.runtime.kernel import Kernel

    def stop(self, *a, **k):
        raise DryStop(self.name)

    Kernel.__call__ = stop
    from tilelang_mlir.runtime import args as argmod

    bind = argmod.bind

    def stop_bind(name, params, out_idx, args, device, *rest, **kw):
        if device == "cuda":
            raise DryStop(name)
        return bind(name, params, out_idx, args, device, *rest, **kw)

    argmod.bind = stop_bind


def child(path: str, dry: bool) -> int:
    import faulthandler
    import runpy

    # A run that will time out leaves the Python stacks of where it was.
    stack_after = float(os.environ.get("CORPUS_STACK_AFTER", "0"))
    if stack_after > 0:
        faulthandler.dump_traceback_later(stack_after, exit=False)

    from tilelang_mlir import compat

    compat.install()
    if dry:
        _dry_patches()
    sys.argv = [path]
    try:
        runpy.run_path(path, run_name="__main__")
    except DryStop as e:
        print(f"@@DRY-STOP@@ first launch of kernel {e}")
        return 0
    return 0


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def write_markdown(rows: List[Dict], path: str, args) -> None:
    counted = [r for r in rows if r["status"] != "OUT"]
    passed = sum(r["status"] == "PASS" for r in counted)
    gpu = args.gpu or "?"
    mode = "dry (no GPU: compiled for sm_90a, stopped at the first launch)" if args.dry else gpu
    lines = [f"| file | status | detail | reported time |", "|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (STATUS_ORDER.index(r["status"]), r["file"])):
        detail = r["detail"].replace("|", "\\|")[:200]
        times = "<br>".join(t.replace("|", "\\|") for t in r.get("times", []))
        lines.append(f"| {r['file']} | {r['status']} | {detail} | {times} |")
    summary = (f"{passed} of {len(counted)} in-scope examples PASS "
               f"({100.0 * passed / max(len(counted), 1):.0f}%); "
               + ", ".join(f"{s}: {sum(r['status'] == s for r in rows)}"
                           for s in STATUS_ORDER if any(r['status'] == s for r in rows)))
    table = "\n".join(lines)
    body = (f"<!-- corpus:begin -->\nRun {datetime.date.today()} at commit {git_commit()} on "
            f"{mode}, TileLang examples at {args.tilelang_commit or '?'}:\n"
            f"**{summary}**\n\n{table}\n<!-- corpus:end -->")
    if os.path.exists(path):
        text = open(path).read()
        if "<!-- corpus:begin -->" in text:
            text = re.sub(r"<!-- corpus:begin -->.*<!-- corpus:end -->", lambda _: body, text,
                          flags=re.S)
        else:
            text = text.rstrip() + "\n\n" + body + "\n"
    else:
        text = "# TileLang compatibility\n\n" + body + "\n"
    with open(path, "w") as f:
        f.write(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", help="TileLang's examples/ folder")
    ap.add_argument("--dry", action="store_true", help="no GPU: compile for sm_90a, stop at "
                                                       "the first launch")
    ap.add_argument("--only", default="", help="run the files whose path contains one of "
                                               "these (comma-separated)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--logs", help="write each example's output into this folder")
    ap.add_argument("--md", help="update this markdown file (docs/compat.md)")
    ap.add_argument("--gpu", default="", help="the GPU's name for the report")
    ap.add_argument("--tilelang-commit", default="", help="the examples' commit for the report")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.dry)
    if not args.examples:
        ap.error("--examples is required")
    examples = os.path.abspath(args.examples)
    rows, todo = [], []
    for rel in corpus(examples):
        if args.only and not any(part in rel for part in args.only.split(",")):
            continue
        why = classify(examples, rel)
        if why:
            rows.append({"file": rel, "status": "OUT", "detail": why, "seconds": 0, "times": []})
            continue
        todo.append(rel)

    def go(rel):
        r = run_one(examples, rel, args.dry, args.timeout, sys.executable, args.logs)
        print(f"{r['status']:9} {r['seconds']:6.1f}s {rel}  {r['detail'][:150]}", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows.extend(pool.map(go, todo))
    counted = [r for r in rows if r["status"] != "OUT"]
    ok = sum(r["status"] in ("PASS", "COMPILED") for r in counted)
    counts = ", ".join(f"{s} {sum(r['status'] == s for r in rows)}" for s in STATUS_ORDER)
    print(f"\n{ok}/{len(counted)} in scope ran ({counts})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.md:
        write_markdown(rows, args.md, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
