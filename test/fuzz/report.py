#!/usr/bin/env python3
"""Markdown report of fuzz campaigns: one section per failure signature.

    python test/fuzz/report.py --opt /tmp/fuzz/opt --programs /tmp/fuzz/programs > findings.md

For each distinct failure: its class, signature, count, the reproducer
(the minimized one where there is one) and what it points at (the pass, the
source file of the crashing frames). Reads the summary.json that
tile_opt_fuzz.py and random_programs.py write; stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tile_opt_fuzz  # noqa: E402


def _last_pass(args: List[str]) -> str:
    for a in args or []:
        if a.startswith("--pass-pipeline="):
            body = a[len("--pass-pipeline="):]
            # the last pass name of the pipeline string
            names = re.findall(r"([a-z][\w-]*)(?:\{[^}]*\})?\)*$", body)
            return names[0] if names else body[-60:]
        if a.startswith("--") and not a.startswith("--mlir"):
            return a[2:]
    return "parser"


def recheck_opt(tool: "tile_opt_fuzz.TileOpt", sig: str, e: dict) -> str:
    """Whether the (minimized) reproducer still fails the same way with
    another tile-opt (e.g. the current build)."""
    d = Path(e["dir"])
    inp = d / ("min.mlir" if (d / "min.mlir").exists() else "input.mlir")
    args = e.get("minimized_args") or e.get("args")
    if args is None:  # older summaries: read the command back from cmd.sh
        import shlex
        line = [ln for ln in (d / "cmd.sh").read_text().splitlines() if "tile-opt" in ln
                and not ln.startswith("#")][0]
        words = shlex.split(line.split("tile-opt", 1)[1].split("|")[0])
        args = [w for w in words if not w.endswith(".mlir") and w != "--mlir-disable-threading"]
    args = [a for a in args if a != "--mlir-disable-threading"]
    res = tool.run(str(inp), args)
    unknown = re.findall(r"'([\w-]+)' does not refer to a registered pass", res.stderr)
    elements = tile_opt_fuzz.split_pipeline(args)
    note = ""
    if unknown and elements:  # a pass renamed or removed since: run without it
        args = tile_opt_fuzz.pipeline_args(args, [x for x in elements
                                                  if not any(u in x for u in unknown)])
        res = tool.run(str(inp), args)
        note = f" (without {', '.join(unknown)}, which it lacks)"
    if (res.signature or res.cls) == sig:
        return "still fails the same way" + note
        return "still fails the same way"
    return f"now {res.cls}" + (f" ({res.signature[:120]})" if res.signature else "") + note


def opt_section(out: Path, tool: Optional["tile_opt_fuzz.TileOpt"] = None) -> List[str]:
    s = json.loads((out / "summary.json").read_text())
    c = s["counts"]
    lines = [f"## tile-opt mutation fuzzing ({out})", "",
             f"{s['mutants']} mutants, {s['runs']} tile-opt runs: "
             + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
             + f"; mutants that verify: {s.get('parse_counts', {}).get('ok', '?')}; "
             f"runs over 5 s (not timed out): {len(s.get('slow_runs', []))}.", ""]
    order = {"CRASH": 0, "MEMORY": 1, "TIMEOUT": 2, "ROUNDTRIP": 3, "INTERNAL_DIAG": 4}
    items = sorted(s["signatures"].items(), key=lambda kv: (order.get(kv[1]["class"], 9),
                                                            -kv[1]["count"]))
    for n, (sig, e) in enumerate(items, 1):
        d = Path(e["dir"])
        repro = d / ("min_cmd.sh" if (d / "min_cmd.sh").exists() else "cmd.sh")
        inp = d / ("min.mlir" if (d / "min.mlir").exists() else "input.mlir")
        if e["class"] in ("TIMEOUT", "MEMORY"):
            where = sig.split(" in ", 1)[-1]
        else:
            where = _last_pass(e.get("minimized_args") or [])
            if where == "parser" and e["pipelines"]:
                where = f"pipeline {e['pipelines'][0]}"
        files = ", ".join(e.get("source_files") or []) or "-"
        lines += [f"### O{n}. {e['class']} x{e['count']} runs, {e.get('mutants', '?')} mutants: "
                  f"`{sig[:300]}`", "",
                  f"- points at: {where}; source files in the stack: {files}",
                  f"- pipelines: {', '.join(e['pipelines'][:12])}",
                  f"- seed cases: {', '.join(e['seed_cases'][:6])}",
                  f"- first: mutant {e['first']['mutant']} (seed {e['first']['seed']}): "
                  f"{'; '.join(e['first']['mutations'])}",
                  f"- reproducer: `{repro}` (input `{inp}`, "
                  f"{sum(1 for _ in open(inp))} lines)"]
        if tool is not None:
            lines.append(f"- rechecked with `{tool.path}`: {recheck_opt(tool, sig, e)}")
        lines.append("")
    return lines


def recheck_prog(prog: Path, timeout: float = 300, mem_mb: int = 4000) -> str:
    """The verdict of a program reproducer with the current package."""
    import resource

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    env = dict(os.environ, TILELANG_MLIR_DISABLE_CACHE="1")
    try:
        r = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True,
                           timeout=timeout, preexec_fn=limits, env=env)
    except subprocess.TimeoutExpired:
        return "TIMEOUT"
    if r.returncode not in (0, 1):
        return f"died (exit status {r.returncode})"
    try:
        res = json.loads(r.stdout[r.stdout.index("{"):])
    except ValueError:
        return f"exit status {r.returncode}: {r.stderr.strip()[-200:]}"
    gpu = ", ".join(f"{g['target']} {g['verdict']}" for g in res.get("gpu", []))
    return f"cpu {res['verdict']}" + (f"; {gpu}" if gpu else "")


def prog_section(out: Path, recheck: bool = False) -> List[str]:
    s = json.loads((out / "summary.json").read_text())
    c = s["counts"]
    lines = [f"## Random tile programs ({out})", "",
             f"{s['programs']} programs: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())),
             ""]
    fams = s.get("by_family", {})
    if fams:
        lines += ["| family | " + " | ".join(sorted({k for f in fams.values() for k in f})) + " |"]
        keys = sorted({k for f in fams.values() for k in f})
        lines += ["|---" * (len(keys) + 1) + "|"]
        for name, f in sorted(fams.items()):
            lines.append(f"| {name} | " + " | ".join(str(f.get(k, 0)) for k in keys) + " |")
        lines.append("")
    order = {"MISMATCH": 0, "CRASH": 1, "MEMORY": 2, "TIMEOUT": 3, "INTERNAL_ERROR": 4,
             "GPU_CRASH": 5, "GPU_MEMORY": 6, "GPU_TIMEOUT": 7, "GPU_INTERNAL_ERROR": 8}
    items = sorted(s["signatures"].items(), key=lambda kv: (order.get(kv[1]["verdict"], 9),
                                                            -kv[1]["count"]))
    for n, (sig, e) in enumerate(items, 1):
        d = Path(e["dir"])
        m = re.search(r"pass '([\w.-]+)' failed", sig + e.get("detail", ""))
        where = m.group(1) if m else (f"after {e['after_pass']}" if e.get("after_pass") else "-")
        lines += [f"### P{n}. {e['verdict']} x{e['count']} ({e['family']}): `{sig[:300]}`", "",
                  f"- points at: {where}",
                  f"- first: {e['first_desc']}",
                  f"- detail: {e['detail'][:400].strip()}".replace("\n", " | "),
                  f"- reproducer: `{d / 'prog.py'}`"
                  + (f"; input IR of the failing pass `{e['failing_pass_input']}`"
                     if e.get("failing_pass_input") else ""),
                  f"- other examples: {'; '.join(e['examples'][1:4]) or '-'}"]
        if recheck:
            lines.append(f"- rechecked with the current tree: {recheck_prog(d / 'prog.py')}")
        lines.append("")
    slow = s.get("slow", [])
    if slow:
        lines += [f"Programs over 10 s ({len(slow)}):", ""]
        for x in sorted(slow, key=lambda x: -x["seconds"])[:10]:
            lines.append(f"- {x['seconds']} s: {x['desc']} (`{x['file']}`)")
        lines.append("")
    diags = s.get("diagnostics", {})
    if diags:
        lines += ["Clear diagnostics (not failures):", ""]
        for k, v in sorted(diags.items(), key=lambda kv: -kv[1]["count"]):
            lines.append(f"- x{v['count']}: {k[:220]}")
        lines.append("")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opt", type=Path, action="append", default=[])
    ap.add_argument("--programs", type=Path, action="append", default=[])
    ap.add_argument("--recheck-tile-opt", metavar="TILE_OPT",
                    help="rerun each tile-opt reproducer with this binary (20 s, 4 GB)")
    ap.add_argument("--recheck-programs", action="store_true",
                    help="rerun each program reproducer with the current package")
    args = ap.parse_args(argv)
    tool = (tile_opt_fuzz.TileOpt(args.recheck_tile_opt, 20, 4000)
            if args.recheck_tile_opt else None)
    lines: List[str] = []
    for o in args.opt:
        lines += opt_section(o, tool)
    for p in args.programs:
        lines += prog_section(p, args.recheck_programs)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
