#!/usr/bin/env python3
"""Mutation fuzzer for `tile-opt`: mutated lit inputs through every pass pipeline.

The seeds are the cases of test/lit/**/*.mlir (split at `// -----`, comment
lines dropped). Each mutant is one seed case with 1-4 text mutations that
keep it parseable most of the time: numbers replaced by interesting values
(0, 1, -1, 3, 96, 2**31, 2**32, 65536, ...), one value replaced everywhere at
once (so shapes, copy extents and loop bounds stay consistent), memref shapes
with 0/1 dimensions or a dimension added or dropped, element types swapped
(f16/bf16/f32/f64/i1/i8/i32/f8E4M3FN/...), tile attributes swapped (threads,
num_stages, policy, scope, reduce kind, swizzle, dim, unit flags), lines and
whole regions deleted or duplicated, an SSA operand replaced by another value.

A mutant is first parsed and verified (`tile-opt mutant.mlir`); one that
parses runs through the RUN-line pipelines of its file and through every
major pass and pipeline (PIPELINES below: the CPU, sm_80, sm_90a and gfx942
pipelines of tl.compile, each pass alone, the print/parse round trip). Each
run has a timeout and a memory limit and is classified:

  ok          exit 0
  diagnostic  exit 1 with an `error:` message (an invalid input rejected)
  CRASH       a signal, an assertion, "PLEASE submit a bug report", an exit
              status other than 0/1, or exit 1 without any `error:`
  TIMEOUT     still running after --timeout seconds
  MEMORY      stopped by the memory limit (bad_alloc / out of memory)
  ROUNDTRIP   the printed IR of a valid input does not parse again

Failures are deduplicated by signature (assertion text, or the top named
frames of the stack; for TIMEOUT/MEMORY the pass that was running, found by
one rerun with --mlir-print-ir-before-all) and written to
OUT/crashers/<CLASS>_<hash>/ (input.mlir, cmd.sh, stderr.txt, sig.txt,
meta.json; min.mlir and min_cmd.sh when the line-deletion minimizer shrank
it). OUT/summary.json holds the counts and every signature; a run with the
same --out continues it (mutant i depends only on --seed and i, so chunks
--start 0, --start 500, ... of one seed add up to one campaign).

    .venv/bin/python test/fuzz/tile_opt_fuzz.py --seed 1 --count 200 --out /tmp/fuzz-opt

Exit status: 0 when no failure was found, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[2]
LIT_DIR = ROOT / "test" / "lit"

FAILURE_CLASSES = ("CRASH", "TIMEOUT", "MEMORY", "ROUNDTRIP")
# Reported, not failing CI: a verified input that a pass turned into IR an
# upstream pass or the LLVM translation rejects (exit 1 with an error, but
# the error is about IR our lowering built, not about the input).
REPORTED_CLASSES = ("INTERNAL_DIAG",)
# A mutant that hangs or blows up in one pipeline mostly does so in all the
# pipelines that share the pass (each costs the timeout and a rerun): after
# this many, its other pipelines are skipped (counted in the summary).
MAX_HANGS_PER_MUTANT = 2
_INTERNAL_DIAG = re.compile(
    r"error: .*(?:'(?:llvm|nvvm|rocdl|gpu|nvgpu|amdgpu|ub)\.[\w.]+' op|"
    r"'(?:arith|memref|vector|scf|math|func|cf)\.[\w.]+' op (?:operand|result) #\d+ must be|"
    r"failed to verify|failed to legalize|LLVM Translation failed|unrealized_conversion_cast|"
    r"cannot be converted to LLVM IR|does not dominate)")
# (Tile passes attach user-level diagnostics to memref.load/store inside a
# tile.parallel: an upstream op name alone does not make it internal.)

# ---------------------------------------------------------------------------
# Pipelines: what tl.compile runs (python/tilelang_mlir/compiler/{compile,cuda,
# rocm}.py, without the final binary step) and each pass alone.
# ---------------------------------------------------------------------------

_CPU_EXPANSIONS = ("ctlz", "sinh", "cosh", "tan", "tanh", "asinh", "acosh", "atanh", "ceil",
                   "exp2", "powf", "fpowi", "round", "roundeven", "rsqrt", "clampf")


def _pp(*elements: str) -> List[str]:
    return ["--pass-pipeline=builtin.module(" + ",".join(elements) + ")"]


def _gm(p: str) -> str:
    return f"gpu.module({p})"


_NVVM_TAIL = [_gm("convert-nvgpu-to-nvvm"), _gm("convert-scf-to-cf"),
              _gm("convert-gpu-to-nvvm{index-bitwidth=64}"), _gm("convert-nvvm-to-llvm"),
              _gm("canonicalize"), _gm("cse"), _gm("reconcile-unrealized-casts"),
              _gm("tile-finalize-kernel-params")]
_GPU_MODULE_PASSES = [_gm("tile-fold-divisible-index"), "canonicalize", "cse",
                      _gm("tile-fast-int-to-float"), _gm("canonicalize"), _gm("tile-fuse-lop3")]


def _cuda(chip: str, features: str, specialize: bool) -> List[str]:
    ws = (["func.func(tile-warp-specialize{cluster-size=2 persistent-sms=132 pingpong=false "
           "rotate=false rotate-sched-barrier=false})"] if specialize else [])
    wgmma = "true" if chip == "sm_90a" else "false"
    return _pp("canonicalize", "cse", *ws, "func.func(tile-pipeline)", "canonicalize", "cse",
               f"func.func(tile-layout-inference{{wgmma={wgmma}}})",
               "func.func(tile-insert-barriers)",
               f"convert-tile-to-nvvm{{chip={chip} features={features} tma-store=true}}",
               *_GPU_MODULE_PASSES, *_NVVM_TAIL)


def _rocm(chip: str) -> List[str]:
    return _pp("canonicalize", "cse", "func.func(tile-pipeline)", "canonicalize", "cse",
               "func.func(tile-layout-inference{mma=false mfma=true})",
               "func.func(tile-insert-barriers)", f"convert-tile-to-rocdl{{chip={chip}}}",
               "canonicalize", "cse", _gm("convert-scf-to-cf"), _gm("convert-math-to-llvm"),
               _gm(f"convert-gpu-to-rocdl{{chipset={chip} index-bitwidth=64}}"),
               _gm("canonicalize"), _gm("cse"), _gm("reconcile-unrealized-casts"))


# name -> tile-opt arguments. "@roundtrip" entries are handled specially.
PIPELINES: Dict[str, List[str]] = {
    "roundtrip": ["@roundtrip"],
    "roundtrip-generic": ["@roundtrip", "--mlir-print-op-generic"],
    "canonicalize": ["--canonicalize", "--cse"],
    "cpu": _pp("canonicalize", "cse", "convert-tile-to-scf", "canonicalize", "cse",
               "loop-invariant-code-motion", "arith-expand{include-bf16=true}",
               "math-expand-ops{ops=" + ",".join(_CPU_EXPANSIONS) + "}", "convert-scf-to-cf",
               "convert-to-llvm", "reconcile-unrealized-casts", "canonicalize"),
    "layout": _pp("func.func(tile-layout-inference)"),
    "layout-wgmma": _pp("func.func(tile-layout-inference{wgmma=true})"),
    "layout-mfma": _pp("func.func(tile-layout-inference{mma=false mfma=true})"),
    "print-layouts": _pp("func.func(tile-layout-inference,tile-print-layouts)"),
    "pipeline": _pp("func.func(tile-pipeline)", "canonicalize", "cse"),
    "pipeline-phases": _pp("func.func(tile-pipeline-schedule,tile-pipeline-expand)",
                           "canonicalize", "cse"),
    "warp-specialize": _pp("func.func(tile-warp-specialize{rotate=true pingpong=true})",
                           "canonicalize", "cse"),
    "insert-barriers": _pp("func.func(tile-insert-barriers)"),
    "nvvm-alone": ["--convert-tile-to-nvvm"],
    "rocdl-alone": _pp("convert-tile-to-rocdl{chip=gfx942}"),
    "gpu-module-passes": _pp(_gm("tile-fold-divisible-index"), _gm("tile-fast-int-to-float"),
                             _gm("tile-fuse-lop3"), _gm("tile-finalize-kernel-params")),
    "sm80": _cuda("sm_80", "+ptx80", False),
    "sm90a": _cuda("sm_90a", "+ptx81", True),
    "gfx942": _rocm("gfx942"),
    "gfx950": _rocm("gfx950"),
}



def package_pipelines() -> Dict[str, List[str]]:
    """The pipelines tl.compile runs, read from the tilelang_mlir package
    (so they follow its changes); {} when it cannot be imported. The final
    binary stage (LLVM's NVPTX backend) only in the `-ptx` variant."""
    try:
        from tilelang_mlir.compiler.cpu import cpu_stages
        from tilelang_mlir.compiler.cuda import cuda_stages
        from tilelang_mlir.compiler.rocm import rocm_stages
        from tilelang_mlir.compiler.target import parse_target
    except Exception as e:  # noqa: BLE001 (any import problem: use the static copies)
        print(f"warning: pipelines from the package unavailable ({e}); static copies used",
              file=sys.stderr)
        return {}

    def flat(stages, drop=("binary",)):
        return _pp(*[p for st in stages if st.name not in drop for p in st.passes])

    out = {}
    try:
        out["cpu"] = flat(cpu_stages())
        for name, target, configs in [("sm80", "cuda:sm_80", {}),
                                      ("sm80-narrow", "cuda:sm_80", {"tl.narrow_index": True}),
                                      ("sm90a", "cuda:sm_90a", {}),
                                      ("sm90a-rotate", "cuda:sm_90a",
                                       {"tl.enable_rotate": True, "tl.enable_pingpong": True,
                                        "tl.cluster_size": 1}),
                                      ("sm90a-nows", "cuda:sm_90a",
                                       {"tl.disable_warp_specialized": True})]:
            out[name] = flat(cuda_stages(parse_target(target), configs))
        out["sm80-ptx"] = flat(cuda_stages(parse_target("cuda:sm_80"), {}), drop=())
        for chip in ("gfx90a", "gfx942", "gfx950"):
            out[chip] = flat(rocm_stages(parse_target(f"rocm:{chip}")))
    except Exception as e:  # noqa: BLE001
        print(f"warning: pipelines from the package failed ({e}); static copies used",
              file=sys.stderr)
        return {}
    return out


# The pipelines that also run with `canonicalize,cse` after every pass
# ("<name>+cc"): a pass must accept what the folders leave of its
# predecessor's output (a pipelined loop of one iteration folded away took
# a barrier's only arrival with it, issue 44). The RUN-line pipelines of a
# seed's file get the variant too.
CLEANUP_VARIANTS = ("cpu", "sm80", "sm90a", "sm90a-rotate", "gfx942", "pipeline-phases")
_CLEANUP = ("canonicalize", "cse")
_ANCHORS = ("func.func(", "gpu.module(")


def _is_tile_pass(p: str) -> bool:
    name = re.sub(r"^(?:func\.func|gpu\.module)\(", "", p)
    return name.startswith(("tile-", "convert-tile-to-"))


def with_cleanup(args: List[str]) -> Optional[List[str]]:
    """`args` with `canonicalize,cse` after every pass of its pipeline up to
    its last tile pass (a func.func(...) or gpu.module(...) group split into
    one group a pass; the upstream lowering after it is left alone), or None
    when it has fewer than two tile passes to put them between."""
    elements = split_pipeline(args)
    if not elements:
        return None
    passes = []
    for e in elements:
        anchor = next((a for a in _ANCHORS if e.startswith(a) and e.endswith(")")), None)
        inner = _split_top(e[len(anchor):-1]) if anchor else [e]
        passes += [f"{anchor}{p})" if anchor else p for p in inner if p not in _CLEANUP]
    tiles = [i for i, p in enumerate(passes) if _is_tile_pass(p)]
    if len(tiles) < 2:
        return None
    out = []
    for i, p in enumerate(passes):
        out += [p, *_CLEANUP] if i <= tiles[-1] else [p]
    return pipeline_args(args, out)


def all_pipelines() -> Dict[str, List[str]]:
    merged = dict(PIPELINES)
    merged.update(package_pipelines())
    for name in CLEANUP_VARIANTS:
        cleaned = with_cleanup(merged[name]) if name in merged else None
        if cleaned:
            merged[f"{name}+cc"] = cleaned
    return merged


def check_pipelines(tool: "TileOpt", pipelines: Dict[str, List[str]]) -> Dict[str, List[str]]:
    """Drops (with a warning) the pipelines this tile-opt cannot parse: the
    package's pipelines may name a pass that a snapshot binary or a
    half-finished rebuild does not have, and every run would then be a
    `diagnostic` that tests nothing."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "empty.mlir")
        with open(path, "w") as f:
            f.write("func.func @f() {\n  return\n}\n")
        kept = {}
        for name, args in pipelines.items():
            res = tool.run(path, args)
            unknown = re.findall(r"'([\w-]+)' does not refer to a registered pass", res.stderr)
            elements = split_pipeline(args)
            if res.cls != "ok" and unknown and elements:
                trimmed = pipeline_args(args, [e for e in elements
                                               if not any(u in e for u in unknown)])
                if tool.run(path, trimmed).cls == "ok":
                    print(f"warning: pipeline {name}: without {', '.join(unknown)}, which this "
                          "tile-opt does not have", file=sys.stderr)
                    kept[name] = trimmed
                    continue
            if res.cls == "ok":
                kept[name] = args
            else:
                first = next((ln for ln in res.stderr.splitlines() if "error" in ln), res.cls)
                print(f"warning: pipeline {name} skipped: {first.strip()[:200]}", file=sys.stderr)
                if name in PIPELINES and PIPELINES[name] != args:
                    if tool.run(path, PIPELINES[name]).cls == "ok":
                        kept[name] = PIPELINES[name]
                        print(f"warning: pipeline {name}: the static copy is used", file=sys.stderr)
    if not kept:
        raise SystemExit("no pipeline runs on an empty function: is tile-opt broken?")
    return kept


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------


@dataclass
class Seed:
    path: str  # relative to the repository
    index: int  # case number within the file
    text: str
    run_pipelines: List[List[str]]


def _run_line_args(line: str) -> Optional[List[str]]:
    """The tile-opt arguments of a RUN line (without %s, -split-input-file,
    -verify-diagnostics, -o), or None for a RUN line without tile-opt."""
    cmd = line.split("RUN:", 1)[1].split("|")[0].strip()
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    if words and words[0] == "not":
        words = words[1:]
    if not words or words[0] != "tile-opt":
        return None
    out, skip = [], False
    for w in words[1:]:
        if skip:
            skip = False
            continue
        if w in ("%s", "-split-input-file", "--split-input-file", "-verify-diagnostics",
                 "--verify-diagnostics"):
            continue
        if w == "-o":
            skip = True
            continue
        if re.match(r"^\d*[<>]", w):  # 2>&1
            continue
        out.append(w)
    return out


def load_corpus(lit_dir: Path = LIT_DIR, extra: Sequence[Path] = ()) -> List[Seed]:
    seeds: List[Seed] = []
    files = sorted(lit_dir.rglob("*.mlir")) + sorted(Path(p) for p in extra)
    for f in files:
        text = f.read_text()
        runs = []
        for line in text.splitlines():
            if "RUN:" in line:
                args = _run_line_args(line)
                if args is not None and args not in runs:
                    runs.append(args)
        cases = re.split(r"^// -----.*$", text, flags=re.M)
        try:
            rel = str(f.resolve().relative_to(ROOT))
        except ValueError:
            rel = str(f)
        for i, case in enumerate(cases):
            lines = [ln for ln in case.splitlines() if ln.strip() and not ln.lstrip().startswith("//")]
            if not lines:
                continue
            seeds.append(Seed(rel, i, "\n".join(lines) + "\n", runs))
    return seeds


# ---------------------------------------------------------------------------
# Mutations. Each takes (lines, rng) and returns new lines and a description,
# or None when it does not apply.
# ---------------------------------------------------------------------------

INTERESTING = [0, 1, -1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 96, 100,
               127, 128, 129, 255, 256, 257, 384, 512, 1000, 1024, 2048, 4096, 65535, 65536,
               100000, 2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**40, 2**63 - 1, -2**31, -2**63]
DTYPES = ["f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64", "f8E4M3FN", "f8E5M2"]
_DTYPE_RE = re.compile(r"(?:(?<=[\d?]x)|(?<![\w.!]))(" + "|".join(
    sorted(DTYPES, key=len, reverse=True)) + r")(?!\w)")
_SSA_RE = re.compile(r"%[\w.$-]+")
_SHAPED_RE = re.compile(r"(memref|vector)<((?:(?:\?|\d+)x)*)([\w]+)")


def _numbers(line: str) -> List[Tuple[int, int]]:
    """Spans of the integer literals of a line, memref dimensions included
    (`128x32xf16` gives 128 and 32), not the digits of names (%c0, f16,
    sm_80, d0) or of floats."""
    spans = []
    for m in re.finditer(r"\d+", line):
        s, e = m.start(), m.end()
        prev = line[s - 1] if s else " "
        prev2 = line[s - 2] if s >= 2 else " "
        nxt = line[e] if e < len(line) else " "
        shape_prev = prev == "x" and (prev2.isdigit() or prev2 == "?")
        if (prev.isalnum() or prev in "_%#@.$^!") and not shape_prev:
            continue
        if (nxt.isalpha() or nxt in "_.") and nxt != "x":
            continue
        if nxt == "x" and e + 1 < len(line) and line[e + 1] in "0123456789abcdefABCDEF" \
                and line[s:e] == "0":
            continue  # 0x1F
        spans.append((s, e))
    return spans


def _new_number(rng: random.Random, old: int) -> int:
    r = rng.random()
    if r < 0.65:
        return rng.choice(INTERESTING)
    return rng.choice([old + 1, old - 1, old * 2, old // 2, -old, old * 3, old + 32, 0])


def _type_spans(line: str) -> List[Tuple[int, int]]:
    """Spans of the memref/vector types of a line (balanced <...>)."""
    spans = []
    for m in re.finditer(r"\b(?:memref|vector)<", line):
        depth = 0
        for k in range(m.end() - 1, len(line)):
            if line[k] == "<":
                depth += 1
            elif line[k] == ">":
                depth -= 1
                if depth == 0:
                    spans.append((m.start(), k + 1))
                    break
    return spans


def _in_spans(pos: int, spans) -> bool:
    return any(s <= pos < e for s, e in spans)


def m_number(lines, rng):
    """One integer literal outside a type replaced (types change in m_shape)."""
    cands = []
    for i, ln in enumerate(lines):
        types = _type_spans(ln)
        cands += [(i, s, e) for s, e in _numbers(ln) if not _in_spans(s, types)]
    if not cands:
        return None
    i, s, e = rng.choice(cands)
    old = int(lines[i][s:e])
    neg = s > 0 and lines[i][s - 1] == "-"
    if neg:
        s -= 1
        old = -old
    new = _new_number(rng, old)
    lines = list(lines)
    lines[i] = lines[i][:s] + str(new) + lines[i][e:]
    return lines, f"number {old}->{new} on line {i + 1}"


def m_number_everywhere(lines, rng):
    """One value replaced by another wherever it occurs (shapes, extents and
    bounds change together, so the mutant often still verifies)."""
    values = sorted({int(ln[s:e]) for ln in lines for s, e in _numbers(ln)})
    if not values:
        return None
    old = rng.choice(values)
    new = abs(_new_number(rng, old))
    if new == old:
        return None
    out = []
    for ln in lines:
        pieces, last = [], 0
        for s, e in _numbers(ln):
            if int(ln[s:e]) == old:
                pieces += [ln[last:s], str(new)]
                last = e
        out.append("".join(pieces) + ln[last:])
    return out, f"every {old}->{new}"


def _value_types(lines) -> Dict[str, str]:
    """SSA value -> its memref/vector type text, from definitions
    (`%x = op ... : T` with one result) and function arguments (`%A: T`)."""
    types: Dict[str, str] = {}
    for ln in lines:
        for m in re.finditer(r"(%[\w.$-]+): ((?:memref|vector)<)", ln):
            spans = [sp for sp in _type_spans(ln) if sp[0] == m.start(2)]
            if spans:
                types[m.group(1)] = ln[spans[0][0]:spans[0][1]]
        m = re.match(r"\s*(%[\w.$-]+) = [\w.]+.* : ((?:memref|vector)<.*>)\s*$", ln)
        if m and ln.count(" = ") >= 1:
            spans = _type_spans(ln)
            if spans and spans[-1][1] == len(ln.rstrip()):
                types[m.group(1)] = ln[spans[-1][0]:spans[-1][1]]
    return types


def _retype_value(lines, name: str, old: str, new: str,
                  types: Optional[Dict[str, str]] = None) -> List[str]:
    """The type of one value changed where it is defined and in every line
    that uses it. On a use line whose trailing type list has one memref
    type per buffer operand (copy, gemm, load/store, ...), only the type at
    the value's position changes; elsewhere every occurrence of the old type
    text on the line does."""
    types = types if types is not None else _value_types(lines)
    use = re.compile(re.escape(name) + r"(?![\w.$-])")
    out = []
    for ln in lines:
        if not use.search(ln):
            out.append(ln)
            continue
        colon = ln.rfind(" : ")
        eq = ln.find(" = ") if re.match(r"\s*%", ln) else -1
        if colon > 0 and eq < colon:
            operands = [m.group(0) for m in _SSA_RE.finditer(ln[eq + 3 if eq >= 0 else 0:colon])
                        if m.group(0) in types]
            spans = [sp for sp in _type_spans(ln) if sp[0] > colon]
            if eq >= 0 and len(spans) == len(operands) + 1:  # the result's type last
                operands.append(None)
            if len(spans) == len(operands) and name in operands:
                for k in reversed([k for k, v in enumerate(operands) if v == name]):
                    a, b = spans[k]
                    if ln[a:b] == old:
                        ln = ln[:a] + new + ln[b:]
                out.append(ln)
                continue
        out.append(ln.replace(old, new))
    return out


def _mutate_dims(dims: List[str], rng) -> List[str]:
    r = rng.random()
    new = list(dims)
    if dims and r < 0.5:
        k = rng.randrange(len(dims))
        new[k] = str(rng.choice([0, 1, 1, 2, 3, 5, 7, 8, 16, 33, 96, 100, 127, 1024, 65536,
                                 100000, 2**31, 2**32]))
    elif dims and r < 0.65:
        del new[rng.randrange(len(dims))]
    elif r < 0.85 or len(dims) < 2:
        new.insert(rng.randrange(len(dims) + 1), str(rng.choice([1, 1, 2, 4, 0])))
    else:
        a, b = rng.sample(range(len(dims)), 2)
        new[a], new[b] = new[b], new[a]
    return new


def m_shape(lines, rng):
    """A memref/vector shape changed (one dimension set to an interesting
    value, a dimension dropped, added or two swapped): for one SSA value
    (its definition and its uses) or for every value of that type."""
    cands = [(i, m) for i, ln in enumerate(lines) for m in _SHAPED_RE.finditer(ln)]
    if not cands:
        return None
    i, m = rng.choice(cands)
    dims = [d for d in m.group(2).split("x") if d]
    new = _mutate_dims(dims, rng)
    old_text = m.group(0)
    new_text = f"{m.group(1)}<{''.join(d + 'x' for d in new)}{m.group(3)}"
    if new_text == old_text:
        return None
    types = _value_types(lines)
    owners = [v for v, t in types.items() if t.startswith(old_text + ",") or
              t.startswith(old_text + ">")]
    if owners and rng.random() < 0.6:
        v = rng.choice(owners)
        t = types[v]
        return (_retype_value(lines, v, t, new_text + t[len(old_text):], types),
                f"shape of {v}: {t} -> {new_text}...")
    lines = [ln.replace(old_text, new_text) for ln in lines]
    return lines, f"shape {old_text} -> {new_text} everywhere"


_ALLOC_OF = {"shared": "tile.alloc_shared", "fragment": "tile.alloc_fragment",
             "local": "tile.alloc_local", "var": "tile.alloc_var"}


def m_scope(lines, rng):
    """A buffer moved to another memory scope (#tile.scope<...> in its
    type, at the definition and every use); mostly with the matching
    allocation op, so the mutant verifies (a shared operand made a fragment,
    a fragment made local or a rank-0 var, ...)."""
    types = _value_types(lines)
    owners = [v for v, t in types.items() if "#tile.scope<" in t]
    if not owners:
        return None
    v = rng.choice(sorted(owners))
    t = types[v]
    old = re.search(r"#tile\.scope<(\w+)>", t).group(1)
    new = rng.choice([x for x in _ALLOC_OF if x != old])
    nt = t.replace(f"#tile.scope<{old}>", f"#tile.scope<{new}>")
    out = _retype_value(lines, v, t, nt, types)
    if rng.random() < 0.8:
        dre = re.compile(r"\s*" + re.escape(v) + r" = " + _ALLOC_OF[old] + r"\b")
        out = [ln.replace(_ALLOC_OF[old], _ALLOC_OF[new], 1) if dre.match(ln) else ln
               for ln in out]
    return out, f"scope of {v}: {old} -> {new}"


def m_dtype(lines, rng):
    """An element type swapped: for one SSA buffer (definition and uses) or
    everywhere (scalar arithmetic included)."""
    cands = [(i, m) for i, ln in enumerate(lines) for m in _DTYPE_RE.finditer(ln)]
    if not cands:
        return None
    i, m = rng.choice(cands)
    old = m.group(1)
    new = rng.choice([d for d in DTYPES if d != old])
    types = _value_types(lines)
    owners = [v for v, t in types.items() if re.search(r"x" + old + r"\b", t)]
    if owners and rng.random() < 0.5:
        v = rng.choice(owners)
        t = types[v]
        nt = re.sub(r"x" + old + r"\b", "x" + new, t, count=1)
        return _retype_value(lines, v, t, nt, types), f"element type of {v}: {t} -> {nt}"
    lines = [_DTYPE_RE.sub(lambda x: new if x.group(1) == old else x.group(0), ln)
             for ln in lines]
    return lines, f"dtype {old}->{new} everywhere"


# (pattern, replacements): a match of the pattern is replaced by one of them.
ATTRS: List[Tuple[str, Sequence[str]]] = [
    (r"threads\((?!%)[^)]*\)", ["threads(1)", "threads(3)", "threads(0)", "threads(32)",
                               "threads(48)", "threads(64)", "threads(96)", "threads(128)",
                               "threads(160)", "threads(256)", "threads(384)", "threads(512)",
                               "threads(1024)", "threads(2048)", "threads(32, 4)",
                               "threads(64, 2)", "threads(4, 32)", "threads(3, 3)",
                               "threads(32, 2, 2)"]),
    (r"num_stages = -?\d+", ["num_stages = 0", "num_stages = 1", "num_stages = 2",
                             "num_stages = 3", "num_stages = 4", "num_stages = 5",
                             "num_stages = 8", "num_stages = 65536", "num_stages = -1"]),
    (r"#tile\.policy<\w+>", [f"#tile.policy<{p}>" for p in
                             ("square", "full_row", "full_col", "replicate")]),
    (r"#tile\.reduce<\w+>", [f"#tile.reduce<{k}>" for k in
                             ("sum", "max", "min", "abssum", "absmax")]),
    (r"#tile\.swizzle<[^>]*>", ["#tile.swizzle<0>", "#tile.swizzle<32>", "#tile.swizzle<64>",
                                "#tile.swizzle<128>", "#tile.swizzle<256>",
                                "#tile.swizzle<0, pad = 8>", "#tile.swizzle<128, pad = 1>",
                                "#tile.swizzle<0, pad = 0>"]),
    (r"#tile\.raster<\w+>", ["#tile.raster<row>", "#tile.raster<col>"]),
    (r"\bdim = -?\d+", ["dim = 0", "dim = 1", "dim = 2", "dim = 3", "dim = -1"]),
    (r"\bk_pack = -?\d+", ["k_pack = 0", "k_pack = 1", "k_pack = 2", "k_pack = 4"]),
    (r"\bvector = -?\d+", ["vector = 0", "vector = 1", "vector = 3", "vector = 8",
                           "vector = 16", "vector = 1024"]),
    (r"warp_partition = array<i64:[^>]*>", ["warp_partition = array<i64: 1, 1>",
                                            "warp_partition = array<i64: 2, 2>",
                                            "warp_partition = array<i64: 4, 1>",
                                            "warp_partition = array<i64: 0, 4>",
                                            "warp_partition = array<i64: 3, 1>",
                                            "warp_partition = array<i64: 8>"]),
    (r"\breplicate = \d+", ["replicate = 0", "replicate = 1", "replicate = 3",
                            "replicate = 1024"]),
    (r"\barrivals\(\d+\)", ["arrivals(0)", "arrivals(1)", "arrivals(3)", "arrivals(4096)"]),
    (r"chip = \"\w+\"", ['chip = "sm_80"', 'chip = "gfx942"']),
]

UNIT_FLAGS = {
    "tile.gemm ": ["transpose_a", "transpose_b", "clear_accum", "async", "k_pack = 2",
                   "policy = #tile.policy<full_col>", "policy = #tile.policy<replicate>"],
    "tile.gemm_sp ": ["transpose_a", "transpose_b", "clear_accum"],
    "tile.copy ": ["async", "multicast = 2", "multicast = 0"],
    "tile.reduce ": ["clear", "dim = 0", "dim = 1", "kind = #tile.reduce<absmax>"],
    "tile.cumsum ": ["reverse", "dim = 0", "dim = 1"],
    "tile.alloc_shared ": ["swizzle = #tile.swizzle<128>", "swizzle = #tile.swizzle<0, pad = 8>"],
    "tile.parallel ": ["vector = 8"],
}


def m_attr(lines, rng):
    cands = [(i, m, reps) for pat, reps in ATTRS for i, ln in enumerate(lines)
             for m in re.finditer(pat, ln)]
    if not cands:
        return None
    i, m, reps = rng.choice(cands)
    new = rng.choice([r for r in reps if r != m.group(0)] or reps)
    lines = list(lines)
    ln = lines[i]
    if rng.random() < 0.25:  # the same attribute changed everywhere
        lines = [x.replace(m.group(0), new) for x in lines]
        return lines, f"attr {m.group(0)} -> {new} everywhere"
    lines[i] = ln[:m.start()] + new + ln[m.end():]
    return lines, f"attr {m.group(0)} -> {new} on line {i + 1}"


def _attr_dict_span(line: str) -> Optional[Tuple[int, int]]:
    """The span of the `{...}` attribute dictionary of an op line, if any
    (not a region opened at the end of the line)."""
    body = line.rstrip()
    if body.endswith("{"):
        body = body[:-1]
    depth, start = 0, None
    for k, ch in enumerate(body):
        if ch == "{":
            if depth == 0:
                start = k
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                return start, k + 1
    return None


def m_flag(lines, rng):
    """A unit attribute or an option added to or removed from an op's
    attribute dictionary."""
    cands = [(i, op) for i, ln in enumerate(lines) for op in UNIT_FLAGS if op in ln]
    if not cands:
        return None
    i, op = rng.choice(cands)
    ln = lines[i]
    span = _attr_dict_span(ln)
    lines = list(lines)
    if span and rng.random() < 0.5:
        entries = [e.strip() for e in _split_top(ln[span[0] + 1:span[1] - 1])]
        if entries:
            gone = entries.pop(rng.randrange(len(entries)))
            new = "{" + ", ".join(entries) + "}" if entries else ""
            lines[i] = ln[:span[0]] + new + ln[span[1]:]
            return lines, f"removed {gone!r} from {op.strip()} on line {i + 1}"
    flag = rng.choice(UNIT_FLAGS[op])
    if span:
        lines[i] = ln[:span[1] - 1] + ", " + flag + ln[span[1] - 1:]
    else:
        k = ln.find(" : ")
        if op == "tile.parallel ":
            k = ln.rfind(" {")
            if k < 0:
                return None
            lines[i] = ln[:k] + " attributes {" + flag + "}" + ln[k:]
            return lines, f"added {flag!r} to {op.strip()} on line {i + 1}"
        if k < 0:
            return None
        lines[i] = ln[:k] + " {" + flag + "}" + ln[k:]
    return lines, f"added {flag!r} to {op.strip()} on line {i + 1}"


def _split_top(text: str) -> List[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _body_lines(lines) -> List[int]:
    """Lines that are ops inside a function (not the func/module frame)."""
    return [i for i, ln in enumerate(lines)
            if ln.strip() not in ("}", "return", "func.return", "llvm.return")
            and not ln.lstrip().startswith(("func.func", "module", "gpu.module", "llvm.func"))]


def _defines_used(lines, i) -> bool:
    m = re.match(r"\s*(%[\w.$-]+)", lines[i])
    if not m or " = " not in lines[i]:
        return False
    use = re.compile(re.escape(m.group(1)) + r"(?![\w.$-])")
    return any(use.search(ln) for k, ln in enumerate(lines) if k != i)


def m_delete_line(lines, rng):
    """A line deleted; mostly one whose result (if any) is not used, so the
    mutant still parses (dropping a copy, a gemm, a barrier, a store)."""
    cands = _body_lines(lines)
    if not cands:
        return None
    if rng.random() < 0.75:
        cands = [i for i in cands if not _defines_used(lines, i)
                 and not lines[i].rstrip().endswith("{")] or cands
    i = rng.choice(cands)
    return lines[:i] + lines[i + 1:], f"deleted line {i + 1}: {lines[i].strip()[:60]}"


def m_duplicate_line(lines, rng):
    cands = _body_lines(lines)
    if not cands:
        return None
    i = rng.choice(cands)
    # Ops without results duplicate cleanly; ops with a result get a new name.
    ln = lines[i]
    m = re.match(r"(\s*)(%[\w.$-]+)(:\d+)? = ", ln)
    if m:
        ln = ln.replace(m.group(2), m.group(2) + "_dup", 1)
    j = rng.randrange(i, len(lines)) if rng.random() < 0.3 else i
    return lines[:j + 1] + [ln] + lines[j + 1:], f"duplicated line {i + 1} after {j + 1}"


def m_swap_lines(lines, rng):
    cands = [i for i in _body_lines(lines) if i + 1 < len(lines)]
    if not cands:
        return None
    i = rng.choice(cands)
    out = list(lines)
    out[i], out[i + 1] = out[i + 1], out[i]
    return out, f"swapped lines {i + 1} and {i + 2}"


def _region_end(lines, i) -> Optional[int]:
    depth = 0
    for j in range(i, len(lines)):
        depth += lines[j].count("{") - lines[j].count("}")
        if depth <= 0 and j > i:
            return j
    return None


def _region_starts(lines) -> List[int]:
    return [i for i, ln in enumerate(lines) if ln.rstrip().endswith("{")
            and not ln.lstrip().startswith(("func.func", "module", "gpu.module", "llvm.func"))]


def _rename_local(block: List[str], outside: List[str], suffix: str) -> List[str]:
    """The SSA names that occur only inside `block` renamed (a duplicated
    region op needs fresh names for its results and block arguments)."""
    inside = {m.group(0) for ln in block for m in _SSA_RE.finditer(ln)}
    outer = {m.group(0) for ln in outside for m in _SSA_RE.finditer(ln)}
    local = sorted(inside - outer, key=len, reverse=True)
    if not local:
        return block
    pat = re.compile("(" + "|".join(re.escape(n) for n in local) + r")(?![\w.$-])")
    return [pat.sub(lambda m: m.group(1) + suffix, ln) for ln in block]


def m_region(lines, rng):
    """A whole region op (tile.parallel, tile.pipelined, scf.for, a kernel,
    ...) deleted, duplicated (with fresh local names) or cut short."""
    starts = _region_starts(lines)
    if not starts:
        return None
    i = rng.choice(starts)
    j = _region_end(lines, i)
    if j is None:
        return None
    block = lines[i:j + 1]
    r = rng.random()
    if r < 0.35:
        return lines[:i] + lines[j + 1:], f"deleted region op at line {i + 1}"
    if r < 0.75:
        dup = _rename_local(block, lines[:i] + lines[j + 1:], "_dup")
        return lines[:j + 1] + dup + lines[j + 1:], f"duplicated region op at line {i + 1}"
    inner = lines[i + 1:j]
    if not inner:
        return None
    k = rng.randrange(len(inner))
    return lines[:i + 1] + inner[k:] + lines[j:], f"dropped {k} first lines of region {i + 1}"


def m_ssa_use(lines, rng):
    """An operand replaced by another SSA value of the case: mostly one of
    the same type (aliasing operands: a gemm reading and writing one buffer,
    a copy onto itself), else any (a buffer where an index was expected)."""
    defined = sorted({m.group(1) for ln in lines
                      for m in re.finditer(r"(%[\w.$-]+)(?::\d+)? = ", ln)}
                     | {m.group(0) for ln in lines if "func.func" in ln
                        for m in _SSA_RE.finditer(ln)})
    types = _value_types(lines)
    uses = []
    for i, ln in enumerate(lines):
        eq = ln.find(" = ")
        start = eq + 3 if re.match(r"\s*%", ln) and eq >= 0 else 0
        if "func.func" in ln:
            continue
        for m in _SSA_RE.finditer(ln, start):
            uses.append((i, m))
    if not uses or len(defined) < 2:
        return None
    i, m = rng.choice(uses)
    name = m.group(0)
    same = [v for v, t in types.items() if v != name and t == types.get(name)]
    if same and rng.random() < 0.75:
        new = rng.choice(sorted(same))
    else:
        new = rng.choice([d for d in defined if d != name] or defined)
    ln = lines[i]
    out = list(lines)
    out[i] = ln[:m.start()] + new + ln[m.end():]
    return out, f"operand {name} -> {new} on line {i + 1}"


def m_copy_extents(lines, rng):
    """The `[a, b]` size lists of a tile.copy changed (one side or both)."""
    cands = [i for i, ln in enumerate(lines) if "tile.copy " in ln or "tile.atomic_add " in ln]
    if not cands:
        return None
    i = rng.choice(cands)
    ln = lines[i]
    lists = [m for m in re.finditer(r"\] \[([\d, ]+)\]", ln)]
    if not lists:
        return None
    m = rng.choice(lists)
    vals = [int(v) for v in m.group(1).split(",")]
    r = rng.random()
    if r < 0.3:
        vals = vals[::-1]
    elif r < 0.6:
        k = rng.randrange(len(vals))
        vals[k] = rng.choice([0, 1, 2, 3, 7, 64, 65536, 2**31])
    elif r < 0.8:
        vals = [1] + vals
    else:
        vals = vals[1:] or [1]
    new = "] [" + ", ".join(map(str, vals)) + "]"
    out = list(lines)
    out[i] = ln[:m.start()] + new + ln[m.end():]
    return out, f"copy extents {m.group(0)[2:]} -> {new[2:]} on line {i + 1}"


MUTATORS: List[Tuple[Callable, float]] = [
    (m_number, 3.0), (m_number_everywhere, 3.0), (m_shape, 2.5), (m_dtype, 2.5),
    (m_attr, 3.0), (m_scope, 1.5), (m_flag, 1.5), (m_delete_line, 2.0), (m_duplicate_line, 1.0),
    (m_swap_lines, 0.7), (m_region, 1.2), (m_ssa_use, 1.0), (m_copy_extents, 1.2),
]


def mutate(seed: Seed, rng: random.Random) -> Tuple[str, List[str]]:
    lines = seed.text.splitlines()
    n = rng.choices([1, 2, 3, 4], weights=[5, 3, 1.5, 0.5])[0]
    done: List[str] = []
    funcs, weights = zip(*MUTATORS)
    for _ in range(n * 8):
        if len(done) >= n:
            break
        f = rng.choices(funcs, weights=weights)[0]
        res = f(lines, rng)
        if res is None or res[0] == lines:
            continue
        lines, what = res
        done.append(f"{f.__name__}: {what}")
    return "\n".join(lines) + "\n", done


# ---------------------------------------------------------------------------
# Running tile-opt
# ---------------------------------------------------------------------------


@dataclass
class RunResult:
    cls: str  # ok / diagnostic / CRASH / TIMEOUT / MEMORY / ROUNDTRIP
    rc: Optional[int]
    stderr: str
    seconds: float
    signature: str = ""


def _limits(mem_mb: int, cpu_s: int):
    def apply():
        if mem_mb:
            resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    return apply


def run_limited(cmd: List[str], timeout: float, mem_mb: int, stdin_data: Optional[bytes] = None,
                keep_stdout: bool = False, stderr_cap: int = 200_000
                ) -> Tuple[Optional[int], bytes, bytes, float, bool]:
    """Runs cmd in its own process group under the memory limit; kills the
    group at the timeout. Returns (rc, stdout, stderr, seconds, timed_out);
    stderr is kept up to stderr_cap bytes (head and tail)."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        proc = _popen(cmd, stdin=subprocess.PIPE if stdin_data is not None else
                      subprocess.DEVNULL,
                      stdout=out if keep_stdout else subprocess.DEVNULL, stderr=err,
                      preexec_fn=_limits(mem_mb, int(timeout) + 10), start_new_session=True)
        t0 = time.monotonic()
        timed_out = False
        try:
            if stdin_data is not None:
                try:
                    proc.stdin.write(stdin_data)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        dt = time.monotonic() - t0
        err.seek(0, os.SEEK_END)
        size = err.tell()
        err.seek(0)
        if size > stderr_cap:
            data = err.read(stderr_cap // 2)
            err.seek(size - stderr_cap // 2)
            data += b"\n[... stderr truncated ...]\n" + err.read()
        else:
            data = err.read()
        out.seek(0)
        odata = out.read() if keep_stdout else b""
    return (None if timed_out else proc.returncode), odata, data, dt, timed_out


def _popen(cmd, **kw) -> subprocess.Popen:
    """Popen that waits while the binary is being rebuilt (another build
    replacing build/bin/tile-opt gives EACCES/ETXTBSY/ENOENT for a moment)."""
    for attempt in range(120):
        try:
            return subprocess.Popen(cmd, **kw)
        except OSError as e:
            if attempt == 119:
                raise
            print(f"warning: cannot start {cmd[0]} ({e}); retrying in 5 s", file=sys.stderr)
            time.sleep(5)
    raise AssertionError


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


_MEMORY_MARKERS = ("std::bad_alloc", "LLVM ERROR: out of memory", "Cannot allocate memory",
                   "Allocation failed", "MemoryError")
_CRASH_MARKERS = ("PLEASE submit a bug report", "Assertion", "UNREACHABLE executed",
                  "LLVM ERROR", "Stack dump:", "terminate called")


def classify(rc: Optional[int], stderr: str, timed_out: bool) -> str:
    if timed_out:
        return "TIMEOUT"
    if any(m in stderr for m in _MEMORY_MARKERS):
        return "MEMORY"
    if rc == 0 and not any(m in stderr for m in _CRASH_MARKERS):
        return "ok"
    if rc == 1 and "error:" in stderr and not any(m in stderr for m in _CRASH_MARKERS):
        return "diagnostic"
    return "CRASH"


_FRAME_RE = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ (.*)$")
_SKIP_FRAME = re.compile(
    r"PrintStackTrace|SignalHandler|^\(/lib|^\(.*libc\.so|__pthread_kill|^raise |^abort |"
    r"__assert_fail|_nl_load_domain|report_fatal_error|llvm_unreachable_internal|__cxa_throw|"
    r"std::terminate|__gnu_cxx|^\(tile-opt\+|^\(<|^\(/|^_start|__libc_start|^main ")


def _frame_name(text: str) -> str:
    text = re.sub(r" \((?:/|<|tile-opt\+|lib)[^)]*\)$", "", text.strip())  # (module+off)
    text = re.sub(r" [\w./-]+\.(?:cpp|h|hpp|inc|c):\d+:\d+$", "", text)  # File.cpp:0:0
    text = re.sub(r"\.(isra|constprop|part|cold)\.\d+", "", text)
    text = re.sub(r"\s+const$", "", text)
    # Drop the parameter list (the last balanced parenthesis group).
    if text.endswith(")"):
        depth = 0
        for k in range(len(text) - 1, -1, -1):
            if text[k] == ")":
                depth += 1
            elif text[k] == "(":
                depth -= 1
                if depth == 0:
                    text = text[:k]
                    break
    return text.strip()


_DEMANGLED: Dict[str, str] = {}


def _demangle(name: str) -> str:
    """c++filt on a mangled symbol (the stack dump leaves some mangled)."""
    m = re.match(r"(_Z\w+)", name)
    if not m or not shutil.which("c++filt"):
        return name
    sym = m.group(1)
    if sym not in _DEMANGLED:
        try:
            _DEMANGLED[sym] = subprocess.run(["c++filt", sym], capture_output=True, text=True,
                                             timeout=10).stdout.strip() or sym
        except (OSError, subprocess.SubprocessError):
            _DEMANGLED[sym] = sym
    return name.replace(sym, _DEMANGLED[sym])


def _short_lambda(name: str) -> str:
    """A demangled walk callback is a page of templates: keep the pass."""
    m = re.search(r"((?:\(anonymous namespace\)::)?[\w:]+::runOnOperation\(\))", name)
    if len(name) > 160 and m:
        return "lambda in " + m.group(1).replace("(anonymous namespace)::", "")
    return name[:200]


def stack_frames(stderr: str) -> List[Tuple[str, str]]:
    """(function, source file) of the named frames of an LLVM stack dump,
    the signal machinery skipped."""
    out = []
    for ln in stderr.splitlines():
        m = _FRAME_RE.match(ln)
        if not m or _SKIP_FRAME.search(m.group(1)):
            continue
        src = re.search(r"([\w-]+\.(?:cpp|h|inc))(?::\d+)*$", m.group(1).strip())
        name = _short_lambda(_frame_name(_demangle(m.group(1).strip())))
        if name:
            out.append((name, src.group(1) if src else ""))
    return out


_OURS = re.compile(r"mlir::tile::|anonymous namespace|[Tt]ile")


def crash_signature(stderr: str, rc: Optional[int]) -> str:
    """What identifies a crash: the assertion text (or the LLVM error, or
    just the signal) and the top frame plus the first frame of our code
    (mlir::tile::, an anonymous-namespace function of a pass), which names
    the pass even when the top frame is an upstream helper."""
    frames = stack_frames(stderr)
    names = [f for f, _ in frames]
    ours = next((f for f in names if _OURS.search(f)), None)
    top_list = names[:1] + ([ours] if ours and ours not in names[:1] else names[1:2])
    top = " < ".join(f[:120] for f in top_list) or "?"
    m = re.search(r"Assertion `(.*)' failed", stderr)
    if m:
        return f"assert: {m.group(1)[:200]} @ {top}"
    m = re.search(r"UNREACHABLE executed at [^\n]*?([\w.]+:\d+)!?", stderr)
    if m:
        return f"unreachable: {m.group(1)} @ {top}"
    m = re.search(r"LLVM ERROR: ([^\n]*)", stderr)
    if m:
        return f"llvm-error: {re.sub(r'[0-9]+', 'N', m.group(1))[:160]} @ {top}"
    if frames:
        return f"signal: {top}"
    if rc == 1:
        return "exit 1 without an error message"
    last = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:] or [""]
    return f"rc={rc}: {re.sub(r'[0-9]+', 'N', last[0])[:160]}"


def _pass_name_from_dump(header: str) -> str:
    m = re.search(r"IR Dump Before (\S+)(?: \(([\w-]+)\))?", header)
    if not m:
        return "?"
    return m.group(2) or m.group(1)


def running_pass(tile_opt: str, path: str, args: List[str], timeout: float, mem_mb: int,
                 extra: Sequence[str]) -> str:
    """The pass that was running when a run timed out or ran out of memory:
    the last `IR Dump Before` header of a rerun with --mlir-print-ir-before-all
    (only the headers are kept)."""
    if not [a for a in args if not a.startswith(("--mlir", "-mlir", "@"))]:
        return "parser"
    cmd = [tile_opt, path, *args, *extra, "--mlir-print-ir-before-all"]
    last = ["parser"]
    proc = _popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                  stderr=subprocess.PIPE, preexec_fn=_limits(mem_mb, int(timeout) + 10),
                  start_new_session=True)

    def reader():
        for raw in proc.stderr:
            if b"IR Dump Before" in raw:
                last[0] = _pass_name_from_dump(raw.decode(errors="replace"))

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
    t.join(5)
    return last[0]


