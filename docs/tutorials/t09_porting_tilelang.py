"""
Porting a TileLang program
==========================

A TileLang program runs unchanged: ``tilelang_mlir.compat`` serves the
``tilelang`` module names over this compiler. ``tilelang.language`` is our
``T`` namespace (TileLang's names and meanings), and ``tilelang.jit``,
``tilelang.compile``, ``PassConfigKey``, ``tilelang.profiler``,
``tilelang.testing``, ``tilelang.autotuner`` and more give TileLang's host
API. What this compiler cannot do (TVM's APIs, CUDA source templates)
raises a clear "not supported by tilelang-mlir" error. The compatibility
page lists what runs of TileLang's own example corpus.

From a shell, a TileLang script runs as is::

    python -m tilelang_mlir.compat example_gemm.py --m 4096

In a process of your own, call ``install()`` before ``import tilelang``.
It refuses to shadow a real TileLang installation unless forced.
"""

import os

import torch

import tilelang_mlir.compat

tilelang_mlir.compat.install()

import tilelang  # noqa: E402  (served by tilelang_mlir.compat)
import tilelang.language as T  # noqa: E402

TARGET = os.environ.get("TUTORIAL_TARGET", "cpu")

# %%
# A TileLang program, as written for TileLang
# -------------------------------------------
#
# ``@tilelang.jit(out_idx=[-1])`` on a kernel factory: calling the factory
# compiles, calling the kernel runs. Nothing below names this project.


@tilelang.jit(out_idx=[-1], target=TARGET)
def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


kernel = matmul(256, 256, 256, 64, 64, 32)
device = "cpu" if TARGET == "cpu" else "cuda"
a = torch.randn(256, 256, dtype=torch.float16, device=device)
b = torch.randn(256, 256, dtype=torch.float16, device=device)
c = kernel(a, b)
torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-1)
print("TileLang's GEMM matches torch on", device)

# %%
# TileLang's pass configs
# -----------------------
#
# ``tilelang.PassConfigKey`` names TileLang's keys. Those this compiler has
# are passed on; the others are translated (``TL_DISABLE_TMA_LOWER`` turns
# off our TMA pipelines), accepted as no-ops, or refused when they ask for
# something we cannot do. The reference's pass-config page has the table.

print(tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER.value)

# %%
# What is not supported says so
# -----------------------------

try:
    from tilelang import tvm  # noqa: F401
except Exception as e:  # noqa: BLE001
    print(type(e).__name__ + ":", str(e).splitlines()[0])

# %%
# Remove the ``tilelang`` modules again (a process that imports a real
# TileLang afterwards gets it).

tilelang_mlir.compat.uninstall()
