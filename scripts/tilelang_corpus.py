#!/usr/bin/env python3
"""Runs TileLang's own example programs, unchanged, through the
compatibility route (`python -m tilelang_mlir.compat prog.py`) and records
one row per file in docs/compat.md.

    python scripts/tilelang_corpus.py --examples /path/to/tilelang/examples
    python scripts/tilelang_corpus.py --examples ... --dry      # no GPU here
    python scripts/tilelang_corpus.py --examples ... --cpu      # no GPU here

Every folder of `examples/` is covered (recursively). Each example runs in
its own process from its own folder, as a user would run it; PASS means it
ran to the end (its own correctness checks passed), FAIL gives the first
error line. The lines in which an example reports a time (latency,
TFLOPs) are kept next to its row.

A file is OUT (a row outside the count) for one of the issue's reasons,
stated on its row (`classify`): AMD only, Blackwell or SM120 only, a Triton
program, a helper module of other examples (no `__main__` and no call at
its top level), a test or regression driver of TileLang's suite (it runs
the programs of its folder, which have rows of their own), broken in
TileLang's tree, a command-line tool that needs arguments (a model
checkpoint) to run, or a program whose purpose is one of TileLang's TVM-side
tools that are refused (compat/refusals.py). A program that imports TVM
only for the few names the compat route serves is in scope. A program that
stops at a refusal naming one of the rules ("(out of scope: <rule>)": TVM's
IR and pass APIs, hardware not targeted, TileLang's adapter internals) is
OUT too, with the refusal on its row.

`--impl tilelang` runs the same programs with an installed TileLang (the
denominator); `--merge OURS.json TILELANG.json` counts, of the in-scope
programs TileLang runs to the end, those that pass here.

--dry and --cpu are for machines without a GPU (compat/emulate.py): --dry
compiles for sm_90a and stops at the first kernel launch (COMPILED means
every kernel it built before that compiled to PTX); --cpu runs the kernels
on the CPU target with torch's CUDA tensors on the CPU (CPU-PASS means the
program's own checks passed there; kernels that need a GPU fail with the CPU
backend's error). Neither is the acceptance: only a GPU run says PASS.

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

# Files that are out of scope for a reason the rules below cannot see, with
# the reason (they get a row, outside the count).
OUT_OF_SCOPE = {
    "attention_sink/benchmark_gqa_sink_fwd.py": "broken in TileLang's tree: it imports "
                                                "example_gqa_sink_fwd_bhsd, which does not exist",
    "autodd/tilelang_buggy.py": "a deliberately failing input of TileLang's delta debugger "
                                "(tilelang.autodd, which reduces TVM programs)",
    "autodd/tilelang_minimized_expected.py": "a deliberately failing input of TileLang's delta "
                                             "debugger (tilelang.autodd)",
    "analyze/example_conv_analyze.py": "TileLang's performance analyzer of TVM PrimFuncs "
                                       "(tilelang.tools.Analyzer: refused, TVM IR)",
    "analyze/example_gemm_analyze.py": "TileLang's performance analyzer of TVM PrimFuncs "
                                       "(tilelang.tools.Analyzer: refused, TVM IR)",
    "visual_layout_inference/visual_layout_inference.py":
        "TileLang's layout visualization of its TVM layout-inference pass "
        "(tl.layout_visualization_enable: refused; tl.layout_plot_dir draws this compiler's)",
    "gemm_sm120/sm120_nvfp4_blockscaled_gemm.py": "SM120 only (block-scaled MMA)",
    "plot_layout/layout_swizzle.py": "broken in TileLang's tree: it calls "
                                     "make_*_bank_swizzled_layout(rows, cols, bits), which take "
                                     "a buffer at a35008a42",
}

_AMD_WORDS = re.compile(r"(^|[_/])(amd|cdna|rocm|hip|mfma|mi300|mi350|gfx9\d\d)([_./]|$)", re.I)
_BLACKWELL = re.compile(r"^[^#\n]*(T\.tcgen05\w*|alloc_tmem|tcgen05_gemm|tcgen5mma|"
                        r"[\"']sm_10[03]a?[\"']|sm_100a?\b)", re.M)
_BLACKWELL_PATH = re.compile(r"(sm100|sm_100)", re.I)
_TRITON = re.compile(r"^\s*(import triton|from triton\b)", re.M)
# A TileLang program writes kernels (an import of tilelang.profiler's timer
# alone does not make one).
_TILELANG = re.compile(r"tilelang\.language|@tilelang\.jit|@T\.prim_func|tilelang\.compile")
_REQUIRED_ARG = re.compile(r"add_argument\([^)]*required\s*=\s*True")
_HIP_TARGET = re.compile(r"""target\s*=\s*["'](hip|rocm)""")

