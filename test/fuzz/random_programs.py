#!/usr/bin/env python3
"""Random tile programs through the Python API, checked against NumPy.

Each program is generated as a standalone Python file (the kernel written
out with literal sizes, its random inputs from a fixed seed, a NumPy
reference that emulates the tile semantics, the tolerance) and run in a
worker process under a memory limit and a timeout, so that a segfault or a
hang is recorded, not fatal. A program is compiled with tl.compile for the
CPU, run on its inputs and compared with NumPy; then compiled (not run) for
one GPU target (cuda:sm_80, cuda:sm_90a or rocm:gfx942, chosen by the seed;
--all-gpu-targets: all three; --no-gpu-compile: none).

Families (a program is one of them, chosen by the seed):
  elementwise  a random expression over one or two inputs, every dtype,
               tiles with ragged edges (reads past the end give zero, writes
               there are dropped), through shared memory, fragments or
               direct element access
  reduce       reduce_sum/max/min/abssum/absmax over each dim of 1-D/2-D/3-D
               tiles, unit dims included, clear=True/False
  copy         chains global -> shared -> fragment -> local -> global with
               slices, point indices and sub-tiles, ragged edges
  point_copy   T.copy(X[i, j], tile) into tiles of shape (8,1), (1,8), (8,),
               3-D tiles, and back out by point index
  convert      dtype-converting T.copy for every (src, dst) pair of the 12
               dtypes; in-range values (NumPy's conversion is the reference;
               --out-of-range adds values outside the integer range, expected
               to saturate, NaN -> 0)
  gemm         T.gemm for every supported (A/B, C) dtype pair, transpose_A/B,
               ragged M/N/K with K not a multiple of block_K, T.Pipelined
               num_stages 1-4, 32-256 threads
  pipelined    a T.Pipelined loop of copies and elementwise accumulation

Verdicts: OK, MISMATCH (wrong values), DIAGNOSTIC (tl.compile raised a clear
TileLangError at the user's line: recorded, not a failure), INTERNAL_ERROR
(any other exception from inside the compiler or runtime, or a pass error
without a user location), CRASH (the worker died by a signal), TIMEOUT,
MEMORY. A GPU compile gets the same verdicts with a GPU_ prefix. Every
failure is written to OUT/failures/<VERDICT>_<signature hash>/prog.py (run it
with .venv/bin/python; it prints the verdict and exits 1 on failure) with
result.json; OUT/summary.json holds the counts and signatures and survives
interruption (run chunks with --start).

    .venv/bin/python test/fuzz/random_programs.py --seed 1 --count 100 --out /tmp/fuzz-prog

Exit status: 0 when nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[2]

FAILURES = ("MISMATCH", "INTERNAL_ERROR", "CRASH", "TIMEOUT", "MEMORY",
            "GPU_INTERNAL_ERROR", "GPU_CRASH", "GPU_TIMEOUT", "GPU_MEMORY")

FLOATS = ["float16", "bfloat16", "float32", "float64"]
FP8 = ["float8_e4m3", "float8_e5m2"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]
ALL_DTYPES = FLOATS + FP8 + INTS + ["bool"]

# Largest magnitude the generated values of a dtype may take.
RANGE = {"float16": 60000.0, "bfloat16": 1e30, "float32": 1e30, "float64": 1e300,
         "float8_e4m3": 448.0, "float8_e5m2": 57344.0, "int8": 127, "int16": 32767,
         "int32": 2**31 - 1, "int64": 2**63 - 1, "uint8": 255, "bool": 1}
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52,
       "float8_e4m3": 2.0**-3, "float8_e5m2": 2.0**-2}

GPU_TARGETS = ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"]


def gemm_eps(ab: str, acc: str, gpu: bool = False) -> float:
    """The error of one product summed by a T.gemm of `ab` operands into
    `acc`, relative to the products' magnitude (a K-step gemm's bound is K
    times it). float32 operands: a float32 T.gemm runs on the tensor cores
    in TF32 (as TileLang's does), operands rounded to 10 mantissa bits, so
    2^-10 (the CPU target is exact; the bound is the GPU's). With `gpu`,
    float8 operands: Hopper's float8 wgmma (K-major operands, the only
    layout it takes; others run on the SIMT gemm in float32) adds its
    products in about 14 significand bits (DeepSeek-V3's measurement,
    truncating: 2^-13), not float32's 24 (the seed-44 campaign measured
    relative errors of 1.5e-4 to 5e-4 at K = 128..256; a layout error is
    O(1)). Otherwise acc's epsilon."""
    if ab == "float32" and acc == "float32":
        return 2.0 ** -10
    if gpu and ab in FP8:
        return max(2.0 ** -13, EPS[acc])
    return EPS[acc]

# ---------------------------------------------------------------------------
# The prelude of every generated program: comparison and verdicts.
# ---------------------------------------------------------------------------

IMPORTS = r'''
import json, os, sys, traceback
import numpy as np
import ml_dtypes
import tilelang_mlir as tl
import tilelang_mlir.language as T
'''

HELPERS = r'''
# ---- the fuzzer's helpers (the same in every generated program) ----
NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
      "float64": np.float64, "float8_e4m3": ml_dtypes.float8_e4m3fn,
      "float8_e5m2": ml_dtypes.float8_e5m2, "int8": np.int8, "int16": np.int16,
      "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}
INTERNAL_MARKERS = ("failed to legalize", "unrealized_conversion_cast", "does not dominate",
                    "expects different type", "LLVM ERROR", "Assertion", "failed to verify",
                    "verification failed", "unknown operation", "cannot be converted",
                    "did not converge", "translation", "Translation")
# An op of an upstream dialect failing its verifier: a lowering built bad IR.
# (Tile passes attach user-level diagnostics to memref.load/store inside a
# tile.parallel: an upstream op name alone does not make it internal.)
UPSTREAM_OP = __import__("re").compile(
    r"'(llvm|nvvm|rocdl|gpu|nvgpu|amdgpu|ub)\.[\w.]+' op|"
    r"'(arith|memref|vector|scf|math|func|cf)\.[\w.]+' op (operand|result) #\d+ must be")


def compare(got, want, rtol, atol):
    """(ok, detail): got and want as float64 (NaN equal to NaN)."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return False, f"shape {got.shape}, expected {want.shape}"
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    same_inf = np.isinf(w) & (g == w)
    bad = ~(both_nan | same_inf | (np.abs(g - w) <= atol + rtol * np.abs(w)))
    if not bad.any():
        return True, ""
    idx = np.argwhere(bad)
    first = tuple(int(i) for i in idx[0])
    return False, (f"{int(bad.sum())} of {bad.size} elements differ; first at {first}: "
                   f"got {g[first]!r}, expected {w[first]!r} (rtol={rtol}, atol={atol})")


def read_window(X, start, size):
    """X[start : start + size] with zeros outside X (T.copy's bounds-safe read)."""
    W = np.zeros(size, dtype=X.dtype)
    src = tuple(slice(max(s, 0), min(s + n, d)) for s, n, d in zip(start, size, X.shape))
    dst = tuple(slice(sl.start - s, sl.stop - s) for sl, s in zip(src, start))
    if all(sl.stop > sl.start for sl in src):
        W[dst] = X[src]
    return W


def write_window(R, start, W):
    """R[start : start + W.shape] = W, dropping what falls outside R."""
    dst = tuple(slice(max(s, 0), min(s + n, d)) for s, n, d in zip(start, W.shape, R.shape))
    src = tuple(slice(sl.start - s, sl.stop - s) for sl, s in zip(dst, start))
    if all(sl.stop > sl.start for sl in dst):
        R[dst] = W[src]


def sat_int(F, dtype):
    """float64 -> integer dtype, saturating, NaN -> 0, truncating toward zero."""
    info = np.iinfo(NP[dtype])
    F = np.trunc(np.nan_to_num(np.asarray(F, np.float64), nan=0.0, posinf=np.inf, neginf=-np.inf))
    out = np.empty(F.shape, NP[dtype])
    hi, lo = F >= float(info.max), F <= float(info.min)
    mid = ~(hi | lo)
    out[hi], out[lo] = info.max, info.min
    out[mid] = F[mid].astype(NP[dtype])
    return out


def classify_exception(e):
    """DIAGNOSTIC for a TileLangError at a line of this file without signs of
    a compiler bug, INTERNAL_ERROR otherwise; and a signature."""
    from tilelang_mlir.frontend.errors import TileLangError
    msg = str(e)
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    loc = getattr(e, "location", None)
    here = loc is not None and os.path.abspath(str(loc.filename)) == os.path.abspath(__file__)
    tb = traceback.extract_tb(e.__traceback__)
    inner = f"{os.path.basename(tb[-1].filename)}:{tb[-1].name}" if tb else "?"
    core = getattr(e, "message", first)
    generic = __import__("re").sub(r"\d+", "N", str(core))[:160]
    failed_pass = __import__("re").search(r"pass '([\w.-]+)' failed", msg)
    upstream_pass = failed_pass and not failed_pass.group(1).startswith(("tile-", "convert-tile-to"))
    if (isinstance(e, TileLangError) and here and not any(m in msg for m in INTERNAL_MARKERS)
            and not UPSTREAM_OP.search(msg) and not upstream_pass):
        return "DIAGNOSTIC", f"{type(e).__name__}: {generic}"
    return "INTERNAL_ERROR", f"{type(e).__name__}: {generic} @ {inner}"


def run_case(gpu=True, stage=lambda s: None):
    result = _run_cpu(stage)
    if not (gpu and GPU_TARGETS and result["verdict"] in ("OK", "MISMATCH", "DIAGNOSTIC")):
        return result
    stage("cpu-result " + json.dumps(result))
    result["gpu"] = []
    for target in GPU_TARGETS:
        stage("gpu-compile " + target)
        try:
            tl.compile(main, out_idx=OUT_IDX, target=target)
            r = {"verdict": "OK", "target": target}
        except Exception as e:
            verdict, sig = classify_exception(e)
            r = {"verdict": verdict, "target": target, "signature": sig,
                 "detail": str(e)[:3000], "traceback": traceback.format_exc()[-3000:]}
        stage("gpu-result " + json.dumps(r))
        result["gpu"].append(r)
    return result


CPU_OUTS = []  # the CPU target's outputs of the last _run_cpu (gpu_programs.py compares with them)


def _run_cpu(stage):
    stage("cpu-compile")
    try:
        kernel = tl.compile(main, out_idx=OUT_IDX, target="cpu")
    except Exception as e:
        verdict, sig = classify_exception(e)
        return {"verdict": verdict, "stage": "cpu-compile", "signature": sig,
                "detail": str(e)[:3000], "traceback": traceback.format_exc()[-3000:]}
    stage("cpu-run")
    rng = np.random.default_rng(INPUT_SEED)
    inputs = make_inputs(rng)
    originals = [x.copy() for x in inputs]
    try:
        outs = kernel(*inputs)
    except Exception as e:
        verdict, sig = classify_exception(e)
        return {"verdict": "INTERNAL_ERROR", "stage": "cpu-run", "signature": "run: " + sig,
                "detail": str(e)[:3000], "traceback": traceback.format_exc()[-3000:]}
    if OUT_IDX:
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    else:  # outputs written in place into arguments
        outs = [inputs[k] for k in INPLACE]
    wants = reference(*originals)
    CPU_OUTS[:] = [np.asarray(o) for o in outs]
    for k, (got, want) in enumerate(zip(outs, wants)):
        ok, detail = compare(got, want, RTOL, ATOL)
        if not ok:
            return {"verdict": "MISMATCH", "stage": "cpu-run", "signature": MISMATCH_KEY,
                    "detail": f"output {k}: {detail}"}
    return {"verdict": "OK", "stage": "cpu-run", "signature": "", "detail": ""}
'''