class TileOpt:
    def __init__(self, path: str, timeout: float, mem_mb: int, threading_off: bool = True):
        self.path = path
        self.timeout = timeout
        self.mem_mb = mem_mb
        self.extra = ["--mlir-disable-threading"] if threading_off else []

    def command(self, input_path: str, args: List[str]) -> List[List[str]]:
        if args and args[0] == "@roundtrip":
            return [[self.path, input_path, *args[1:], *self.extra], [self.path, "-", *self.extra]]
        return [[self.path, input_path, *args, *self.extra]]

    def run(self, input_path: str, args: List[str]) -> RunResult:
        if args and args[0] == "@roundtrip":
            first, second = self.command(input_path, args)
            rc, out, err, dt, to = run_limited(first, self.timeout, self.mem_mb, keep_stdout=True)
            res = self._result(rc, err, dt, to)
            if res.cls != "ok":
                return res
            rc2, _, err2, dt2, to2 = run_limited(second, self.timeout, self.mem_mb, stdin_data=out)
            res2 = self._result(rc2, err2, dt + dt2, to2)
            if res2.cls == "diagnostic":
                msg = re.search(r"error: ([^\n]*)", res2.stderr)
                res2.cls = "ROUNDTRIP"
                res2.signature = "roundtrip: " + re.sub(r"[0-9]+", "N", msg.group(1) if msg else "?")[:160]
            return res2
        # A lowering pipeline (one that ends its conversions with
        # reconcile-unrealized-casts) that exits 0 but leaves casts behind
        # produced IR that LLVM cannot translate: reported like an internal
        # diagnostic (tl.compile would fail at the translation).
        lowering = any("reconcile-unrealized-casts" in a for a in args)
        rc, out, err, dt, to = run_limited(self.command(input_path, args)[0], self.timeout,
                                           self.mem_mb, keep_stdout=lowering)
        res = self._result(rc, err, dt, to)
        if lowering and res.cls == "ok" and b"unrealized_conversion_cast" in out:
            lines = [ln.strip() for ln in out.decode(errors="replace").splitlines()
                     if "unrealized_conversion_cast" in ln]
            m = re.search(r"unrealized_conversion_cast[^:]*: (.*)$", lines[0])
            res.cls = "INTERNAL_DIAG"
            res.signature = ("lowering left builtin.unrealized_conversion_cast: " + re.sub(
                r"(?<=[<x])\d+(?=x)", "N", m.group(1) if m else "?"))[:200]  # shapes, not types
            res.stderr += ("\n[tile_opt_fuzz] exit 0, but the output still holds "
                           f"{len(lines)} builtin.unrealized_conversion_cast:\n"
                           + "\n".join(lines[:20]) + "\n")
        if res.cls == "diagnostic" and args:
            m = _INTERNAL_DIAG.search(res.stderr)
            if m:
                res.cls = "INTERNAL_DIAG"
                res.signature = "internal diagnostic: " + re.sub(
                    r"%\S+|\d+", "N", m.group(0)[len("error: "):])[:200]
        if res.cls in ("TIMEOUT", "MEMORY"):
            res.signature = (f"{res.cls.lower()}: in "
                             f"{running_pass(self.path, input_path, args, self.timeout, self.mem_mb, self.extra)}")
        return res

    def _result(self, rc, err: bytes, dt, timed_out) -> RunResult:
        text = err.decode(errors="replace")
        cls = classify(rc, text, timed_out)
        sig = crash_signature(text, rc) if cls == "CRASH" else ""
        return RunResult(cls, rc, text, dt, sig)