STATUS_ORDER = ["PASS", "CPU-PASS", "COMPILED", "FAIL", "TIMEOUT", "MISSING-DEP", "NOT-RUN",
                "OUT"]


def corpus(examples: str, folders: Optional[List[str]] = None) -> List[str]:
    """Every .py file under `examples` (or under the given folders of it),
    as paths relative to it."""
    files = []
    roots = [os.path.join(examples, f) for f in folders] if folders else [examples]
    for root in roots:
        for d, subdirs, names in os.walk(root):
            subdirs[:] = sorted(x for x in subdirs if not x.startswith((".", "__")))
            for name in sorted(names):
                if name.endswith(".py"):
                    files.append(os.path.relpath(os.path.join(d, name), examples))
    return sorted(files)


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


_LOCAL_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_]\w*)\S*\s+import|import\s+([A-Za-z_]\w*))",
                           re.M)


def _writes_tilelang(path: str, seen=None) -> bool:
    """Whether `path`, or a module of its folder it imports, writes TileLang
    kernels (a benchmark that imports its folder's kernels is a TileLang
    program; one that imports only tilelang.profiler's timer is not)."""
    seen = seen if seen is not None else set()
    if path in seen or not os.path.isfile(path):
        return False
    seen.add(path)
    with open(path, errors="replace") as f:
        text = f.read()
    if _TILELANG.search(text):
        return True
    folder = os.path.dirname(path)
    for m in _LOCAL_IMPORT.finditer(text):
        name = m.group(1) or m.group(2)
        if _writes_tilelang(os.path.join(folder, name + ".py"), seen):
            return True
    return False


def classify(examples: str, rel: str) -> Optional[str]:
    """Why `rel` is not run as an in-scope program, or None."""
    if rel in OUT_OF_SCOPE:
        return OUT_OF_SCOPE[rel]
    name = os.path.basename(rel)
    if name.startswith(("test_", "regression_")):
        return ("a test or regression driver of TileLang's example suite (it runs the programs "
                "of its folder, which have rows of their own)")
    path = os.path.join(examples, rel)
    with open(path, errors="replace") as f:
        text = f.read()
    if _TRITON.search(text) and not _writes_tilelang(path):
        return "a Triton program"
    if _AMD_WORDS.search(rel) or _HIP_TARGET.search(text):
        return "AMD only"
    if _BLACKWELL_PATH.search(rel) or _BLACKWELL.search(text):
        return "Blackwell only (tcgen05 / TMEM)"
    if not is_program(path):
        return "a helper module of other examples, not a program"
    if _REQUIRED_ARG.search(text):
        return ("a command-line tool of a model's pipeline that needs arguments (checkpoint "
                "paths): not a program that runs alone")
    return None


_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt)|AssertionError|"
                         r"tilelang_mlir\.\S+)(:.*)?$")
_TIME_LINE = re.compile(r"(latenc|tflop|tflops|ms\b|speedup|time)", re.I)


# The rule a refusal names ("... (out of scope: TVM's IR and pass APIs)").
_OUT_RULE = re.compile(r"\(out of scope: ([^)]+)\)")


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