MAIN_BLOCK = r'''
if __name__ == "__main__":
    res = run_case(gpu="--no-gpu" not in sys.argv)
    print(json.dumps(res, indent=1))
    bad = res["verdict"] not in ("OK", "DIAGNOSTIC") or any(
        g["verdict"] not in ("OK", "DIAGNOSTIC") for g in res.get("gpu", []))
    sys.exit(1 if bad else 0)
'''

# ---------------------------------------------------------------------------
# Program model
# ---------------------------------------------------------------------------


@dataclass
class Program:
    family: str
    desc: str
    kernel: str  # the @T.prim_func source
    inputs: str  # body of make_inputs(rng), returns a list
    reference: str  # body of reference(*inputs), returns a list
    out_idx: List[int]
    input_names: List[str]
    rtol: float = 0.0
    atol: float = 0.0
    mismatch_key: str = ""
    gpu_target: Optional[str] = None
    features: Dict[str, object] = field(default_factory=dict)
    inplace: List[int] = field(default_factory=list)  # with out_idx None

    def gpu_targets(self, all_gpu: bool) -> List[str]:
        if not self.gpu_target:
            return []
        return list(GPU_TARGETS) if all_gpu else [self.gpu_target]

    def source(self, seed: int, index: int, input_seed: int, all_gpu: bool = False) -> str:
        head = (f'"""random_programs.py --seed {seed}: program {index}, family {self.family}.\n'
                f"{self.desc}\n\nRun: .venv/bin/python <this file> [--no-gpu]  (prints the "
                'verdict; exit status 1 on a failure)\n"""\n')
        args = ", ".join(self.input_names)
        return (head + IMPORTS + "\n\n" + self.kernel.strip() + "\n\n\n"
                + f"OUT_IDX = {self.out_idx!r}\nINPLACE = {self.inplace!r}\n"
                + f"INPUT_SEED = {input_seed}\n"
                + f"GPU_TARGETS = {self.gpu_targets(all_gpu)!r}\n"
                + f"RTOL = {self.rtol!r}\nATOL = {self.atol!r}\n"
                + f"MISMATCH_KEY = {self.mismatch_key!r}\n\n\n"
                + "def make_inputs(rng):\n" + textwrap.indent(self.inputs.strip(), "    ")
                + "\n\n\n" + f"def reference({args}):\n"
                + textwrap.indent(self.reference.strip(), "    ") + "\n\n" + HELPERS
                + "\n" + MAIN_BLOCK)


def _values(dtype: str, shape, rng_var="rng", lo=None, hi=None, out_of_range=False) -> str:
    """Source of a NumPy expression drawing an array of `dtype`."""
    shp = repr(tuple(shape))
    if dtype == "bool":
        return f"{rng_var}.random({shp}) < 0.5"
    if dtype in INTS:
        lo = -100 if lo is None else lo
        hi = 100 if hi is None else hi
        if dtype == "uint8":
            lo = max(lo, 0)
        return f"{rng_var}.integers({lo}, {hi} + 1, {shp}).astype(NP[{dtype!r}])"
    lo = -4.0 if lo is None else lo
    hi = 4.0 if hi is None else hi
    return f"{rng_var}.uniform({lo}, {hi}, {shp}).astype(NP[{dtype!r}])"


