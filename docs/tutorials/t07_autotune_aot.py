"""
Autotuning and ahead-of-time kernels
====================================

``@tl.autotune(configs=[...])`` on a kernel factory compiles every config,
checks each against a reference on random inputs, times the ones that pass
and returns the fastest; the winner is cached on disk, so a later call (in
any process) loads it without tuning. ``kernel.save(folder)`` writes a
compiled kernel as an artifact (code plus a manifest with sha256 digests)
that ``tl.load(folder)`` runs with only numpy, torch and, for CUDA,
cuda-bindings: no compiler, no MLIR. That is how kernels are compiled on a
machine without a GPU and run on one without the compiler.

Runs on the CPU here (timings on the CPU say little). On a GPU machine,
the GEMM example tunes over the Hopper space::

    python examples/gemm/gemm.py --target cuda --autotune
"""

import os
import tempfile

import numpy as np

import tilelang_mlir as tl
import tilelang_mlir.language as T

TARGET = os.environ.get("TUTORIAL_TARGET", "cpu")
# On a GPU a float32 ``T.gemm`` runs on the tensor cores in TF32 (10 bits of
# mantissa), as TileLang's does: its results are about 1e-3 off float32's.
TOL = 1e-4 if TARGET == "cpu" else 2e-2

# %%
# Tuning
# ------
#
# The factory's tile sizes are the knobs (``@tl.autotune(...)`` above the
# factory does the same as the call below). ``ref_prog`` is the reference
# every config must match. Configs compile in worker processes by default
# (``max_workers``; started by forkserver, so a tuning *script* needs
# ``if __name__ == "__main__":``); this page compiles in its own process
# (``max_workers=1``).

configs = [dict(block_M=m, block_N=n) for m in (32, 64) for n in (32, 64)]


def gemm(M, N, K, block_M=64, block_N=64, block_K=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float32")
            B_s = T.alloc_shared((block_K, block_N), "float32")
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


matmul = tl.autotune(configs=configs, ref_prog=lambda a, b: a @ b, rtol=TOL, atol=TOL,
                     warmup=1, rep=3, max_workers=1, out_idx=[2], target=TARGET,
                     cache=False)(gemm)
kernel = matmul(128, 128, 128)
result = kernel.autotune_result
print("best:", result.best_config, f"{result.best_latency:.3f} ms")
for t in result.timings:
    print(t["config"], f"{t['latency']:.3f} ms")

# %%
# Saving and loading
# ------------------
#
# ``kernel.save`` writes the artifact; a CPU kernel is a shared library
# linked by the C compiler (``$CC``/``cc``, or ``python -m ziglang cc``),
# a CUDA kernel its cubin and PTX.

folder = os.path.join(tempfile.mkdtemp(), "gemm_kernel")
kernel.save(folder)
print(sorted(os.listdir(folder)))

loaded = tl.load(folder)
a = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)
b = np.random.default_rng(1).standard_normal((128, 128)).astype(np.float32)
if TARGET == "cpu":
    out = loaded(a, b)  # a CPU kernel takes NumPy arrays
else:
    import torch  # a CUDA kernel takes torch tensors on the GPU

    out = loaded(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()).cpu().numpy()
np.testing.assert_allclose(out, a @ b, rtol=TOL, atol=TOL)
print("the loaded kernel matches NumPy")

# %%
# Compiling for a GPU you do not have
# -----------------------------------
#
# A CUDA target compiles without a GPU; its artifact holds the cubin. On the
# GPU machine ``tl.load(folder)`` runs it (with ``cuda-bindings``
# installed, no compiler). ``TILELANG_MLIR_AOT_PREPARE=1`` with a kernel
# cache folder does the same for every kernel a script compiles
# (``scripts/gpu_check.sh prepare``).

gpu_folder = os.path.join(tempfile.mkdtemp(), "gemm_sm90a")
tl.compile(gemm(1024, 1024, 1024, 128, 128, 32), out_idx=[2],
           target="cuda:sm_90a").save(gpu_folder)
print(sorted(os.listdir(gpu_folder)))