def run_one(examples: str, rel: str, mode: Optional[str], timeout: float, python: str,
            logs: Optional[str] = None, impl: str = "ours") -> Dict:
    path = os.path.join(examples, rel)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["CORPUS_STACK_AFTER"] = str(max(timeout - 15, 5))
    paths = [os.path.dirname(path), env.get("PYTHONPATH", "")]
    stand_in = _needs_stand_in(path)
    if stand_in:
        paths.append(os.path.join(HERE, "corpus_refs"))  # after everything: a real one wins
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    cmd = [python, os.path.abspath(__file__), "--child", path, "--impl", impl]
    if mode:
        cmd.insert(2, f"--{mode}")
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
        status = {"dry": "COMPILED", "cpu": "CPU-PASS"}.get(mode, "PASS")
        detail = ("checked against scripts/corpus_refs/flash_attn (a torch reference: the "
                  "real flash_attn is not installed)" if stand_in else "")
        return {"file": rel, "status": status, "detail": detail, "seconds": secs,
                "times": _times(p.stdout)}
    err = first_error(out)
    m = (re.match(r"(ModuleNotFoundError|ImportError): No module named '([^']+)'", err)
         or re.match(r"(ImportError): cannot import name '[^']+' from '([^']+)'", err))
    if m and not m.group(2).startswith(("tilelang", "tvm")):
        return {"file": rel, "status": "MISSING-DEP", "detail": err, "seconds": secs,
                "times": []}
    rule = _OUT_RULE.search(err)
    if rule:  # a refusal under one of the rules (compat/refusals.py): out of scope
        return {"file": rel, "status": "OUT", "seconds": secs, "times": [],
                "detail": f"stops at a refusal ({rule.group(1)}): {err}"}
    return {"file": rel, "status": "FAIL", "detail": err, "seconds": secs,
            "times": _times(p.stdout)}


def _times(stdout: str) -> List[str]:
    return [line.strip()[:120] for line in stdout.splitlines()
            if _TIME_LINE.search(line) and any(c.isdigit() for c in line)][:6]


# ---------------------------------------------------------------------------
# the child: one example
# ---------------------------------------------------------------------------


def child(path: str, mode: Optional[str], impl: str = "ours") -> int:
    import faulthandler
    import runpy

    # A run that will time out leaves the Python stacks of where it was.
    stack_after = float(os.environ.get("CORPUS_STACK_AFTER", "0"))
    if stack_after > 0:
        faulthandler.dump_traceback_later(stack_after, exit=False)
    sys.argv = [path]
    if impl == "tilelang":  # TileLang itself (the denominator): the program as it is
        runpy.run_path(path, run_name="__main__")
        return 0

    from tilelang_mlir import compat
    from tilelang_mlir.compat import emulate

    compat.install()
    if mode == "dry":
        emulate.dry()
    elif mode == "cpu":
        emulate.cpu()
    sys.argv = [path]
    try:
        runpy.run_path(path, run_name="__main__")
    except emulate.DryStop as e:
        print(f"@@DRY-STOP@@ first launch of kernel {e}")
        return 0
    return 0


def merge(ours: List[Dict], theirs: List[Dict]) -> Dict:
    """Our rows against TileLang's on the same card: the denominator is the
    in-scope programs TileLang itself runs to the end (PASS)."""
    mine = {r["file"]: r for r in ours}
    denominator = [r["file"] for r in theirs if r["status"] == "PASS"
                   and mine.get(r["file"], {}).get("status") not in ("OUT", None)]
    passed = [f for f in denominator if mine[f]["status"] == "PASS"]
    failed = [mine[f] for f in denominator if mine[f]["status"] != "PASS"]
    tl = {r["file"]: r for r in theirs}
    beyond = [f for f, r in mine.items() if r["status"] == "PASS"
              and tl.get(f, {}).get("status") not in ("PASS", None)]
    not_compared = [f for f, r in mine.items() if r["status"] != "OUT" and f not in tl]
    return {"denominator": len(denominator), "passed": len(passed), "failed": failed,
            "beyond": [(f, tl[f]["status"], tl[f]["detail"]) for f in beyond],
            "not_compared": not_compared}