def find_tile_opt(explicit: Optional[str] = None) -> str:
    for cand in (explicit, os.environ.get("TILE_OPT"), str(ROOT / "build" / "bin" / "tile-opt"),
                 shutil.which("tile-opt")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK) and os.path.getsize(cand):
            return cand
    raise SystemExit("tile-opt not found: build it (make build) or pass --tile-opt")


# ---------------------------------------------------------------------------
# Minimizer: the shortest failing pipeline prefix, then line-deletion delta
# debugging keeping the signature
# ---------------------------------------------------------------------------


def split_pipeline(args: List[str]) -> Optional[List[str]]:
    """The top-level elements of a --pass-pipeline=builtin.module(...)."""
    pp = [a for a in args if a.startswith("--pass-pipeline=builtin.module(")]
    if len(pp) != 1 or not pp[0].endswith(")"):
        return None
    return _split_top(pp[0][len("--pass-pipeline=builtin.module("):-1])


def pipeline_args(args: List[str], elements: List[str]) -> List[str]:
    return [("--pass-pipeline=builtin.module(" + ",".join(elements) + ")")
            if a.startswith("--pass-pipeline=builtin.module(") else a for a in args]


def minimize(text: str, keeps: Callable[[str], bool], budget_s: float = 90,
             max_tests: int = 400) -> str:
    lines = text.splitlines()
    t0 = time.monotonic()
    tests = 0
    cache: Dict[str, bool] = {}

    def test(ls):
        nonlocal tests
        t = "\n".join(ls) + "\n"
        if t not in cache:
            tests += 1
            cache[t] = keeps(t)
        return cache[t]

    n = 2
    while len(lines) >= 2:
        if time.monotonic() - t0 > budget_s or tests > max_tests:
            break
        chunk = max(1, len(lines) // n)
        reduced = False
        for start in range(0, len(lines), chunk):
            cand = lines[:start] + lines[start + chunk:]
            if cand and test(cand):
                lines = cand
                n = max(n - 1, 2)
                reduced = True
                break
            if time.monotonic() - t0 > budget_s or tests > max_tests:
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(lines), n * 2)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Campaign
# ---------------------------------------------------------------------------


