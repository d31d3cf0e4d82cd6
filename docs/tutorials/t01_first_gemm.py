"""
A first GEMM
============

C = A @ B as a tile program: each block of threads computes one
``block_M x block_N`` tile of C, copying tiles of A and B into shared
memory and accumulating their product in a register *fragment*. You say
where the data lives and which tile operation runs on it; the compiler
chooses the thread mapping, the layouts and the instructions.

This page runs on the CPU target when the site is built. On a machine with
an NVIDIA GPU, run the same script there at full size::

    TUTORIAL_TARGET=cuda TUTORIAL_SIZE=4096 python docs/tutorials/t01_first_gemm.py

(``make demo`` runs the seed GEMM of ``examples/gemm/gemm.py`` the same way.)
"""

import os

import numpy as np

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.testing import to_device, to_numpy

TARGET = os.environ.get("TUTORIAL_TARGET", "cpu")
SIZE = int(os.environ.get("TUTORIAL_SIZE", "256"))

# %%
# The tile program
# ----------------
#
# ``T.Kernel`` launches a grid of blocks (here one per output tile) of 128
# threads. ``T.alloc_shared`` and ``T.alloc_fragment`` allocate a tile in
# shared memory and in the registers of the block's threads. ``T.Pipelined``
# is a loop over K whose copies the compiler overlaps with the gemms of
# earlier iterations (``num_stages`` buffers). ``T.copy`` moves a tile
# between any two scopes; ``A[by * block_M, k * block_K]`` names where the
# tile starts, the destination's shape says how much.


def matmul(M, N, K, block_M=64, block_N=64, block_K=32, dtype="float16",
           accum_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# %%
# Compile and run
# ---------------
#
# ``tl.compile`` returns a kernel. ``out_idx=[2]`` makes C an output: the
# kernel allocates it and returns it, so the call takes only A and B. NumPy
# arrays or torch tensors go in; the same kind comes out.

kernel = tl.compile(matmul(SIZE, SIZE, SIZE), out_idx=[2], target=TARGET)
print(kernel.target)

rng = np.random.default_rng(0)
a_np = rng.standard_normal((SIZE, SIZE)).astype(np.float16)
b_np = rng.standard_normal((SIZE, SIZE)).astype(np.float16)
# (to_device: the array itself on the CPU, a torch tensor on the kernel's GPU)
a, b = to_device(a_np, kernel.device), to_device(b_np, kernel.device)
c = to_numpy(kernel(a, b)).astype(np.float32)
ref = a_np.astype(np.float32) @ b_np.astype(np.float32)
print("max abs error:", float(np.abs(c - ref).max()))
np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-1)

# %%
# The profiler times a call: the median in milliseconds (CUDA events with
# the L2 flushed on the GPU; wall time on the CPU, where it says little).

print(f"{kernel.get_profiler().do_bench(a, b):.3f} ms")

# %%
# What the compiler made
# ----------------------
#
# ``kernel.stages`` names the IR kept after each group of passes and
# ``kernel.mlir(stage)`` shows it; the first stage is the tile IR the
# program emitted, in the ``tile`` dialect:

print(kernel.stages)
print("\n".join(kernel.mlir(kernel.stages[0]).splitlines()[:30]))

# %%
# For a GPU target the compiler needs no GPU: compiling for ``cuda:sm_90a``
# (Hopper) gives the PTX and ptxas's register report. Launching it here
# would raise ``NoCUDADevice``. On sm_90a the same program becomes a
# warp-specialized kernel: a TMA producer warpgroup feeding ``wgmma``
# consumers.

hopper = tl.compile(matmul(1024, 1024, 1024, 128, 128, 64), out_idx=[2],
                    target="cuda:sm_90a")
ptx = hopper.get_source()
print(sorted({line.split()[0] for line in ptx.splitlines() if "wgmma.mma_async" in line}))
print(hopper.ptxas_info)
