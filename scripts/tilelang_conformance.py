#!/usr/bin/env python3
"""Runs TileLang's own test suite (`testing/python` of a TileLang checkout)
through this package, as a conformance suite, and records one row per test.

    python scripts/tilelang_conformance.py --tilelang /tmp/tilelang            # on a GPU
    python scripts/tilelang_conformance.py --tilelang /tmp/tilelang --emulate cpu
    python scripts/tilelang_conformance.py --tilelang /tmp/tilelang --impl tilelang  # TileLang itself

Each test file runs in its own pytest process with TileLang's tests
unchanged, their conftest left out (it puts the checkout's own `tilelang`
package first on sys.path) and `tilelang_mlir.compat.pytest_plugin` in its
place: the `tilelang` names are this package's (`--impl ours`, the default)
or an installed TileLang's (`--impl tilelang`, the denominator: what TileLang
itself passes on the same card). `--emulate cpu` runs CUDA programs on the
CPU target and `--emulate dry` only compiles them for sm_90a, for machines
without a GPU (compat/emulate.py); neither is a conformance result.

Tests are classified in scope or out of scope by the rules of docs/compat.md
(OUT_OF_SCOPE below, by file, with the reason). `--merge OURS.json
TILELANG.json` prints and writes the comparison: of the in-scope tests that
TileLang passes, how many pass through this package, per folder.

TileLang's tests are not part of this repository (their licence is theirs):
point --tilelang at a checkout of tile-ai/tilelang (a35008a42 for the
recorded results).
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The folders of testing/python in scope (issue 43).
FOLDERS = ["language", "kernel", "issue", "jit", "autotune", "profiler", "math", "fastmath",
           "cuda"]

# Test files outside the count, with the reason (docs/compat.md's rules: TVM's
# IR and pass APIs, hardware we cannot run, TileLang's adapter internals).
# A pattern is matched against the path under testing/python (fnmatch-style).
OUT_OF_SCOPE: Dict[str, str] = {
    "language/test_tilelang_language_tcgen05_*.py": "Blackwell tcgen05/TMEM instructions",
    "language/test_tilelang_language_tmem_copy.py": "Blackwell TMEM",
    "language/test_tilelang_language_nvf4_mma_block_scale.py": "SM120/Blackwell block-scaled MMA",
    # TileLang's adapter internals (tvm_ffi, cython, NVRTC, CuTeDSL) and its
    # TVM lowering engine: compat/refusals.py.
    "jit/test_tilelang_jit_adapter_wrapper.py": "TileLang's adapter internals (its C source "
                                                "wrapper over TVM IR modules)",
    "jit/test_tilelang_jit_cutedsl*.py": "TileLang's CuTeDSL execution backend",
    "jit/test_tilelang_jit_nvrtc_host.py": "TileLang's NVRTC adapter internals (its host "
                                           "argument forwarding)",
    "jit/test_tilelang_jit_nvrtc_include_paths.py": "TileLang's NVRTC adapter internals (CUDA "
                                                    "include discovery for its C++)",
    "jit/test_tilelang_jit_tvm_ffi_executable.py": "TileLang's tvm_ffi adapter internals",
    "jit/test_tilelang_jit_callback.py": "TileLang's postprocessing callbacks of the CUDA C++ "
                                         "it generates (tilelang.engine.callback)",
    "autotune/test_tilelang_autotune_atomic_save.py": "TileLang's on-disk autotune format (its "
                                                      "adapters' library files)",
    "autotune/test_tilelang_autotune_cutedsl_cache.py": "TileLang's CuTeDSL execution backend",
    "profiler/test_bench_cupti.py": "TileLang's CUPTI timing internals (_bench_with_cupti)",
}


def classify(rel: str) -> Optional[str]:
    import fnmatch

    for pattern, why in OUT_OF_SCOPE.items():
        if fnmatch.fnmatch(rel, pattern):
            return why
    return None


# Failures that are out of scope by what they exercise, recognized from the
# failure itself (so that a test is classified per test, not per file):
# - a check for a piece of C++ syntax in the text of TileLang's generated
#   CUDA C++ (`"tl::tma_load" in kernel.get_kernel_source()`): this
#   compiler generates PTX (LLVM IR on the CPU), which the assertion's
#   haystack shows. A bare word ('wgmma', 'tma_load') is not C++ syntax and
#   stays a failure where our PTX lacks it;
# - a refusal by rule (docs/compat.md): our errors name the rule as
#   "(out of scope: <rule>)".
_SOURCE_TEXT = re.compile(r"assert \(?(?P<needle>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") "
                          r"(?:not )?in '(?:; ModuleID|//|\s*\.version|\s*\.target)")
_CPP_SYNTAX = re.compile(r"::|[(){}=;<>*&\[\] ]|__|_t\b")
_OUT_RULE = re.compile(r"\(out of scope: ([^)]+)\)")


def classify_failure(row: Dict) -> Dict:
    """`row` with status OUT (and the reason) where its failure is out of
    scope by rule; else unchanged."""
    if row["status"] not in ("FAIL", "ERROR"):
        return row
    detail = row.get("detail", "")
    m = _OUT_RULE.search(detail)
    if m:
        return dict(row, status="OUT", detail=f"{m.group(1)} ({detail[:160]})")
    text = _SOURCE_TEXT.search(detail)
    if text and _CPP_SYNTAX.search(text.group("needle")[1:-1]):
        return dict(row, status="OUT",
                    detail="checks the text of TileLang's generated CUDA C++; tilelang-mlir "
                           "generates PTX (" + detail[:120] + ")")
    return row


def _row(test: str, rel: str, status: str, detail: str) -> Dict:
    """One result row, classified on its whole failure text (the rule of a
    refusal ends a long message), then shortened."""
    row = classify_failure({"test": test, "file": rel, "status": status,
                            "detail": detail.replace("\n", " ")})
    return dict(row, detail=row["detail"][:300])


def test_files(root: str, folders: List[str], only: str) -> List[str]:
    base = os.path.join(root, "testing", "python")
    out = []
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(base, folder, "**", "test_*.py"),
                                     recursive=True)):
            rel = os.path.relpath(path, base)
            if only and not any(part in rel for part in only.split(",")):
                continue
            out.append(rel)
    return out


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("E   "):
            return line[4:].strip()[:1000]
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:1000]


def run_file(root: str, rel: str, impl: str, emulate: str, timeout: float,
             logs: Optional[str], python: str) -> List[Dict]:
    base = os.path.join(root, "testing", "python")
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "junit.xml")
        cmd = [python, "-m", "pytest", rel, "-q", "-p", "no:cacheprovider", "--noconftest",
               "-p", "tilelang_mlir.compat.pytest_plugin", f"--junitxml={xml}",
               "-o", "junit_family=xunit1", f"--tl-impl={impl}"]
        if emulate != "none":
            cmd.append(f"--tl-emulate={emulate}")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # TileLang runs its tests with the checkout's root on sys.path, where
        # some import helpers from its `examples` (a namespace package):
        # that folder alone is put on the path here (the root also holds
        # TileLang's own `tilelang`, which must not shadow the one tested).
        examples = os.path.join(root, "examples")
        if os.path.isdir(examples):
            os.symlink(os.path.abspath(examples), os.path.join(tmp, "examples"))
            env["PYTHONPATH"] = os.pathsep.join(
                [tmp] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        t0 = time.time()
        try:
            proc = subprocess.run(cmd, cwd=base, capture_output=True, text=True,
                                  timeout=timeout, env=env)
            output, timed_out = proc.stdout + proc.stderr, False
        except subprocess.TimeoutExpired as e:
            output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
                else (e.stdout or "")
            timed_out = True
        seconds = time.time() - t0
        if logs:
            path = os.path.join(logs, rel.replace("/", "__") + ".log")
            os.makedirs(logs, exist_ok=True)
            with open(path, "w") as f:
                f.write(" ".join(cmd) + "\n\n" + output)
        rows = parse_junit(xml, rel) if os.path.exists(xml) else []
    if not rows:
        status = "TIMEOUT" if timed_out else "ERROR"
        detail = f"timed out after {timeout:.0f} s" if timed_out else _first_line(output)
        rows = [_row(rel + "::*", rel, status, detail)]
    elif timed_out:
        rows.append({"test": rel + "::<rest>", "file": rel, "status": "TIMEOUT",
                     "detail": f"the file timed out after {timeout:.0f} s"})
    for r in rows:
        r["seconds"] = round(seconds, 1)
    return rows


def parse_junit(path: str, rel: str) -> List[Dict]:
    try:
        tree = ET.parse(path)
    except ET.ParseError:
        return []
    rows = []
    for case in tree.iter("testcase"):
        name = case.get("name", "?")
        status, detail = "PASS", ""
        for tag, st in (("failure", "FAIL"), ("error", "ERROR"), ("skipped", "SKIP")):
            node = case.find(tag)
            if node is not None:
                status = st
                msg = node.get("message") or ""
                detail = _first_line(node.text or "") if st != "SKIP" else msg
                if st != "SKIP" and not detail:
                    detail = msg
                break
        if status == "SKIP" and "dry: compiled" in detail:
            status = "COMPILED"
        rows.append(_row(f"{rel}::{name}", rel, status, detail))
    return rows


def git_commit(path: str) -> str:
    """The commit of the checkout at `path` ("?" where `path` is not the top
    of one: a copied testing/ folder inside another repository)."""
    try:
        top = subprocess.run(["git", "-C", path, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True).stdout.strip()
        if not top or os.path.realpath(top) != os.path.realpath(path):
            return "?"
        return subprocess.run(["git", "-C", path, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        return "?"


def summarize(rows: List[Dict]) -> Dict[str, Dict[str, int]]:
    out: Dict[str, Dict[str, int]] = {}
    for r in rows:
        folder = r["file"].split("/")[0]
        d = out.setdefault(folder, {})
        d[r["status"]] = d.get(r["status"], 0) + 1
    return out


def _file_rows(rows: List[Dict]) -> Dict[str, Dict]:
    """Our rows that stand for a whole file: `file::*` (the file did not
    run, or is out of scope by its OUT_OF_SCOPE rule) and pytest's row of a
    module that failed to collect (`file::folder.module`)."""
    out = {}
    for r in rows:
        name = r["test"].split("::", 1)[1] if "::" in r["test"] else "*"
        if name == "*" or not name.startswith("test"):
            out[r["file"]] = r
    return out


def merge(ours: List[Dict], theirs: List[Dict]) -> Dict:
    """Per folder: the tests TileLang passes; of those, the ones out of
    scope here by rule (our row, or our row of the whole file, is OUT: its
    reason names the rule); the rest are in scope, and how many of them pass
    here."""
    mine = {r["test"]: r for r in ours}
    files = _file_rows(ours)
    per: Dict[str, Dict[str, int]] = {}
    missing, out_reasons = [], {}
    for r in theirs:
        if r["status"] in ("OUT",):
            continue
        folder = r["file"].split("/")[0]
        d = per.setdefault(folder, {"tilelang_pass": 0, "out_here": 0, "in_scope": 0,
                                    "ours_pass": 0})
        if r["status"] != "PASS":
            continue
        d["tilelang_pass"] += 1
        m = mine.get(r["test"]) or files.get(r["file"])
        if m is not None and m["status"] == "OUT":
            d["out_here"] += 1
            why = m["detail"].split(" (")[0][:120]
            out_reasons[why] = out_reasons.get(why, 0) + 1
            continue
        d["in_scope"] += 1
        if m is not None and m["status"] == "PASS" and m["test"] == r["test"]:
            d["ours_pass"] += 1
        else:
            missing.append({"test": r["test"], "ours": m["status"] if m else "MISSING",
                            "detail": m["detail"] if m else ""})
    total = {k: sum(d[k] for d in per.values())
             for k in ("tilelang_pass", "out_here", "in_scope", "ours_pass")}
    return {"per_folder": per, **total,
            "ratio": total["ours_pass"] / total["in_scope"] if total["in_scope"] else 0.0,
            "ratio_of_tilelang_pass": (total["ours_pass"] / total["tilelang_pass"]
                                       if total["tilelang_pass"] else 0.0),
            "out_reasons": dict(sorted(out_reasons.items(), key=lambda kv: -kv[1])),
            "not_passing_here": missing}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilelang", help="a TileLang checkout (its testing/python is run)")
    ap.add_argument("--folders", default=",".join(FOLDERS))
    ap.add_argument("--only", default="", help="only files whose path contains one of these")
    ap.add_argument("--impl", choices=("ours", "tilelang"), default="ours")
    ap.add_argument("--emulate", choices=("none", "cpu", "dry"), default="none")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per test file")
    ap.add_argument("--commit", default="",
                    help="this tree's commit, where the checkout's git does not know it (a "
                         "copy on the GPU machine)")
    ap.add_argument("--tilelang-commit", default="",
                    help="the checkout's commit, where --tilelang is a copy without git")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="seconds for the whole run: files not started by then are NOTRUN "
                         "(the JSON is rewritten after every file, so a cut run keeps its rows)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--logs", help="write each file's pytest output into this folder")
    ap.add_argument("--merge", nargs=2, metavar=("OURS", "TILELANG"),
                    help="compare two --json results instead of running")
    args = ap.parse_args()
    if args.merge:
        ours, theirs = (json.load(open(p))["rows"] for p in args.merge)
        result = merge(ours, theirs)
        print(f"{'folder':12} {'TileLang passes':>15} {'out here':>9} {'in scope':>9} "
              f"{'pass here':>10}")
        for folder, d in sorted(result["per_folder"].items()):
            print(f"{folder:12} {d['tilelang_pass']:15} {d['out_here']:9} {d['in_scope']:9} "
                  f"{d['ours_pass']:10}")
        print(f"total: {result['ours_pass']} of {result['in_scope']} in-scope tests that "
              f"TileLang passes ({100 * result['ratio']:.1f}%); of all {result['tilelang_pass']} "
              f"it passes: {100 * result['ratio_of_tilelang_pass']:.1f}%")
        for why, n in result["out_reasons"].items():
            print(f"  out here: {n:4}  {why}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        return 0
    if not args.tilelang:
        ap.error("--tilelang is required")
    root = os.path.abspath(args.tilelang)
    files = test_files(root, args.folders.split(","), args.only)
    rows: List[Dict] = []
    todo = []
    for rel in files:
        why = classify(rel)
        if why:
            rows.append({"test": rel + "::*", "file": rel, "status": "OUT", "detail": why,
                         "seconds": 0})
        else:
            todo.append(rel)

    start = time.time()
    meta = {"date": str(datetime.date.today()), "impl": args.impl,
            "emulate": args.emulate,
            "tilelang_commit": args.tilelang_commit or git_commit(root),
            "commit": args.commit or git_commit(ROOT)}
    try:
        import torch

        if torch.cuda.is_available() and args.emulate == "none":
            meta["gpu"] = torch.cuda.get_device_name()
    except ImportError:
        pass

    def save(partial: bool) -> None:
        if args.json:
            with open(args.json + ".tmp", "w") as f:
                json.dump({"meta": dict(meta, partial=partial), "rows": rows}, f, indent=1)
            os.replace(args.json + ".tmp", args.json)

    def go(rel):
        if args.deadline and time.time() - start > args.deadline:
            return [{"test": rel + "::*", "file": rel, "status": "NOTRUN",
                     "detail": f"not started within the run's {args.deadline:.0f} s",
                     "seconds": 0}]
        timeout = args.timeout
        if args.deadline:
            timeout = max(1.0, min(timeout, args.deadline - (time.time() - start)))
        got = run_file(root, rel, args.impl, args.emulate, timeout, args.logs,
                       sys.executable)
        counts = {}
        for r in got:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        text = " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        print(f"{got[0]['seconds']:6.1f}s {rel}: {text}", flush=True)
        return got

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for done in as_completed([pool.submit(go, rel) for rel in todo]):
            rows.extend(done.result())
            save(partial=True)
    rows.sort(key=lambda r: r["test"])
    summary = summarize(rows)
    print()
    statuses = ["PASS", "COMPILED", "FAIL", "ERROR", "TIMEOUT", "SKIP", "OUT", "NOTRUN"]
    for folder, d in sorted(summary.items()):
        print(f"{folder:12} " + " ".join(f"{s}={d.get(s, 0)}" for s in statuses if d.get(s)))
    total = {s: sum(d.get(s, 0) for d in summary.values()) for s in statuses}
    print("total        " + " ".join(f"{s}={v}" for s, v in total.items() if v))
    save(partial=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
