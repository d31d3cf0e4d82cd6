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
from concurrent.futures import ThreadPoolExecutor
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
            return line[4:].strip()[:300]
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:300]


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
        rows = [{"test": rel + "::*", "file": rel, "status": status, "detail": detail}]
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
        rows.append(classify_failure({"test": f"{rel}::{name}", "file": rel, "status": status,
                                      "detail": detail.replace("\n", " ")[:300]}))
    return rows


def git_commit(path: str) -> str:
    try:
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


def merge(ours: List[Dict], theirs: List[Dict]) -> Dict:
    """Per folder: in-scope tests TileLang passes, and how many of those pass here."""
    mine = {r["test"]: r for r in ours}
    per: Dict[str, Dict[str, int]] = {}
    missing = []
    for r in theirs:
        if r["status"] in ("OUT",):
            continue
        folder = r["file"].split("/")[0]
        d = per.setdefault(folder, {"tilelang_pass": 0, "ours_pass": 0})
        if r["status"] != "PASS":
            continue
        d["tilelang_pass"] += 1
        m = mine.get(r["test"])
        if m is not None and m["status"] == "PASS":
            d["ours_pass"] += 1
        else:
            missing.append({"test": r["test"], "ours": m["status"] if m else "MISSING",
                            "detail": m["detail"] if m else ""})
    total_t = sum(d["tilelang_pass"] for d in per.values())
    total_o = sum(d["ours_pass"] for d in per.values())
    return {"per_folder": per, "tilelang_pass": total_t, "ours_pass": total_o,
            "ratio": total_o / total_t if total_t else 0.0, "not_passing_here": missing}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilelang", help="a TileLang checkout (its testing/python is run)")
    ap.add_argument("--folders", default=",".join(FOLDERS))
    ap.add_argument("--only", default="", help="only files whose path contains one of these")
    ap.add_argument("--impl", choices=("ours", "tilelang"), default="ours")
    ap.add_argument("--emulate", choices=("none", "cpu", "dry"), default="none")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per test file")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--logs", help="write each file's pytest output into this folder")
    ap.add_argument("--merge", nargs=2, metavar=("OURS", "TILELANG"),
                    help="compare two --json results instead of running")
    args = ap.parse_args()
    if args.merge:
        ours, theirs = (json.load(open(p))["rows"] for p in args.merge)
        result = merge(ours, theirs)
        for folder, d in sorted(result["per_folder"].items()):
            print(f"{folder:12} TileLang passes {d['tilelang_pass']:4}, of those here "
                  f"{d['ours_pass']:4}")
        print(f"total: {result['ours_pass']} of {result['tilelang_pass']} "
              f"({100 * result['ratio']:.1f}%)")
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

    def go(rel):
        got = run_file(root, rel, args.impl, args.emulate, args.timeout, args.logs,
                       sys.executable)
        counts = {}
        for r in got:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        text = " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        print(f"{got[0]['seconds']:6.1f}s {rel}: {text}", flush=True)
        return got

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for got in pool.map(go, todo):
            rows.extend(got)
    summary = summarize(rows)
    print()
    statuses = ["PASS", "COMPILED", "FAIL", "ERROR", "TIMEOUT", "SKIP", "OUT"]
    for folder, d in sorted(summary.items()):
        print(f"{folder:12} " + " ".join(f"{s}={d.get(s, 0)}" for s in statuses if d.get(s)))
    total = {s: sum(d.get(s, 0) for d in summary.values()) for s in statuses}
    print("total        " + " ".join(f"{s}={v}" for s, v in total.items() if v))
    if args.json:
        meta = {"date": str(datetime.date.today()), "impl": args.impl,
                "emulate": args.emulate, "tilelang_commit": git_commit(root),
                "commit": git_commit(ROOT)}
        try:
            import torch

            if torch.cuda.is_available() and args.emulate == "none":
                meta["gpu"] = torch.cuda.get_device_name()
        except ImportError:
            pass
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
