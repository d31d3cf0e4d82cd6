"""Correctness (and a rough time) of GEMM variants on the GPU: every operand
major-ness, dtype and tile shape the sm_90a (wgmma) and sm_90 (mma.sync)
paths take. Compiles only where no GPU is present (AOT prepare).

    python scripts/investigations/gemm_variants.py [--quick]
"""

import os
import sys

import numpy as np
import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels import programs as kernels
from tilelang_mlir.runtime.cuda import NoCUDADevice
from tilelang_mlir.runtime.profiler import bench_cuda

TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
         "float8_e4m3": torch.float8_e4m3fn, "int8": torch.int8}

# (arch, M, N, K, block_M, block_N, block_K, threads, stages, dtype, trans_A, trans_B, ws)
# ws: sm_90a's TMA + warp-specialized pipeline (tile-warp-specialize) when
# the loop qualifies; False forces the cp.async pipeline.
CASES = [
    ("sm_90a", 512, 512, 512, 128, 128, 64, 128, 3, "float16", False, False, True),
    ("sm_90a", 512, 512, 512, 128, 128, 64, 128, 3, "float16", False, True, True),
    ("sm_90a", 512, 512, 512, 128, 128, 64, 128, 3, "float16", True, False, True),
    ("sm_90a", 512, 512, 512, 128, 128, 64, 128, 3, "float16", True, True, True),
    ("sm_90a", 512, 512, 512, 128, 256, 64, 256, 3, "bfloat16", False, False, True),
    ("sm_90a", 512, 512, 512, 128, 128, 32, 128, 3, "float16", False, False, True),
    ("sm_90a", 512, 512, 512, 64, 64, 64, 128, 2, "float16", False, False, True),
    ("sm_90a", 384, 320, 200, 128, 128, 64, 128, 2, "float16", False, False, True),
    ("sm_90a", 200, 136, 72, 128, 128, 64, 256, 4, "float16", False, False, True),
    ("sm_90a", 512, 512, 512, 128, 128, 32, 128, 3, "float32", False, True, True),
    ("sm_90a", 512, 512, 512, 128, 128, 128, 128, 3, "float8_e4m3", False, True, True),
    ("sm_90a", 512, 512, 512, 128, 128, 128, 128, 3, "int8", False, True, True),
    ("sm_90a", 512, 512, 512, 128, 128, 64, 128, 3, "float16", False, False, False),
    ("sm_90", 512, 512, 512, 128, 128, 32, 128, 3, "float16", False, False, False),
    ("sm_90", 512, 512, 512, 128, 128, 64, 128, 3, "bfloat16", False, True, False),
    ("sm_90a", 4096, 4096, 4096, 128, 128, 64, 128, 3, "float16", False, False, False),
    ("sm_90a", 4096, 4096, 4096, 128, 128, 64, 128, 4, "float16", False, False, True),
    ("sm_90a", 4096, 4096, 4096, 128, 256, 64, 256, 3, "float16", False, False, True),
    ("sm_90a", 4096, 4096, 4096, 128, 256, 64, 256, 4, "float16", False, False, True),
    ("sm_90a", 8192, 8192, 8192, 128, 256, 64, 256, 4, "float16", False, False, True),
    ("sm_90a", 8192, 8192, 8192, 128, 256, 64, 256, 4, "float16", False, False, "nocluster"),
    ("sm_90a", 8192, 8192, 8192, 128, 256, 64, 256, 3, "float16", False, False, True),
    ("sm_90a", 8192, 8192, 8192, 256, 128, 64, 256, 4, "float16", False, False, True),
    ("sm_90a", 1024, 1024, 1024, 128, 256, 64, 256, 4, "float16", False, False, True),
    ("sm_90a", 1024, 1024, 1024, 128, 128, 64, 128, 4, "float16", True, True, True),
    ("sm_90a", 8192, 8192, 8192, 128, 256, 64, 256, 4, "bfloat16", False, False, True),
]


def main():
    compiled = []
    for case in CASES:
        arch, M, N, K, bm, bn, bk, threads, stages, dtype, ta, tb, ws = case
        acc = "int32" if dtype == "int8" else "float32"
        out = acc if M < 1024 else dtype
        prog = kernels.matmul(M, N, K, bm, bn, bk, trans_A=ta, trans_B=tb, dtype=dtype,
                              accum_dtype=acc, out_dtype=out, num_stages=stages, threads=threads)
        try:
            configs = {"tl.disable_warp_specialized": not ws}
            if ws == "nocluster":
                configs["tl.cluster_size"] = 1
            kernel = tl.compile(prog, out_idx=[2], target=f"cuda:{arch}", pass_configs=configs)
            compiled.append((case, kernel, None))
        except Exception as e:  # noqa: BLE001
            compiled.append((case, None, f"{type(e).__name__}: {str(e).splitlines()[0]}"))
    if not torch.cuda.is_available():
        bad = [c for c in compiled if c[1] is None]
        for case, _, err in bad:
            print("FAILED to compile", case, err)
        print(f"compiled {len(compiled) - len(bad)} of {len(compiled)} variants; no GPU here")
        return
    g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
    print(f"{'arch':7} {'MxNxK':16} {'tile':12} {'thr':>4} {'st':>2} {'dtype':12} {'tA':>2} {'tB':>2}"
          f" {'rel err':>9} {'ms':>8} {'TFLOP/s':>8} path")
    failures = 0
    for case, kernel, err in compiled:
        arch, M, N, K, bm, bn, bk, threads, stages, dtype, ta, tb, ws = case
        head = (f"{arch:7} {f'{M}x{N}x{K}':16} {f'{bm}x{bn}x{bk}':12} {threads:4} {stages:2} "
                f"{dtype:12} {int(ta):2} {int(tb):2}")
        if kernel is None:
            print(head, "compile error:", err)
            failures += 1
            continue
        shape_a = (K, M) if ta else (M, K)
        shape_b = (N, K) if tb else (K, N)
        if dtype == "int8":
            a = torch.randint(-8, 8, shape_a, device="cuda", generator=g, dtype=torch.int8)
            b = torch.randint(-8, 8, shape_b, device="cuda", generator=g, dtype=torch.int8)
        else:
            a = torch.randn(shape_a, device="cuda", generator=g).to(TORCH[dtype])
            b = torch.randn(shape_b, device="cuda", generator=g).to(TORCH[dtype])
        A = a.double().t() if ta else a.double()
        B = b.double().t() if tb else b.double()
        ref = A @ B
        c = kernel(a, b)
        torch.cuda.synchronize()
        rel = ((c.double() - ref).norm() / ref.norm()).item()
        ok = rel < (5e-2 if dtype in ("float8_e4m3",) else 1e-2)
        failures += not ok
        ms = float(np.median(bench_cuda(lambda: kernel(a, b), warmup=3, rep=10, cuda_graph=True)))
        src = kernel.get_source()
        path = "wgmma" if "wgmma.mma_async" in src else "mma.sync"
        path += "+tma+ws" if "cp.async.bulk.tensor" in src else "+cp.async"
        path += "+cluster" if "reqnctapercluster" in src else ""
        extra = ""
        if M >= 4096 and not (ta or tb):
            tms = float(np.median(bench_cuda(lambda: torch.matmul(a, b), warmup=3, rep=10,
                                             cuda_graph=True)))
            extra = f"  torch {2 * M * N * K / tms / 1e9:.1f}"
        print(head, f"{rel:9.2e} {ms:8.3f} {2 * M * N * K / ms / 1e9:8.1f} {path}"
              + ("" if ok else "  WRONG") + extra)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here")