def _sig_dir(cls: str, sig: str) -> str:
    return f"{cls}_{hashlib.sha1(sig.encode()).hexdigest()[:10]}"


def _cmd_sh(tile_opt_cmds: List[List[str]], input_name: str, timeout: float, mem_mb: int) -> str:
    def q(cmd):
        parts = ["tile-opt" if k == 0 else (input_name if w.endswith(".mlir") and k == 1 else w)
                 for k, w in enumerate(cmd)]
        return " ".join(shlex.quote(p) for p in parts)
    body = q(tile_opt_cmds[0])
    if len(tile_opt_cmds) == 2:
        body += " | " + q(tile_opt_cmds[1])
    return ("#!/bin/sh\n# tile-opt is build/bin/tile-opt (or .venv/bin/tile-opt)\n"
            'cd "$(dirname "$0")"\n'
            f"ulimit -v {mem_mb * 1024}\n"
            f"timeout {int(timeout)} {body}\n"
            'echo "exit status $?"\n')


class Campaign:
    def __init__(self, out: Path, tool: TileOpt, minimize_classes=("CRASH", "ROUNDTRIP"),
                 verbose: bool = False):
        self.out = out
        self.tool = tool
        self.minimize_classes = minimize_classes
        self.verbose = verbose
        out.mkdir(parents=True, exist_ok=True)
        (out / "crashers").mkdir(exist_ok=True)
        self.summary_path = out / "summary.json"
        if self.summary_path.exists():
            self.summary = json.loads(self.summary_path.read_text())
        else:
            self.summary = {"mutants": 0, "runs": 0, "counts": {}, "signatures": {},
                            "slow_runs": [], "chunks": []}
        self.work = Path(tempfile.mkdtemp(prefix="tile-opt-fuzz-"))

    def save(self):
        tmp = self.summary_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.summary, indent=1, sort_keys=True))
        tmp.replace(self.summary_path)

    def record(self, cls: str, res: RunResult, text: str, args: List[str], pipeline: str,
               meta: dict) -> Optional[str]:
        c = self.summary["counts"]
        c[cls] = c.get(cls, 0) + 1
        if res.seconds > 5 and cls != "TIMEOUT" and len(self.summary["slow_runs"]) < 500:
            self.summary["slow_runs"].append({"seconds": round(res.seconds, 1),
                                              "pipeline": pipeline, **meta})
        if cls not in FAILURE_CLASSES + REPORTED_CLASSES:
            return None
        sig = res.signature or cls
        entry = self.summary["signatures"].get(sig)
        if entry is not None:
            entry["count"] += 1
            if entry.get("last_mutant") != meta["mutant"]:
                entry["mutants"] = entry.get("mutants", 1) + 1
                entry["last_mutant"] = meta["mutant"]
            if pipeline not in entry["pipelines"]:
                entry["pipelines"].append(pipeline)
            if meta["seed_case"] not in entry["seed_cases"] and len(entry["seed_cases"]) < 20:
                entry["seed_cases"].append(meta["seed_case"])
            return None
        d = self.out / "crashers" / _sig_dir(cls, sig)
        d.mkdir(parents=True, exist_ok=True)
        (d / "input.mlir").write_text(text)
        cmds = self.tool.command(str(d / "input.mlir"), args)
        (d / "cmd.sh").write_text(_cmd_sh(cmds, "input.mlir", self.tool.timeout, self.tool.mem_mb))
        os.chmod(d / "cmd.sh", 0o755)
        (d / "stderr.txt").write_text(res.stderr[:30000])
        (d / "sig.txt").write_text(sig + "\n")
        frames = stack_frames(res.stderr)
        files = sorted({f for _, f in frames[:6] if f})
        entry = {"class": cls, "count": 1, "mutants": 1, "last_mutant": meta["mutant"],
                 "dir": str(d), "pipelines": [pipeline], "args": args, "sig": sig,
                 "seed_cases": [meta["seed_case"]], "first": meta, "source_files": files,
                 "frames": [f for f, _ in frames[:6]]}
        self.summary["signatures"][sig] = entry
        if cls in self.minimize_classes:
            small, small_args = self.minimize(text, args, sig)
            if small.count("\n") < text.count("\n") or small_args != args:
                (d / "min.mlir").write_text(small)
                (d / "min_cmd.sh").write_text(
                    _cmd_sh(self.tool.command(str(d / "min.mlir"), small_args), "min.mlir",
                            self.tool.timeout, self.tool.mem_mb))
                os.chmod(d / "min_cmd.sh", 0o755)
                entry["minimized_lines"] = small.count("\n")
                entry["minimized_args"] = small_args
        (d / "meta.json").write_text(json.dumps(entry, indent=1))
        return sig

    def minimize(self, text: str, args: List[str], sig: str) -> Tuple[str, List[str]]:
        """The shortest prefix of the pipeline that still fails the same way,
        then line-deletion delta debugging of the input under it."""
        path = self.work / "min.mlir"
        path.write_text(text)

        def same(a: List[str]) -> bool:
            r = self.tool.run(str(path), a)
            return (r.signature or r.cls) == sig

        elements = split_pipeline(args)
        if elements and len(elements) > 1:
            lo, hi = 1, len(elements)  # the prefix of hi elements fails
            while lo < hi:
                mid = (lo + hi) // 2
                if same(pipeline_args(args, elements[:mid])):
                    hi = mid
                else:
                    lo = mid + 1
            args = pipeline_args(args, elements[:hi])

        def keeps(t: str) -> bool:
            path.write_text(t)
            return same(args)
        return minimize(text, keeps), args

    def run_mutant(self, index: int, seed_value: int, seeds: List[Seed],
                   pipelines: Dict[str, List[str]], only: Optional[Sequence[str]],
                   cleanup: Sequence[str] = (*CLEANUP_VARIANTS, "run")) -> List[str]:
        rng = random.Random(f"{seed_value}:{index}")
        seed = rng.choice(seeds)
        text, muts = mutate(seed, rng)
        path = self.work / "mutant.mlir"
        path.write_text(text)
        meta = {"mutant": index, "seed": seed_value, "seed_case": f"{seed.path}#{seed.index}",
                "mutations": muts}
        runs: List[Tuple[str, List[str]]] = [("parse", [])]
        found = []
        parsed = self.tool.run(str(path), [])
        self.summary["runs"] += 1
        sig = self.record(parsed.cls, parsed, text, [], "parse", meta)
        if sig:
            found.append(sig)
        pc = self.summary.setdefault("parse_counts", {})
        pc[parsed.cls] = pc.get(parsed.cls, 0) + 1
        if parsed.cls != "ok":
            return found
        runs = [(f"RUN:{' '.join(a)[:80]}", a) for a in seed.run_pipelines if a]
        if "run" in cleanup:
            runs += [(f"RUN+cc:{' '.join(a)[:80]}", cleaned) for a in seed.run_pipelines
                     if a and (cleaned := with_cleanup(a)) and (not only or "run+cc" in only)]
        runs += [(name, args) for name, args in pipelines.items()
                 if (not only or name in only)
                 and (not name.endswith("+cc") or name[:-3] in cleanup)]
        seen_args = set()
        hangs = 0
        for name, args in runs:
            key = tuple(args)
            if key in seen_args:
                continue
            seen_args.add(key)
            if hangs >= MAX_HANGS_PER_MUTANT:
                sk = self.summary.setdefault("skipped_after_hangs", 0)
                self.summary["skipped_after_hangs"] = sk + 1
                continue
            res = self.tool.run(str(path), args)
            self.summary["runs"] += 1
            if res.cls in ("TIMEOUT", "MEMORY"):
                hangs += 1
            sig = self.record(res.cls, res, text, args, name, meta)
            if self.verbose and res.cls not in ("ok", "diagnostic"):
                print(f"  mutant {index} {name}: {res.cls} {res.signature}", flush=True)
            if sig:
                found.append(sig)
        return found