def print_merge(ours_path: str, theirs_path: str) -> int:
    with open(ours_path) as f:
        ours = json.load(f)
    with open(theirs_path) as f:
        theirs = json.load(f)
    m = merge(ours, theirs)
    n, k = m["denominator"], m["passed"]
    print(f"{k} of {n} in-scope programs that TileLang runs pass here "
          f"({100.0 * k / max(n, 1):.1f}%)")
    for r in sorted(m["failed"], key=lambda r: r["file"]):
        print(f"  {r['status']:8} {r['file']}  {r['detail'][:160]}")
    print(f"{len(m['beyond'])} pass here where TileLang does not:")
    for f, status, detail in sorted(m["beyond"]):
        print(f"  {f}  (TileLang: {status} {detail[:120]})")
    if m["not_compared"]:
        print(f"{len(m['not_compared'])} in scope here have no TileLang row: "
              + ", ".join(sorted(m["not_compared"])))
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
    mode = ("dry (no GPU: compiled for sm_90a, stopped at the first launch)" if args.dry else
            "CPU emulation (no GPU: kernels on the CPU target)" if args.cpu else gpu)
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
    ap.add_argument("--cpu", action="store_true", help="no GPU: run the kernels on the CPU "
                                                       "target (compat/emulate.py)")
    ap.add_argument("--folders", default="", help="only these folders of examples/ "
                                                  "(comma-separated; default: all)")
    ap.add_argument("--only", default="", help="run the files whose path contains one of "
                                               "these (comma-separated)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--logs", help="write each example's output into this folder")
    ap.add_argument("--md", help="update this markdown file (docs/compat.md)")
    ap.add_argument("--gpu", default="", help="the GPU's name for the report")
    ap.add_argument("--tilelang-commit", default="", help="the examples' commit for the report")
    ap.add_argument("--impl", choices=("ours", "tilelang"), default="ours",
                    help="whose `tilelang` runs the programs: this package's compat route "
                         "(ours) or an installed TileLang (the denominator)")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="seconds for the whole run: programs not started by then are "
                         "NOT-RUN, and none runs past it")
    ap.add_argument("--merge", nargs=2, metavar=("OURS", "TILELANG"),
                    help="compare two --json results: of the in-scope programs TileLang "
                         "passes, how many pass here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.merge:
        return print_merge(*args.merge)
    if args.dry and args.cpu:
        ap.error("--dry and --cpu exclude each other")
    mode = "dry" if args.dry else "cpu" if args.cpu else None
    if args.child:
        return child(args.child, mode, args.impl)
    if not args.examples:
        ap.error("--examples is required")
    examples = os.path.abspath(args.examples)
    rows, todo = [], []
    folders = [f for f in args.folders.split(",") if f] or None
    for rel in corpus(examples, folders):
        if args.only and not any(part in rel for part in args.only.split(",")):
            continue
        why = classify(examples, rel)
        if why:
            rows.append({"file": rel, "status": "OUT", "detail": why, "seconds": 0, "times": []})
            continue
        todo.append(rel)

    start = time.time()

    def go(rel):
        timeout = args.timeout
        if args.deadline:
            left = args.deadline - (time.time() - start)
            if left < 10:
                r = {"file": rel, "status": "NOT-RUN", "seconds": 0, "times": [],
                     "detail": f"not started within the run's {args.deadline:.0f} s"}
                print(f"NOT-RUN   {rel}", flush=True)
                return r
            timeout = min(timeout, left)
        r = run_one(examples, rel, mode, timeout, sys.executable, args.logs, args.impl)
        print(f"{r['status']:9} {r['seconds']:6.1f}s {rel}  {r['detail'][:150]}", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows.extend(pool.map(go, todo))
    counted = [r for r in rows if r["status"] != "OUT"]
    ok = sum(r["status"] in ("PASS", "CPU-PASS", "COMPILED") for r in counted)
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