class Gen:
    def __init__(self, rng: random.Random, out_of_range: bool, gpu: bool):
        self.rng = rng
        self.out_of_range = out_of_range
        self.gpu = gpu

    def gpu_target(self) -> Optional[str]:
        return self.rng.choice(GPU_TARGETS) if self.gpu else None

    def threads(self) -> int:
        # Mostly warp multiples; sometimes counts that only some layouts
        # divide (96, 160: three and five warps).
        return self.rng.choice([32, 64, 128, 128, 128, 256, 32, 64, 128, 256, 96, 160])

    def extent(self, tile: int, ragged_p=0.6) -> int:
        """A problem size for tiles of `tile`: often not a multiple of it."""
        blocks = self.rng.choice([1, 1, 2, 3])
        if self.rng.random() < ragged_p:
            return max(1, blocks * tile - self.rng.randrange(1, tile + 1) + 1) if tile > 1 else blocks
        return blocks * tile

    def tile_dim(self) -> int:
        return self.rng.choice([1, 2, 4, 8, 8, 16, 16, 32, 64])

    # -- elementwise -------------------------------------------------------

    def expr(self, dtype: str, leaves: List[str], depth: int,
             leaf_bound: float = 4.0) -> Tuple[str, str, float]:
        """(tile source, numpy source, bound on |value|) of a random expression.
        The NumPy side computes in float64 (ints in int64)."""
        rng = self.rng
        isf = dtype in FLOATS
        if depth == 0 or rng.random() < 0.25:
            if rng.random() < 0.15:
                c = rng.choice([0.5, 1.5, 2.0, -1.0, 3.0]) if isf else rng.choice([1, 2, 3, -2, 5])
                if dtype == "uint8":
                    c = abs(c)
                return repr(c), repr(c), abs(c)
            leaf = rng.choice(leaves)
            return leaf, leaf, leaf_bound
        if isf:
            op = rng.choice(["add", "sub", "mul", "div", "max", "min", "neg", "abs", "exp",
                             "log", "sqrt", "tanh", "sigmoid", "rsqrt", "sin", "cos",
                             "square", "select"])
        elif dtype == "uint8":  # nothing that goes negative
            op = rng.choice(["add", "mul", "max", "min", "and", "or", "xor", "floordiv",
                             "floormod", "select"])
        else:
            op = rng.choice(["add", "sub", "mul", "max", "min", "neg", "abs", "and", "or",
                             "xor", "floordiv", "floormod", "select"])
        a, an, ab = self.expr(dtype, leaves, depth - 1, leaf_bound)
        if op in ("add", "sub", "mul", "max", "min", "div", "and", "or", "xor"):
            b, bn, bb = self.expr(dtype, leaves, depth - 1, leaf_bound)
            if op == "add":
                res = (f"({a} + {b})", f"({an} + {bn})", ab + bb)
            elif op == "sub":
                res = (f"({a} - {b})", f"({an} - {bn})", ab + bb)
            elif op == "mul":
                res = (f"({a} * {b})", f"({an} * {bn})", ab * bb)
            elif op == "div":
                res = (f"({a} / (T.abs({b}) + 1.0))", f"({an} / (np.abs({bn}) + 1.0))", ab)
            elif op == "max":
                res = (f"T.max({a}, {b})", f"np.maximum({an}, {bn})", max(ab, bb))
            elif op == "min":
                res = (f"T.min({a}, {b})", f"np.minimum({an}, {bn})", max(ab, bb))
            elif op == "and":
                res = (f"({a} & {b})", f"({an} & {bn})", max(ab, bb) * 2)
            elif op == "or":
                res = (f"({a} | {b})", f"({an} | {bn})", max(ab, bb) * 2)
            else:
                res = (f"({a} ^ {b})", f"({an} ^ {bn})", max(ab, bb) * 2)
        elif op == "neg":
            res = (f"(-{a})", f"(-{an})", ab)
        elif op == "abs":
            res = (f"T.abs({a})", f"np.abs({an})", ab)
        elif op == "exp":
            res = (f"T.exp(T.tanh({a}))", f"np.exp(np.tanh({an}))", 2.72)
        elif op == "log":
            res = (f"T.log(T.abs({a}) + 1.0)", f"np.log(np.abs({an}) + 1.0)", max(1.0, ab))
        elif op == "sqrt":
            res = (f"T.sqrt(T.abs({a}))", f"np.sqrt(np.abs({an}))", max(1.0, ab))
        elif op == "tanh":
            res = (f"T.tanh({a})", f"np.tanh({an})", 1.0)
        elif op == "sigmoid":
            res = (f"T.sigmoid({a})", f"(1.0 / (1.0 + np.exp(-({an}))))", 1.0)
        elif op == "rsqrt":
            res = (f"T.rsqrt(T.abs({a}) + 1.0)", f"(1.0 / np.sqrt(np.abs({an}) + 1.0))", 1.0)
        elif op == "sin":
            res = (f"T.sin({a})", f"np.sin({an})", 1.0)
        elif op == "cos":
            res = (f"T.cos({a})", f"np.cos({an})", 1.0)
        elif op == "square":
            res = (f"({a} * {a})", f"({an} * {an})", ab * ab)
        elif op == "floordiv":
            d = rng.choice([2, 3, 7])
            res = (f"T.floordiv({a}, {d})", f"np.floor_divide({an}, {d})", ab)
        elif op == "floormod":
            d = rng.choice([2, 3, 7])
            res = (f"T.floormod({a}, {d})", f"np.mod({an}, {d})", d)
        else:  # select on the sign of a leaf (inputs only: no flips near zero)
            leaf = rng.choice(leaves)
            b, bn, bb = self.expr(dtype, leaves, depth - 1, leaf_bound)
            res = (f"T.if_then_else({leaf} > 0, {a}, {b})",
                   f"np.where({leaf} > 0, {an}, {bn})", max(ab, bb))
        return res

    def elementwise(self) -> Program:
        rng = self.rng
        dtype = rng.choice(FLOATS + INTS + FLOATS)
        rank = rng.choice([1, 2, 2, 2])
        tile = [self.tile_dim() for _ in range(rank)]
        shape = [self.extent(t) for t in tile]
        nin = rng.choice([1, 2])
        limit = {"float16": 1000.0, "bfloat16": 1e4, "float32": 1e6, "float64": 1e9,
                 "int8": 127, "uint8": 255, "int16": 30000, "int32": 2**30, "int64": 2**40}[dtype]
        leaves_t = ["a[" + ", ".join(f"i{k}" for k in range(rank)) + "]"]
        leaves_n = ["a"]
        if nin == 2:
            leaves_t.append("b[" + ", ".join(f"i{k}" for k in range(rank)) + "]")
            leaves_n.append("b")
        # Leaves: floats in [-4, 4]; integers small enough that no step of
        # the expression overflows (its bound is computed with the leaves').
        leaf = 4.0 if dtype in FLOATS else {"int8": 5, "uint8": 5, "int16": 40, "int32": 1000,
                                            "int64": 1000}[dtype]
        for _ in range(50):
            depth = rng.choice([1, 2, 3])
            e_t, e_n, bound = self.expr(dtype, ["L0", "L1"][:nin], depth, leaf)
            if bound <= limit:
                break
        else:
            e_t, e_n, bound = "L0", "L0", leaf
        lo, hi = (-4.0, 4.0) if dtype in FLOATS else (0 if dtype == "uint8" else -leaf, leaf)
        e_t = e_t.replace("L0", leaves_t[0]).replace("L1", leaves_t[-1])
        e_n = e_n.replace("L0", "A").replace("L1", "B" if nin == 2 else "A")
        mode = rng.choice(["fragment", "shared", "direct", "local"]) if rank <= 2 else "fragment"
        if mode == "local" and any(t > 16 for t in tile):
            mode = "fragment"
        out_dtype = dtype
        if dtype in FLOATS and rng.random() < 0.3:  # the result cast to another float type
            out_dtype = rng.choice([d for d in FLOATS if d != dtype])
            e_t = f"T.cast({e_t}, {out_dtype!r})"
        names = ["X", "Y"][:nin]
        threads = self.threads()
        idx = ", ".join(f"i{k}" for k in range(rank))
        tl_shape = repr(tuple(shape))
        tile_s = repr(tuple(tile))
        grid = [f"T.ceildiv({shape[k]}, {tile[k]})" for k in range(rank)]
        bvars = ["bx", "by", "bz"][:rank]
        offs = [f"{bvars[k]} * {tile[k]}" for k in range(rank)]
        params = ", ".join(f"{n}: T.Tensor({tl_shape}, {dtype!r})" for n in names)
        params += f", Out: T.Tensor({tl_shape}, {out_dtype!r})"
        lines = [f"@T.prim_func",
                 f"def main({params}):",
                 f"    with T.Kernel({', '.join(grid)}, threads={threads}) as "
                 f"({', '.join(bvars)}{',' if rank == 1 else ''}):"]
        body = []
        if mode == "direct":
            # Element access on global tensors with an explicit bounds guard.
            gidx = [f"{offs[k]} + i{k}" for k in range(rank)]
            e_direct = e_t
            for n, tv in zip(names, ["a", "b"]):
                e_direct = e_direct.replace(f"{tv}[{idx}]", f"{n}[{', '.join(gidx)}]")
            guard = " and ".join(f"{gidx[k]} < {shape[k]}" for k in range(rank))
            body += [f"for {idx} in T.Parallel({', '.join(map(str, tile))}):",
                     f"    if {guard}:",
                     f"        Out[{', '.join(gidx)}] = {e_direct}"]
        else:
            alloc = {"fragment": "T.alloc_fragment", "shared": "T.alloc_shared",
                     "local": "T.alloc_local"}[mode]
            for n, tv in zip(names, ["a", "b"]):
                body += [f"{tv} = {alloc}({tile_s}, {dtype!r})",
                         f"T.copy({n}[{', '.join(offs)}], {tv})"]
            body += [f"o = {alloc}({tile_s}, {out_dtype!r})",
                     f"for {idx} in T.Parallel({', '.join(map(str, tile))}):",
                     f"    o[{idx}] = {e_t}",
                     f"T.copy(o, Out[{', '.join(offs)}])"]
        kernel = "\n".join(lines + ["        " + b for b in body])
        inputs = "return [" + ", ".join(_values(dtype, shape, lo=lo, hi=hi) for _ in names) + "]"
        wide = "np.float64" if dtype in FLOATS else "np.int64"
        ref = [f"A = X.astype({wide})"]
        if nin == 2:
            ref.append(f"B = Y.astype({wide})")
        ref.append("with np.errstate(all='ignore'):")
        ref.append(f"    R = np.broadcast_to({e_n}, X.shape)")
        ref.append(f"return [np.asarray(R).astype(NP[{out_dtype!r}])]")
        if dtype in FLOATS:
            depth_n = e_t.count("(") + 2
            rtol = 4 * EPS[dtype] * depth_n + 2 * EPS[out_dtype]
            atol = 4 * EPS[dtype] * depth_n * max(4.0, bound) + 2 * EPS[out_dtype] * bound
            if dtype in ("float32", "float64"):
                atol = max(atol, 1e-6 if dtype == "float32" else 1e-12)
        else:
            rtol = atol = 0.0
        return Program("elementwise", f"{dtype} {mode} tile {tile} over {shape}: {e_t}",
                       kernel, inputs, "\n".join(ref), [nin], names, rtol, atol,
                       f"elementwise {dtype} {mode} rank{rank}", self.gpu_target(),
                       {"dtype": dtype, "mode": mode, "tile": tile, "shape": shape})

    # -- reductions --------------------------------------------------------

    def reduce(self) -> Program:
        rng = self.rng
        kind = rng.choice(["sum", "max", "min", "abssum", "absmax"])
        dtype = rng.choice(["float32", "float32", "float16", "bfloat16", "float64", "int32"])
        rank = rng.choice([1, 2, 2, 2, 3])
        dims = [1, 2, 4, 8, 16, 32] if rank < 3 else [1, 2, 4, 8]
        tile = [rng.choice(dims) for _ in range(rank)]
        if rng.random() < 0.3:
            tile[rng.randrange(rank)] = 1  # unit dims
        dim = rng.randrange(rank)
        clear = rng.random() < 0.7
        shape = [self.extent(t) for t in tile]
        out_tile = [t for k, t in enumerate(tile) if k != dim] or [1]
        out_shape_full = [s for k, s in enumerate(shape) if k != dim]
        acc = rng.choice(["float32", dtype]) if dtype in ("float16", "bfloat16") else dtype
        threads = self.threads()
        bvars = ["bx", "by", "bz"]
        # One block per tile position of the kept dimensions; the reduced
        # dimension is one tile wide (and the problem is cut to it).
        shape[dim] = min(shape[dim], tile[dim]) if rng.random() < 0.7 else shape[dim]
        kept = [k for k in range(rank) if k != dim]
        grid = [f"T.ceildiv({shape[k]}, {tile[k]})" for k in kept] or ["1"]
        bv = bvars[:len(grid)]
        offs = {}
        for j, k in enumerate(kept):
            offs[k] = f"{bv[j]} * {tile[k]}"
        src_offs = ", ".join(offs.get(k, "0") for k in range(rank))
        out_shape = out_shape_full or [1]
        dst_offs = ", ".join(offs[k] for k in kept) if kept else "0"
        tl_in = repr(tuple(shape))
        tl_out = repr(tuple(out_shape))
        lines = ["@T.prim_func",
                 f"def main(X: T.Tensor({tl_in}, {dtype!r}), Init: T.Tensor({tl_out}, {acc!r}), "
                 f"Out: T.Tensor({tl_out}, {acc!r})):",
                 f"    with T.Kernel({', '.join(grid)}, threads={threads}) as "
                 f"({', '.join(bv)}{',' if len(bv) == 1 else ''}):",
                 f"        x = T.alloc_fragment({tuple(tile)!r}, {dtype!r})",
                 f"        r = T.alloc_fragment({tuple(out_tile)!r}, {acc!r})",
                 f"        T.copy(X[{src_offs}], x)"]
        if not clear:
            lines.append(f"        T.copy(Init[{dst_offs}], r)")
        lines += [f"        T.reduce_{kind}(x, r, dim={dim}{'' if clear else ', clear=False'})",
                  f"        T.copy(r, Out[{dst_offs}])"]
        kernel = "\n".join(lines)
        # A sum in a 16-bit accumulator over random floats is only bounded
        # by about n^2 roundings (8 for n = 32 in bfloat16: a sum of 0 would
        # pass): there, small integers, whose partial sums (at most 4 n + 4)
        # are exact in float16 and bfloat16, and an exact comparison.
        exact16 = acc in ("float16", "bfloat16") and kind in ("sum", "abssum")
        if dtype == "int32":
            vals = (_values(dtype, shape, lo=-1000, hi=1000), _values(acc, out_shape, lo=-1000, hi=1000))
        elif exact16:
            vals = (f"rng.integers(-4, 5, {tuple(shape)!r}).astype(NP[{dtype!r}])",
                    f"rng.integers(-4, 5, {tuple(out_shape)!r}).astype(NP[{acc!r}])")
        else:
            vals = (_values(dtype, shape), _values(acc, out_shape))
        inputs = f"return [{vals[0]}, {vals[1]}]"
        # Reference: pad the input with zeros to whole tiles along every
        # dimension (reads past the end are zero), reduce the tile along dim.
        pad = [f"(0, (-{shape[k]}) % {tile[k]})" for k in range(rank)]
        red = {"sum": "S.sum(axis={d})", "max": "S.max(axis={d})", "min": "S.min(axis={d})",
               "abssum": "np.abs(S).sum(axis={d})", "absmax": "np.abs(S).max(axis={d})"}[kind]
        comb = {"sum": "R + I", "max": "np.maximum(R, I)", "min": "np.minimum(R, I)",
                "abssum": "R + I", "absmax": "np.maximum(R, I)"}[kind]
        wide = "np.int64" if dtype == "int32" else "np.float64"
        ref = [f"P = np.pad(X.astype({wide}), [{', '.join(pad)}])",
               f"S = P[{', '.join(f'0:{tile[k]}' if k == dim else ':' for k in range(rank))}]",
               f"R = {red.format(d=dim)}"]
        if rank == 1:
            ref.append("R = np.reshape(R, (1,))")
        else:
            ref.append(f"R = R[{', '.join(f'0:{shape[k]}' for k in kept)}]")
        if not clear:
            ref.append(f"I = Init.astype({wide})")
            ref.append(f"R = {comb}")
        ref.append(f"return [R.astype(NP[{acc!r}])]")
        n = tile[dim]
        if dtype == "int32" or exact16:
            rtol = atol = 0.0
        else:
            # The result rounded to acc, plus n roundings of partial sums of
            # at most 4 n (sum) or exact (max/min).
            rtol = 2 * EPS[acc]
            atol = 2 * EPS[acc] * 4.0 * (1 if kind in ("max", "min", "absmax") else n * n)
            if acc in ("float32", "float64") and dtype in ("float16", "bfloat16"):
                atol = max(atol, 1e-6)
        return Program("reduce", f"reduce_{kind} dim={dim} clear={clear} of a {dtype} tile "
                                 f"{tile} over {shape}", kernel, inputs, "\n".join(ref), [2],
                       ["X", "Init"], rtol, atol,
                       f"reduce {kind} rank{rank} dim{dim} unit={1 in tile} clear={clear}",
                       self.gpu_target(), {"kind": kind, "tile": tile, "dim": dim})

    # -- copies --------------------------------------------------------------

    def copy(self) -> Program:
        """global -> scope1 -> scope2 -> ... -> global, each hop a whole
        tile; ragged edges; slices or point indices; the read window
        sometimes shifted off the tile grid (negative or past the end:
        zeros); the leading dim sometimes dynamic (T.dynamic)."""
        rng = self.rng
        dtype = rng.choice(FLOATS + INTS + ["bool"])
        rank = rng.choice([1, 2, 2, 3])
        tile = [rng.choice([1, 2, 4, 8, 16, 32]) for _ in range(rank)]
        if rank == 3:
            tile = [rng.choice([1, 2, 4]), rng.choice([1, 4, 8]), rng.choice([1, 4, 8, 16])]
        shape = [self.extent(t) for t in tile]
        hops = [rng.choice(["shared", "fragment", "local"]) for _ in range(rng.choice([1, 2, 3]))]
        if any(t > 16 for t in tile):
            hops = [h if h != "local" else "fragment" for h in hops]
        threads = self.threads()
        dynamic = rng.random() < 0.25
        dims = [("M0" if dynamic and k == 0 else str(shape[k])) for k in range(rank)]
        grid = [f"T.ceildiv({dims[k]}, {tile[k]})" for k in range(rank)]
        bv = ["bx", "by", "bz"][:rank]
        offs = [f"{bv[k]} * {tile[k]}" for k in range(rank)]
        shift = [rng.choice([0, 0, 1, 3, -1, -2]) if rng.random() < 0.3 else 0
                 for _ in range(rank)]
        roffs = [o + (f" + {sh}" if sh > 0 else f" - {-sh}" if sh < 0 else "")
                 for o, sh in zip(offs, shift)]
        style_in = rng.choice(["point", "slice"])
        style_out = rng.choice(["point", "slice"])

        def region(buf, style, at):
            if style == "point":
                return f"{buf}[{', '.join(at)}]"
            return f"{buf}[{', '.join(f'{o}:{o} + {t}' for o, t in zip(at, tile))}]"

        tshape = "(" + ", ".join(dims) + ("," if rank == 1 else "") + ")"
        lines = ([f"M0 = T.dynamic('M0')", ""] if dynamic else []) + [
                 "@T.prim_func",
                 f"def main(X: T.Tensor({tshape}, {dtype!r}), "
                 f"Out: T.Tensor({tshape}, {dtype!r})):",
                 f"    with T.Kernel({', '.join(grid)}, threads={threads}) as "
                 f"({', '.join(bv)}{',' if rank == 1 else ''}):"]
        alloc = {"shared": "T.alloc_shared", "fragment": "T.alloc_fragment",
                 "local": "T.alloc_local"}
        body = []
        prev = None
        for h, scope in enumerate(hops):
            body.append(f"t{h} = {alloc[scope]}({tuple(tile)!r}, {dtype!r})")
            if prev is None:
                body.append(f"T.copy({region('X', style_in, roffs)}, t{h})")
            else:
                body.append(f"T.copy({prev}, t{h})")
            prev = f"t{h}"
        body.append(f"T.copy({prev}, {region('Out', style_out, offs)})")
        kernel = "\n".join(lines + ["        " + b for b in body])
        inputs = f"return [{_values(dtype, shape)}]"
        # Per block: the (shifted) window of X, zero outside, written at the
        # block's place in Out (what falls outside is dropped).
        ref = "\n".join([
            "R = np.zeros_like(X)",
            f"tile, shift = {tuple(tile)!r}, {tuple(shift)!r}",
            "grid = [-(-d // t) for d, t in zip(X.shape, tile)]",
            "for b in np.ndindex(*grid):",
            "    at = [i * t for i, t in zip(b, tile)]",
            "    W = read_window(X, [a + s for a, s in zip(at, shift)], tile)",
            "    write_window(R, at, W)",
            "return [R]"])
        return Program("copy", f"{dtype} {rank}-D tile {tile} over {shape} via {hops} "
                               f"({style_in} in, {style_out} out, read shift {shift}, "
                               f"dynamic={dynamic})",
                       kernel, inputs, ref, [1], ["X"], 0.0, 0.0,
                       f"copy via {'-'.join(hops)} {style_in}/{style_out} rank{rank} "
                       f"shift={any(shift)} dyn={dynamic}",
                       self.gpu_target(), {"hops": hops, "tile": tile})

    def copy_smoke(self) -> Program:
        """Y = X through a fragment: the program every build must run."""
        kernel = "\n".join([
            "@T.prim_func",
            "def main(X: T.Tensor((40, 24), 'float32'), Y: T.Tensor((40, 24), 'float32')):",
            "    with T.Kernel(T.ceildiv(40, 16), threads=128) as bx:",
            "        x = T.alloc_fragment((16, 24), 'float32')",
            "        T.copy(X[bx * 16, 0], x)",
            "        T.copy(x, Y[bx * 16, 0])"])
        return Program("smoke", "Y = X through a fragment", kernel,
                       f"return [{_values('float32', (40, 24))}]", "return [X.copy()]", [1],
                       ["X"], 0.0, 0.0, "smoke")

    def point_copy(self) -> Program:
        """T.copy(X[r, c], tile) for tiles of shape (n, 1), (1, n), (n,), and
        3-D tensors; the tile is written back at a point index too."""
        rng = self.rng
        dtype = rng.choice(["float32", "float16", "int32", "bfloat16", "int8"])
        trank = rng.choice([2, 3])
        shape = [rng.choice([5, 8, 13, 16, 33]) for _ in range(trank)]
        n = rng.choice([1, 2, 4, 8, 16])
        m = rng.choice([1, 2, 4, 8])
        kinds = [(n, 1), (1, n), (n,), (n, m), (1, 1), (1,)]
        if trank == 3:
            kinds += [(1, n, m), (2, n, 1), (n, 1, m), (2, 1, n)]
        tshape = rng.choice(kinds)
        start = [rng.randrange(0, s) for s in shape]
        # Expected region: the tile's shape right-aligned against the
        # tensor's dims (leading dims of extent 1), as in TileLang.
        ext = [1] * (trank - len(tshape)) + list(tshape)
        lines = ["@T.prim_func",
                 f"def main(X: T.Tensor({tuple(shape)!r}, {dtype!r}), "
                 f"Out: T.Tensor({tuple(shape)!r}, {dtype!r})):",
                 f"    with T.Kernel(1, threads={self.threads()}) as bx:",
                 f"        x = T.alloc_{rng.choice(['fragment', 'shared'])}({tuple(tshape)!r}, {dtype!r})",
                 f"        T.copy(X[{', '.join(map(str, start))}], x)",
                 f"        T.copy(x, Out[{', '.join(map(str, start))}])"]
        kernel = "\n".join(lines)
        # Out comes in filled with -7: elements outside the region stay so.
        inputs = (f"return [{_values(dtype, shape)}, "
                  f"np.full({tuple(shape)!r}, -7, dtype=NP[{dtype!r}])]")
        sl = ", ".join(f"{s}:{s} + {e}" for s, e in zip(start, ext))
        ref = "\n".join([f"R = Out.copy()",
                         f"R[{sl}] = X[{sl}]",
                         "return [R]"])
        shape_kind = tuple(1 if e == 1 else "n" for e in tshape)
        return Program("point_copy", f"{dtype} tile {tshape} at X[{start}] of a {shape} tensor "
                                     f"(expected region extents {ext})",
                       kernel, inputs, ref, None, ["X", "Out"], 0.0, 0.0,
                       f"point_copy tile {shape_kind} in {trank}-D", self.gpu_target(),
                       {"tile": tshape, "start": start}, inplace=[1])

    # -- conversions -----------------------------------------------------------

    def convert(self, pair: Optional[Tuple[str, str]] = None) -> Program:
        rng = self.rng
        src, dst = pair or (rng.choice(ALL_DTYPES), rng.choice(ALL_DTYPES))
        shape = [rng.choice([8, 16, 24, 40])]
        if rng.random() < 0.5:
            shape = [rng.choice([4, 8, 12]), rng.choice([8, 16, 20])]
        tile = [min(s, rng.choice([4, 8, 16])) for s in shape]
        via = rng.choice(["fragment", "shared", "direct"])
        rank = len(shape)
        grid = [f"T.ceildiv({shape[k]}, {tile[k]})" for k in range(rank)]
        bv = ["bx", "by"][:rank]
        offs = [f"{bv[k]} * {tile[k]}" for k in range(rank)]
        lines = ["@T.prim_func",
                 f"def main(X: T.Tensor({tuple(shape)!r}, {src!r}), "
                 f"Out: T.Tensor({tuple(shape)!r}, {dst!r})):",
                 f"    with T.Kernel({', '.join(grid)}, threads={self.threads()}) as "
                 f"({', '.join(bv)}{',' if rank == 1 else ''}):"]
        if via == "direct":  # the tile keeps the source type: the store converts
            lines += [f"        t = T.alloc_fragment({tuple(tile)!r}, {src!r})",
                      f"        T.copy(X[{', '.join(offs)}], t)",
                      f"        T.copy(t, Out[{', '.join(offs)}])"]
        else:
            alloc = "T.alloc_fragment" if via == "fragment" else "T.alloc_shared"
            lines += [f"        t = {alloc}({tuple(tile)!r}, {dst!r})",
                      f"        T.copy(X[{', '.join(offs)}], t)",
                      f"        T.copy(t, Out[{', '.join(offs)}])"]
        kernel = "\n".join(lines)
        lo, hi = self._convert_range(src, dst)
        vals = _values(src, shape, lo=lo, hi=hi)
        special = ""
        if self.out_of_range and src in FLOATS and dst in INTS + ["bool"]:
            special = ("v = X.reshape(-1)\n"
                       "v[:4] = np.array([1e10, -1e10, np.nan, 3e9]).astype(v.dtype)\n")
        inputs = f"X = {vals}\n{special}return [X]"
        # NumPy's conversion, except: float -> int saturates, NaN -> 0
        # (in-range values never hit it unless --out-of-range).
        if dst == "bool":
            ref = "return [X.astype(np.float64) != 0]"
        elif src in FLOATS + FP8 and dst in INTS:
            ref = f"return [sat_int(X.astype(np.float64), {dst!r})]"
        elif src == "bool":
            ref = f"return [X.astype(np.uint8).astype(NP[{dst!r}])]"
        elif src in FP8 and dst in FP8 + ["float16", "bfloat16"]:
            ref = f"return [X.astype(np.float32).astype(NP[{dst!r}])]"
        else:
            ref = f"return [X.astype(NP[{dst!r}])]"
        # Exact, but for one unit in the last place where NumPy itself
        # rounds twice (float64 -> bfloat16/float8 through float32).
        rtol = 0.0
        if src == "float64" and dst in ("bfloat16",) + tuple(FP8):
            rtol = EPS[dst]
        return Program("convert", f"T.copy {src} -> {dst} via {via}, tile {tile} over {shape}",
                       kernel, inputs, ref, [1], ["X"], rtol, 0.0,
                       f"convert {src}->{dst}", self.gpu_target(),
                       {"src": src, "dst": dst, "via": via})

    def _convert_range(self, src: str, dst: str):
        """Source values that convert without overflow (or rounding
        ambiguity for ints) into dst."""
        if src == "bool":
            return None, None
        if src in INTS:
            hi = min(RANGE[src], RANGE[dst] if dst in INTS else 100)
            lo = 0 if src == "uint8" or dst == "uint8" else -hi
            if dst in FP8:
                hi, lo = min(hi, 16), max(lo, -16)
            return lo, hi
        # float source
        if dst in INTS:
            hi = min(RANGE[dst], 1000.0)
            lo = 0.0 if dst == "uint8" else -hi
            return lo, hi
        if dst == "bool":
            return -2.0, 2.0
        m = min(RANGE[src], RANGE[dst], 1e4)
        return -m, m

    # -- gemm ------------------------------------------------------------------

    GEMM_TYPES = [("float16", "float32"), ("float16", "float32"), ("float16", "float16"),
                  ("bfloat16", "float32"), ("bfloat16", "float32"), ("float32", "float32"),
                  ("float64", "float64"), ("int8", "int32"), ("float8_e4m3", "float32"),
                  ("float8_e5m2", "float16")]

    def gemm(self) -> Program:
        rng = self.rng
        ab, acc = rng.choice(self.GEMM_TYPES)
        out = rng.choice([acc, acc, ab]) if ab not in FP8 else acc
        ta, tb = rng.random() < 0.4, rng.random() < 0.4
        bM, bN = rng.choice([16, 32, 64]), rng.choice([16, 32, 64])
        bK = rng.choice([16, 32, 64])
        M = self.extent(bM)
        N = self.extent(bN)
        K = rng.choice([bK, 2 * bK, 3 * bK, bK + rng.randrange(1, bK), 2 * bK - rng.randrange(1, bK),
                        rng.randrange(1, bK + 1)])
        stages = rng.choice([1, 2, 3, 4])
        threads = rng.choice([32, 64, 128, 128, 256])
        policy = rng.choice([None, None, "Square", "FullRow", "FullCol"])
        a_scope = "shared" if rng.random() < 0.8 else "fragment"
        A_shape = (K, M) if ta else (M, K)
        B_shape = (N, K) if tb else (K, N)
        A_tile = (bK, bM) if ta else (bM, bK)
        B_tile = (bN, bK) if tb else (bK, bN)
        a_at = "k * %d, by * %d" % (bK, bM) if ta else "by * %d, k * %d" % (bM, bK)
        b_at = "bx * %d, k * %d" % (bN, bK) if tb else "k * %d, bx * %d" % (bK, bN)
        extra = ""
        if ta:
            extra += ", transpose_A=True"
        if tb:
            extra += ", transpose_B=True"
        if policy:
            extra += f", policy=T.GemmWarpPolicy.{policy}"
        clear_in_loop = rng.random() < 0.15
        lines = ["@T.prim_func",
                 f"def main(A: T.Tensor({A_shape!r}, {ab!r}), B: T.Tensor({B_shape!r}, {ab!r}), "
                 f"C: T.Tensor(({M}, {N}), {out!r})):",
                 f"    with T.Kernel(T.ceildiv({N}, {bN}), T.ceildiv({M}, {bM}), threads={threads}) "
                 f"as (bx, by):",
                 f"        As = T.alloc_{a_scope}({A_tile!r}, {ab!r})",
                 f"        Bs = T.alloc_shared({B_tile!r}, {ab!r})",
                 f"        Cl = T.alloc_fragment(({bM}, {bN}), {acc!r})",
                 f"        T.clear(Cl)",
                 f"        for k in T.Pipelined(T.ceildiv({K}, {bK}), num_stages={stages}):",
                 f"            T.copy(A[{a_at}], As)",
                 f"            T.copy(B[{b_at}], Bs)",
                 f"            T.gemm(As, Bs, Cl{extra})",
                 f"        T.copy(Cl, C[by * {bM}, bx * {bN}])"]
        if clear_in_loop:  # clear_accum on a one-step loop
            lines[-2] = lines[-2][:-1] + (", clear_accum=True)" if K <= bK else ")")
        kernel = "\n".join(lines)
        if ab == "int8":
            va, vb = _values(ab, A_shape, lo=-8, hi=8), _values(ab, B_shape, lo=-8, hi=8)
        elif ab in FP8:
            va, vb = _values(ab, A_shape, lo=-2.0, hi=2.0), _values(ab, B_shape, lo=-2.0, hi=2.0)
        else:
            va, vb = _values(ab, A_shape, lo=-1.0, hi=1.0), _values(ab, B_shape, lo=-1.0, hi=1.0)
        inputs = f"return [{va}, {vb}]"
        wide = "np.int64" if ab == "int8" else "np.float64"
        ref = "\n".join([f"a = A.astype({wide}){'.T' if ta else ''}",
                         f"b = B.astype({wide}){'.T' if tb else ''}",
                         f"return [(a @ b).astype(NP[{out!r}])]"])
        gpu_atol = 0.0
        if ab == "int8":
            rtol = atol = 0.0
        else:
            mag = 4.0 if ab in FP8 else 1.0
            e_acc = gemm_eps(ab, acc)
            # The sum is rounded K times in acc; an output narrower than acc
            # is rounded once more, relative to the value (rtol; a K-fold
            # absolute term there let results off by a whole k-tile pass).
            atol = 2 * e_acc * K * mag + 2 * EPS[out] * (K if out == acc else 1) * mag
            rtol = 2 * EPS[out]
            if ab in FP8 and tb and not ta:  # wgmma's float8 accumulation (gemm_eps)
                gpu_atol = atol + 2 * (gemm_eps(ab, acc, gpu=True) - e_acc) * K * mag
        return Program("gemm", f"gemm {ab}->{acc} (C {out}) M,N,K={M},{N},{K} blocks "
                               f"{bM}x{bN}x{bK} ta={ta} tb={tb} stages={stages} threads={threads} "
                               f"policy={policy} A in {a_scope}",
                       kernel, inputs, ref, [2], ["A", "B"], rtol, atol,
                       f"gemm {ab}->{acc}->{out} ta={ta} tb={tb}", self.gpu_target(),
                       {"types": (ab, acc, out), "stages": stages, "threads": threads,
                        **({"gpu_atol": gpu_atol} if gpu_atol else {})})

    def softmax(self) -> Program:
        """reduce_max, exp of the difference, reduce_sum, divide: two
        reductions and two broadcasts over the reduced dim, ragged tiles
        (the zero padding of reads past the end takes part, as in the
        kernel)."""
        rng = self.rng
        dtype = rng.choice(["float32", "float32", "float16", "bfloat16"])
        dim = rng.choice([1, 1, 0])
        bm = rng.choice([1, 2, 4, 8, 16, 32])
        n = rng.choice([1, 8, 16, 32, 64, 128])
        M = self.extent(bm)
        N = n - rng.randrange(0, max(1, n // 2)) if rng.random() < 0.4 else n
        # dim 1: a block owns bm rows of n columns; dim 0: n rows of bm columns.
        if dim == 1:
            xs, ts, red = (M, N), (bm, n), (bm,)
            at = f"bx * {bm}, 0"
            ij, ridx = "i, j", "i"
            grid = f"T.ceildiv({M}, {bm})"
        else:
            xs, ts, red = (N, M), (n, bm), (bm,)
            at = f"0, bx * {bm}"
            ij, ridx = "i, j", "j"
            grid = f"T.ceildiv({M}, {bm})"
        lines = ["@T.prim_func",
                 f"def main(X: T.Tensor({xs!r}, {dtype!r}), Y: T.Tensor({xs!r}, 'float32')):",
                 f"    with T.Kernel({grid}, threads={self.threads()}) as bx:",
                 f"        x = T.alloc_fragment({ts!r}, 'float32')",
                 f"        m = T.alloc_fragment({red!r}, 'float32')",
                 f"        s = T.alloc_fragment({red!r}, 'float32')",
                 f"        T.copy(X[{at}], x)",
                 f"        T.reduce_max(x, m, dim={dim})",
                 f"        for {ij} in T.Parallel({ts[0]}, {ts[1]}):",
                 f"            x[i, j] = T.exp(x[i, j] - m[{ridx}])",
                 f"        T.reduce_sum(x, s, dim={dim})",
                 f"        for {ij} in T.Parallel({ts[0]}, {ts[1]}):",
                 f"            x[i, j] = x[i, j] / s[{ridx}]",
                 f"        T.copy(x, Y[{at}])"]
        kernel = "\n".join(lines)
        inputs = f"return [{_values(dtype, xs, lo=-3.0, hi=3.0)}]"
        pad = f"[(0, (-{xs[0]}) % {ts[0]}), (0, (-{xs[1]}) % {ts[1]})]" if dim == 1 else \
            f"[(0, {ts[0]} - {xs[0]}), (0, (-{xs[1]}) % {ts[1]})]"
        ref = "\n".join([f"P = np.pad(X.astype(np.float64), {pad})",
                         f"E = np.exp(P - P.max(axis={dim}, keepdims=True))",
                         f"R = E / E.sum(axis={dim}, keepdims=True)",
                         f"return [R[:{xs[0]}, :{xs[1]}].astype(np.float32)]"])
        return Program("softmax", f"softmax over dim {dim} of {dtype} {xs}, tile {ts}", kernel,
                       inputs, ref, [1], ["X"], 1e-5, 1e-6, f"softmax dim{dim}",
                       self.gpu_target(), {"dim": dim, "tile": ts})

    def gemm_epilogue(self) -> Program:
        """C = relu(alpha * A @ B + bias[col]) in the accumulator, written in
        the output dtype."""
        rng = self.rng
        ab, acc = rng.choice([("float16", "float32"), ("bfloat16", "float32"),
                              ("float32", "float32")])
        out = rng.choice(["float32", ab])
        bM, bN, bK = rng.choice([16, 32, 64]), rng.choice([16, 32, 64]), rng.choice([16, 32])
        M, N = self.extent(bM), self.extent(bN)
        K = rng.choice([bK, 2 * bK + rng.randrange(0, bK), rng.randrange(1, bK + 1)])
        alpha = rng.choice([0.5, 2.0, -1.0])
        stages = rng.choice([1, 2, 3])
        lines = ["@T.prim_func",
                 f"def main(A: T.Tensor(({M}, {K}), {ab!r}), B: T.Tensor(({K}, {N}), {ab!r}), "
                 f"Bias: T.Tensor(({N},), 'float32'), C: T.Tensor(({M}, {N}), {out!r})):",
                 f"    with T.Kernel(T.ceildiv({N}, {bN}), T.ceildiv({M}, {bM}), "
                 f"threads={rng.choice([64, 128, 256])}) as (bx, by):",
                 f"        As = T.alloc_shared(({bM}, {bK}), {ab!r})",
                 f"        Bs = T.alloc_shared(({bK}, {bN}), {ab!r})",
                 f"        Cl = T.alloc_fragment(({bM}, {bN}), {acc!r})",
                 f"        bias = T.alloc_fragment(({bN},), 'float32')",
                 f"        Co = T.alloc_fragment(({bM}, {bN}), {out!r})",
                 f"        T.clear(Cl)",
                 f"        T.copy(Bias[bx * {bN}], bias)",
                 f"        for k in T.Pipelined(T.ceildiv({K}, {bK}), num_stages={stages}):",
                 f"            T.copy(A[by * {bM}, k * {bK}], As)",
                 f"            T.copy(B[k * {bK}, bx * {bN}], Bs)",
                 f"            T.gemm(As, Bs, Cl)",
                 f"        for i, j in T.Parallel({bM}, {bN}):",
                 f"            Co[i, j] = T.max(Cl[i, j] * {alpha} + bias[j], 0.0)",
                 f"        T.copy(Co, C[by * {bM}, bx * {bN}])"]
        kernel = "\n".join(lines)
        inputs = (f"return [{_values(ab, (M, K), lo=-1.0, hi=1.0)}, "
                  f"{_values(ab, (K, N), lo=-1.0, hi=1.0)}, {_values('float32', (N,))}]")
        ref = "\n".join(["R = A.astype(np.float64) @ B.astype(np.float64)",
                         f"R = np.maximum(R * {alpha} + Bias.astype(np.float64), 0.0)",
                         f"return [R.astype(NP[{out!r}])]"])
        # K roundings in acc; an output narrower than acc is rounded once
        # more, relative to the value (rtol).
        atol = 4 * EPS[acc] * K * 2 + 2 * EPS[out] * ((K + 4) if out == acc else 4)
        # On a GPU a float32 gemm is TF32 (gemm_eps): K products off by
        # 2^-10 of their magnitude (operands in [-1, 1]), scaled by alpha.
        feats = {}
        if ab == "float32":
            feats["gpu_atol"] = atol + 2 * gemm_eps(ab, acc) * K * abs(alpha)
        return Program("gemm_epilogue", f"relu({alpha} * A @ B + bias) {ab}->{acc}->{out} "
                                        f"M,N,K={M},{N},{K} blocks {bM}x{bN}x{bK} stages={stages}",
                       kernel, inputs, ref, [3], ["A", "B", "Bias"], 2 * EPS[out], atol,
                       f"gemm_epilogue {ab}->{out}", self.gpu_target(), feats)

    def cumsum(self) -> Program:
        """T.cumsum along one dim of a 2-D fragment (in place or into
        another), forward or reverse; the scanned dim is one tile."""
        rng = self.rng
        dtype = rng.choice(["float32", "float32", "float64"])
        dim = rng.choice([0, 1])
        reverse = rng.random() < 0.5
        tile = [rng.choice([1, 4, 8, 16, 32]), rng.choice([1, 4, 8, 16, 32])]
        shape = [self.extent(t) for t in tile]
        shape[dim] = tile[dim] - (rng.randrange(0, tile[dim]) if rng.random() < 0.4 else 0)
        other = 1 - dim
        grid = f"T.ceildiv({shape[other]}, {tile[other]})"
        at = f"bx * {tile[0]}, 0" if dim == 1 else f"0, bx * {tile[1]}"
        inplace = rng.random() < 0.5
        lines = ["@T.prim_func",
                 f"def main(X: T.Tensor({tuple(shape)!r}, {dtype!r}), "
                 f"Y: T.Tensor({tuple(shape)!r}, {dtype!r})):",
                 f"    with T.Kernel({grid}, threads={self.threads()}) as bx:",
                 f"        x = T.alloc_fragment({tuple(tile)!r}, {dtype!r})",
                 f"        T.copy(X[{at}], x)"]
        if inplace:
            lines += [f"        T.cumsum(x, dim={dim}, reverse={reverse})",
                      f"        T.copy(x, Y[{at}])"]
        else:
            lines += [f"        y = T.alloc_fragment({tuple(tile)!r}, {dtype!r})",
                      f"        T.cumsum(x, y, dim={dim}, reverse={reverse})",
                      f"        T.copy(y, Y[{at}])"]
        kernel = "\n".join(lines)
        inputs = f"return [{_values(dtype, shape)}]"
        pad = [f"(0, (-{shape[k]}) % {tile[k]})" if k != dim else f"(0, {tile[dim]} - {shape[dim]})"
               for k in range(2)]
        flip = f"np.flip(P, axis={dim})"
        ref = "\n".join([f"P = np.pad(X.astype(np.float64), [{', '.join(pad)}])",
                         (f"R = np.flip(np.cumsum({flip}, axis={dim}), axis={dim})" if reverse
                          else f"R = np.cumsum(P, axis={dim})"),
                         f"return [R[:{shape[0]}, :{shape[1]}].astype(NP[{dtype!r}])]"])
        n = tile[dim]
        return Program("cumsum", f"cumsum dim={dim} reverse={reverse} inplace={inplace} {dtype} "
                                 f"tile {tile} over {shape}", kernel, inputs, ref, [1], ["X"],
                       4 * EPS[dtype] * n, 4 * EPS[dtype] * n * 4, f"cumsum dim{dim} rev={reverse}",
                       self.gpu_target(), {})

    def pipelined(self) -> Program:
        """Out[r, :] = sum over k-tiles of f(X tile): a pipelined loop of
        copies and an elementwise accumulation into a fragment."""
        rng = self.rng
        dtype = rng.choice(["float32", "float16", "bfloat16"])
        bm, bk = rng.choice([4, 8, 16, 32]), rng.choice([4, 8, 16, 32])
        M = self.extent(bm)
        K = rng.choice([bk, 2 * bk, 3 * bk + rng.randrange(0, bk), rng.randrange(1, 4 * bk)])
        stages = rng.choice([1, 2, 3, 4])
        steps = -(-K // bk)
        loop = (f"T.Pipelined({steps}, num_stages={stages})" if rng.random() < 0.75
                else f"T.serial({steps})")
        init = rng.choice([0.0, 0.0, 1.5, -2.0])
        lines = ["@T.prim_func",
                 f"def main(X: T.Tensor(({M}, {K}), {dtype!r}), Out: T.Tensor(({M}, {bk}), 'float32')):",
                 f"    with T.Kernel(T.ceildiv({M}, {bm}), threads={self.threads()}) as bx:",
                 f"        s = T.alloc_shared(({bm}, {bk}), {dtype!r})",
                 f"        acc = T.alloc_fragment(({bm}, {bk}), 'float32')",
                 "        T.clear(acc)" if init == 0.0 else f"        T.fill(acc, {init})",
                 f"        for k in {loop}:",
                 f"            T.copy(X[bx * {bm}, k * {bk}], s)",
                 f"            for i, j in T.Parallel({bm}, {bk}):",
                 f"                acc[i, j] += T.cast(s[i, j], 'float32') * 2.0",
                 f"        T.copy(acc, Out[bx * {bm}, 0])"]
        target = self.gpu_target()
        # The accumulator allocated and initialised before the shared buffer:
        # an op between two allocations (warp specialization placed its
        # region at the first op that is not an allocation).
        late_alloc = rng.random() < 0.3
        if late_alloc:  # ... and the tile read through a fragment allocated after it
            lines[3:6] = [lines[4], lines[5], lines[3],
                          f"        f = T.alloc_fragment(({bm}, {bk}), {dtype!r})"]
            k = lines.index(f"            T.copy(X[bx * {bm}, k * {bk}], s)")
            lines.insert(k + 1, "            T.copy(s, f)")
            lines[k + 3] = lines[k + 3].replace("s[i, j]", "f[i, j]")
        kernel = "\n".join(lines)
        inputs = f"return [{_values(dtype, (M, K), lo=-1.0, hi=1.0)}]"
        ref = "\n".join([f"P = np.pad(X.astype(np.float64), [(0, 0), (0, (-{K}) % {bk})])",
                         f"R = {init} + 2.0 * P.reshape({M}, {steps}, {bk}).sum(axis=1)",
                         "return [R.astype(np.float32)]"])
        return Program("pipelined", f"{loop} accumulate {dtype} M={M} K={K} tile {bm}x{bk} "
                                    f"init={init}{' shared allocated last' if late_alloc else ''}",
                       kernel, inputs, ref, [1], ["X"],
                       1e-5, 1e-5 * (steps * 2 + 2), f"pipelined {loop.split('(')[0]}",
                       target, {"stages": stages, "late_alloc": late_alloc})


FAMILIES = {"elementwise": 3, "reduce": 2.5, "copy": 1.5, "point_copy": 1.2, "convert": 2,
            "gemm": 2, "pipelined": 0.8, "softmax": 1, "gemm_epilogue": 1, "cumsum": 0.8}


def generate(seed: int, index: int, out_of_range=False, gpu=True,
             families: Optional[Sequence[str]] = None) -> Program:
    rng = random.Random(f"{seed}:{index}")
    names = list(families or FAMILIES)
    fam = rng.choices(names, weights=[FAMILIES[n] for n in names])[0]
    g = Gen(rng, out_of_range, gpu)
    return getattr(g, fam)()


def input_seed(seed: int, index: int) -> int:
    return int(hashlib.sha1(f"inputs:{seed}:{index}".encode()).hexdigest()[:8], 16)


# ---------------------------------------------------------------------------
# Worker: runs program files, one at a time, for the driver
# ---------------------------------------------------------------------------


def worker_main() -> int:
    import runpy
    for line in sys.stdin:
        path, gpu = line.rstrip("\n").split("\t")
        def stage(s):
            print("STAGE " + s, flush=True)
        try:
            mod = runpy.run_path(path, run_name="__fuzz__")
            res = mod["run_case"](gpu=gpu == "1", stage=stage)
        except MemoryError:
            res = {"verdict": "MEMORY", "stage": "?", "signature": "MemoryError", "detail": ""}
        except BaseException as e:  # the program file itself is broken
            import traceback
            res = {"verdict": "INTERNAL_ERROR", "stage": "load",
                   "signature": f"{type(e).__name__}: {str(e)[:100]}",
                   "detail": traceback.format_exc()[-3000:]}
        print("RESULT " + json.dumps(res), flush=True)
    return 0


class Worker:
    """A worker subprocess under the memory limit; restarted after a crash
    or a timeout, and after every PROGRAMS_PER_WORKER programs: tl.compile
    keeps every kernel in an unbounded in-memory cache, and a CPU kernel
    holds two threads and about 18 MB of address space, so after a few
    hundred programs one process hits the limit (LLVM aborts with
    "pthread_create failed")."""

    PROGRAMS_PER_WORKER = 100

    def __init__(self, mem_mb: int, log_dir: Path):
        self.ran = 0
        self.mem_mb = mem_mb
        self.log_dir = log_dir
        self.proc: Optional[subprocess.Popen] = None
        self.err_path = log_dir / "worker-stderr.txt"

    def start(self):
        env = dict(os.environ)
        env["TILELANG_MLIR_DISABLE_CACHE"] = "1"
        env.setdefault("OMP_NUM_THREADS", "1")
        env["PYTHONFAULTHANDLER"] = "1"
        mem = self.mem_mb

        def limits():
            resource.setrlimit(resource.RLIMIT_AS, (mem << 20, mem << 20))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, preexec_fn=limits, env=env,
                                     start_new_session=True, bufsize=0)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None

    def stderr_tail(self, n=4000) -> str:
        try:
            data = self.err_path.read_bytes()
        except OSError:
            return ""
        return data[-n:].decode(errors="replace")

    def run(self, path: Path, gpu: bool, timeout: float) -> dict:
        if self.ran >= self.PROGRAMS_PER_WORKER:
            self.stop()
        if self.proc is None or self.proc.poll() is not None:
            self.start()
            self.ran = 0
        self.ran += 1
        self.err.truncate(0)
        self.err.seek(0)
        self.proc.stdin.write(f"{path}\t{'1' if gpu else '0'}\n".encode())
        self.proc.stdin.flush()
        last_stage = "start"
        cpu_result = None
        buf = b""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return _after_cpu(cpu_result, {
                    "verdict": "TIMEOUT", "stage": last_stage,
                    "signature": f"timeout in {last_stage.split()[0]}", "detail": ""})
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            if not r:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:  # the worker died
                rc = self.proc.wait()
                tail = self.stderr_tail()
                self.proc = None
                mem = any(m in tail for m in ("bad_alloc", "out of memory", "MemoryError",
                                              "Cannot allocate memory"))
                verdict = "MEMORY" if mem else "CRASH"
                sig = _crash_sig(tail, rc, last_stage)
                return _after_cpu(cpu_result, {
                    "verdict": verdict, "stage": last_stage, "signature": sig,
                    "detail": f"worker exit status {rc}\n{tail}"})
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith("STAGE cpu-result "):
                    cpu_result = json.loads(text[len("STAGE cpu-result "):])
                    cpu_result["gpu"] = []
                elif text.startswith("STAGE gpu-result "):
                    cpu_result["gpu"].append(json.loads(text[len("STAGE gpu-result "):]))
                elif text.startswith("STAGE "):
                    last_stage = text[6:]
                    deadline = max(deadline, time.monotonic() + timeout / 2)
                elif text.startswith("RESULT "):
                    return json.loads(text[7:])


def _after_cpu(cpu_result: Optional[dict], failure: dict) -> dict:
    """A worker death or timeout in the GPU compile, after the CPU part
    finished: the CPU verdict stays, the failure becomes the GPU verdict."""
    if cpu_result is None:
        return failure
    res = dict(cpu_result)
    res["gpu"] = list(res.get("gpu", [])) + [{**failure, "target": failure["stage"].split()[-1]}]
    return res


def _crash_sig(tail: str, rc, stage: str) -> str:
    m = re.search(r"Assertion `(.*)' failed", tail)
    frames = re.findall(r"#\d+ 0x[0-9a-f]+ ((?:mlir::tile::|\(anonymous namespace\)::)[^\n(]+)", tail)
    where = frames[0].strip() if frames else ""
    py = re.findall(r'File "([^"]+)", line \d+ in (\w+)', tail)
    pyw = f" (python {os.path.basename(py[0][0])}:{py[0][1]})" if py else ""
    if m:
        return f"assert: {m.group(1)[:150]}{' @ ' + where if where else ''}{pyw}"
    sig = -rc if rc and rc < 0 else rc
    name = signal.Signals(sig).name if isinstance(sig, int) and 0 < sig < 65 else str(rc)
    return f"{name}{' @ ' + where if where else ''}{pyw}"


def trace_rerun(prog: Path, gpu: bool, timeout: float, mem_mb: int, dest: Path) -> str:
    """Reruns a program that crashed, hung or ran out of memory with the
    lower trace on (TILELANG_MLIR_TRACE): the last numbered dump is the IR
    after the last pass that finished, i.e. the input of the failing pass;
    it is kept as dest/failing_pass_input.mlir. Returns its file name."""
    trace = dest / "trace"
    env = dict(os.environ, TILELANG_MLIR_TRACE=str(trace), TILELANG_MLIR_DISABLE_CACHE="1")

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    cmd = [sys.executable, str(prog)] + ([] if gpu else ["--no-gpu"])
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            preexec_fn=limits, start_new_session=True)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    dumps = sorted(trace.glob("[0-9]*-*.mlir")) if trace.exists() else []
    if not dumps:
        shutil.rmtree(trace, ignore_errors=True)
        return ""
    shutil.copy(dumps[-1], dest / "failing_pass_input.mlir")
    shutil.rmtree(trace, ignore_errors=True)
    return dumps[-1].name


# ---------------------------------------------------------------------------
# Campaign
# ---------------------------------------------------------------------------


def _verdicts(res: dict) -> List[Tuple[str, str, dict]]:
    """(verdict, signature, record) of the CPU part and of the GPU part."""
    out = [(res["verdict"], res.get("signature", ""), res)]
    for g in res.get("gpu", []):
        out.append(("GPU_" + g["verdict"], f"{g.get('target')}: {g.get('signature', '')}", g))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/random-programs"))
    ap.add_argument("--timeout", type=float, default=120, help="seconds per program")
    ap.add_argument("--mem-mb", type=int, default=4000)
    ap.add_argument("--families", help="comma-separated subset of " + ",".join(FAMILIES))
    ap.add_argument("--no-gpu-compile", action="store_true")
    ap.add_argument("--all-gpu-targets", action="store_true",
                    help="compile every program for every GPU target (default: one, by seed)")
    ap.add_argument("--out-of-range", action="store_true",
                    help="convert: include float values outside the integer range "
                         "(expected: saturation, NaN -> 0)")
    ap.add_argument("--all-convert-pairs", action="store_true",
                    help="one convert program per (src, dst) dtype pair, then --count random")
    ap.add_argument("--budget-s", type=float, default=0)
    ap.add_argument("--snapshot", action="store_true",
                    help="run a copy of build/python_packages kept in OUT/pkg (stable while "
                         "the tree is rebuilt; a later chunk with the same --out reuses it)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main()

    fams = args.families.split(",") if args.families else None
    out = args.out
    if args.snapshot:
        pkg = out / "pkg"
        if not pkg.exists():
            out.mkdir(parents=True, exist_ok=True)
            shutil.copytree(ROOT / "build" / "python_packages", pkg, symlinks=False)
            from tile_opt_fuzz import tree_state
            (out / "tree.json").write_text(
                json.dumps(tree_state(str(ROOT / "build" / "python_packages")), indent=1))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(pkg)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    (out / "programs").mkdir(parents=True, exist_ok=True)
    (out / "failures").mkdir(exist_ok=True)
    spath = out / "summary.json"
    summary = json.loads(spath.read_text()) if spath.exists() else {
        "programs": 0, "counts": {}, "by_family": {}, "signatures": {}, "diagnostics": {},
        "chunks": []}
    if fams:
        unknown = [f for f in fams if f not in FAMILIES]
        if unknown:
            ap.error(f"unknown families {unknown}; known: {', '.join(FAMILIES)}")
    worker = Worker(args.mem_mb, out)
    gpu = not args.no_gpu_compile
    t0 = time.monotonic()
    # A program that must work: when it does not, the compiler (or a
    # snapshot of a half-rebuilt tree) is broken and every program would
    # fail the same way.
    smoke = Gen(random.Random(0), False, False).copy_smoke()
    spath_smoke = out / "programs" / "smoke.py"
    spath_smoke.write_text(smoke.source(0, 0, 1))
    res = worker.run(spath_smoke, False, args.timeout)
    if res["verdict"] != "OK":
        summary["smoke_failure"] = res
        spath.write_text(json.dumps(summary, indent=1, sort_keys=True))
        worker.stop()
        print(f"the smoke program {spath_smoke} fails ({res['verdict']}: "
              f"{res.get('signature')}): the compiler is broken, nothing fuzzed\n"
              f"{res.get('detail', '')[:2000]}", flush=True)
        return 2
    jobs: List[Tuple[int, Program]] = []
    if args.all_convert_pairs:
        for k, (s, d) in enumerate((s, d) for s in ALL_DTYPES for d in ALL_DTYPES):
            g = Gen(random.Random(f"{args.seed}:pair:{s}:{d}"), args.out_of_range, gpu)
            jobs.append((-1 - k, g.convert((s, d))))
    done = 0

    def save():
        tmp = spath.with_suffix(".tmp")
        tmp.write_text(json.dumps(summary, indent=1, sort_keys=True))
        tmp.replace(spath)

    def programs():
        yield from jobs
        for i in range(args.start, args.start + args.count):
            yield i, generate(args.seed, i, args.out_of_range, gpu, fams)

    try:
        for index, prog in programs():
            src = prog.source(args.seed, index, input_seed(args.seed, index), args.all_gpu_targets)
            path = out / "programs" / f"p{index}.py"
            path.write_text(src)
            t1 = time.monotonic()
            res = worker.run(path, gpu, args.timeout)
            res["seconds"] = round(time.monotonic() - t1, 2)
            summary["programs"] += 1
            if res["seconds"] > 10 and len(summary.setdefault("slow", [])) < 200:
                keep = out / "slow" / f"p{index}.py"
                keep.parent.mkdir(exist_ok=True)
                shutil.copy(path, keep)
                summary["slow"].append({"seconds": res["seconds"], "file": str(keep),
                                        "desc": prog.desc})
            done += 1
            fam = summary["by_family"].setdefault(prog.family, {})
            failed_here = False
            for verdict, sig, rec in _verdicts(res):
                summary["counts"][verdict] = summary["counts"].get(verdict, 0) + 1
                fam[verdict] = fam.get(verdict, 0) + 1
                if verdict.endswith("DIAGNOSTIC"):
                    key = f"{verdict} {sig}"
                    d = summary["diagnostics"].setdefault(key, {"count": 0, "examples": []})
                    d["count"] += 1
                    if len(d["examples"]) < 3:
                        keep = out / "diagnostics" / f"p{index}.py"
                        keep.parent.mkdir(exist_ok=True)
                        shutil.copy(path, keep)
                        d["examples"].append({"file": str(keep), "desc": prog.desc,
                                              "detail": rec.get("detail", "")[:600]})
                if verdict not in FAILURES:
                    continue
                failed_here = True
                full = f"{verdict} {prog.family}: {sig}"
                entry = summary["signatures"].get(full)
                if entry is None:
                    h = hashlib.sha1(full.encode()).hexdigest()[:10]
                    d = out / "failures" / f"{verdict}_{prog.family}_{h}"
                    d.mkdir(parents=True, exist_ok=True)
                    shutil.copy(path, d / "prog.py")
                    (d / "result.json").write_text(json.dumps(res, indent=1))
                    entry = summary["signatures"][full] = {
                        "verdict": verdict, "family": prog.family, "count": 0, "dir": str(d),
                        "examples": [], "first_desc": prog.desc,
                        "detail": (rec.get("detail") or "")[:1500]}
                    if verdict.split("_")[-1] in ("CRASH", "TIMEOUT", "MEMORY"):
                        last = trace_rerun(d / "prog.py", verdict.startswith("GPU"),
                                           args.timeout, args.mem_mb, d)
                        entry["after_pass"] = last
                        if last:
                            entry["failing_pass_input"] = str(d / "failing_pass_input.mlir")
                    print(f"NEW {full}\n    {d}/prog.py  ({prog.desc})"
                          f"{'  [after ' + entry['after_pass'] + ']' if entry.get('after_pass') else ''}",
                          flush=True)
                entry["count"] += 1
                if len(entry["examples"]) < 8:
                    ex = out / "failures" / Path(entry["dir"]).name / f"p{index}.py"
                    if not ex.exists() and index != -999:
                        shutil.copy(path, ex)
                    entry["examples"].append(prog.desc)
            if not failed_here:
                path.unlink()
            if args.verbose:
                print(f"[{index}] {prog.family}: cpu {res['verdict']}"
                      f"{' / gpu ' + ','.join(g['verdict'] for g in res.get('gpu', []))} "
                      f"({res['seconds']} s) {prog.desc[:100]}", flush=True)
            if done % 5 == 0:
                save()
            if args.budget_s and time.monotonic() - t0 > args.budget_s:
                print(f"time budget reached after {done} programs", flush=True)
                break
    finally:
        worker.stop()
        summary["chunks"].append({"seed": args.seed, "start": args.start, "done": done,
                                  "seconds": round(time.monotonic() - t0)})
        save()
    c = summary["counts"]
    parts = " ".join(f"{k}={v}" for k, v in sorted(c.items()))
    nfail = sum(v for k, v in c.items() if k in FAILURES)
    print(f"random-programs: {summary['programs']} programs: {parts}; "
          f"{len(summary['signatures'])} distinct failure signatures ({nfail} failures); "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