def summary_line(s: dict, seconds: float) -> str:
    c = s["counts"]
    fails = {k: v for k, v in c.items() if k in FAILURE_CLASSES}
    distinct = len([e for e in s["signatures"].values() if e["class"] in FAILURE_CLASSES])
    parts = " ".join(f"{k}={c.get(k, 0)}" for k in ("ok", "diagnostic", *REPORTED_CLASSES,
                                                      *FAILURE_CLASSES))
    return (f"tile-opt-fuzz: {s['mutants']} mutants, {s['runs']} runs: {parts}; "
            f"{distinct} distinct failure signatures ({sum(fails.values())} failing runs), "
            f"{len(s['slow_runs'])} runs over 5 s; {seconds:.0f} s")


def tree_state(what: str) -> dict:
    """The commit of the checkout and its uncommitted changes when a
    snapshot is taken (what the campaign tests)."""
    def git(*a):
        try:
            return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True,
                                  timeout=30).stdout.rstrip()
        except (OSError, subprocess.SubprocessError):
            return "?"
    return {"snapshot_of": what, "time": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "commit": git("rev-parse", "--short", "HEAD").strip(),
            "uncommitted": git("status", "--short").splitlines()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100, help="number of mutants")
    ap.add_argument("--start", type=int, default=0, help="index of the first mutant (chunks)")
    ap.add_argument("--timeout", type=float, default=20, help="seconds per tile-opt run")
    ap.add_argument("--mem-mb", type=int, default=4000, help="address-space limit per run")
    ap.add_argument("--out", type=Path, default=Path("/tmp/tile-opt-fuzz"))
    ap.add_argument("--tile-opt", help="the tile-opt binary (default build/bin/tile-opt)")
    ap.add_argument("--pipelines", help="comma-separated subset of: " + ",".join(PIPELINES)
                    + " and the tl.compile pipelines (cpu, sm80, sm80-narrow, sm80-ptx, sm90a, "
                    "sm90a-rotate, sm90a-nows, gfx90a, gfx942, gfx950; <name>+cc for the "
                    "variants with canonicalize,cse after every pass; run+cc for the RUN "
                    "lines)")
    ap.add_argument("--cleanup", default=",".join((*CLEANUP_VARIANTS, "run")),
                    help="the pipelines that also run with canonicalize,cse after every pass "
                         "(comma-separated; 'run' for the RUN lines; '' for none)")
    ap.add_argument("--corpus", nargs="*", default=[], type=Path,
                    help="extra .mlir seeds besides test/lit")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--minimize-hangs", action="store_true",
                    help="also minimize TIMEOUT/MEMORY inputs (slow: each try may time out)")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="stop after this many seconds (0: no limit)")
    ap.add_argument("--threads", action="store_true",
                    help="let tile-opt use threads (default --mlir-disable-threading)")
    ap.add_argument("--snapshot", action="store_true",
                    help="run a copy of tile-opt kept in OUT/bin (stable while the tree is "
                         "rebuilt; a later chunk with the same --out reuses it)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    binary = find_tile_opt(args.tile_opt)
    pipelines = None
    if args.snapshot:
        # The binary and the package's pipelines are both kept: a later
        # chunk must not read the pipelines from a package edited since.
        snap = args.out / "bin" / "tile-opt"
        saved = args.out / "bin" / "pipelines.json"
        if not snap.exists():
            snap.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(binary, snap)
            saved.write_text(json.dumps(all_pipelines(), indent=1))
            (args.out / "bin" / "tree.json").write_text(json.dumps(tree_state(binary), indent=1))
        if saved.exists():
            pipelines = json.loads(saved.read_text())
        binary = str(snap)
    tool = TileOpt(binary, args.timeout, args.mem_mb, threading_off=not args.threads)
    seeds = load_corpus(extra=args.corpus)
    if args.snapshot:
        # The lit corpus too: mutant i is a mutation of a seed drawn from
        # it, so a test file added during the campaign would change every
        # later chunk's mutants.
        saved_corpus = args.out / "bin" / "corpus.json"
        if saved_corpus.exists():
            seeds = [Seed(**d) for d in json.loads(saved_corpus.read_text())]
        else:
            saved_corpus.write_text(json.dumps([vars(sd) for sd in seeds]))
    if pipelines is None:
        pipelines = all_pipelines()
    only = args.pipelines.split(",") if args.pipelines else None
    if only:
        unknown = [p for p in only if p not in pipelines]
        if unknown:
            ap.error(f"unknown pipelines {unknown}; known: {', '.join(pipelines)}")
    minimize_classes = () if args.no_minimize else (
        ("CRASH", "ROUNDTRIP", "INTERNAL_DIAG") + (("TIMEOUT", "MEMORY") if args.minimize_hangs else ()))
    pipelines = check_pipelines(tool, pipelines)
    camp = Campaign(args.out, tool, minimize_classes, args.verbose)
    with open(binary, "rb") as f:
        digest = hashlib.sha1(f.read()).hexdigest()[:12]
    camp.summary.setdefault("tile_opt", {})[digest] = binary
    t0 = time.monotonic()
    done = 0
    try:
        for index in range(args.start, args.start + args.count):
            new = camp.run_mutant(index, args.seed, seeds, pipelines, only,
                                  [c for c in args.cleanup.split(",") if c])
            camp.summary["mutants"] += 1
            done += 1
            for sig in new:
                e = camp.summary["signatures"][sig]
                print(f"NEW {e['class']}: {sig}\n    {e['dir']}  (mutant {index}, "
                      f"{e['pipelines'][0]}, from {e['first']['seed_case']})", flush=True)
            if done % 10 == 0:
                camp.save()
            if args.verbose and done % 50 == 0:
                print(summary_line(camp.summary, time.monotonic() - t0), flush=True)
            if args.budget_s and time.monotonic() - t0 > args.budget_s:
                print(f"time budget reached after {done} mutants", flush=True)
                break
    finally:
        camp.summary["chunks"].append({"seed": args.seed, "start": args.start, "done": done,
                                       "seconds": round(time.monotonic() - t0)})
        camp.save()
        shutil.rmtree(camp.work, ignore_errors=True)
    print(summary_line(camp.summary, time.monotonic() - t0), flush=True)
    failing = sum(v for k, v in camp.summary["counts"].items() if k in FAILURE_CLASSES)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
