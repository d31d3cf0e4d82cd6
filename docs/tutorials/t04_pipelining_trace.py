"""
Pipelining and the lower trace
==============================

``T.Pipelined(n, num_stages=s)`` is a loop whose copies run ahead of its
computation: the pipeliner (``tile-pipeline``) gives every shared buffer
the loop writes ``s`` slots, issues the copies of iteration k + s - 1 while
iteration k computes, and on NVIDIA turns them into asynchronous copies
(cp.async groups, or TMA with a producer warpgroup on sm_90a). The *lower
trace* shows what each pass did: ``pass_configs={"tl.trace_dir": folder}``
(or ``TILELANG_MLIR_TRACE=folder``) writes the IR after every pass, and
``tl.tools.trace_report`` shows the trace as one diff per pass.

Runs without a GPU (it compiles for sm_80).
"""

import os
import tempfile

import tilelang_mlir as tl
import tilelang_mlir.language as T


def matmul(M, N, K, block=64, block_K=32, stages=3):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block), "float16")
            C_local = T.alloc_fragment((block, block), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block, bx * block])

    return main


# %%
# Stages of a compile
# -------------------
#
# A kernel keeps the IR after each group of passes (``kernel.stages``).
# After ``pipelined`` the loop has a prologue that fills the slots, and each
# shared buffer has ``num_stages`` slots (a leading dimension of 3):

trace = tempfile.mkdtemp(prefix="trace-")
kernel = tl.compile(matmul(512, 512, 512), out_idx=[2], target="cuda:sm_80",
                    pass_configs={"tl.trace_dir": trace})
print(kernel.stages)
print([line.strip() for line in kernel.mlir("pipelined").splitlines()
       if "alloc_shared" in line])

# %%
# The trace
# ---------
#
# One file per pass, numbered, in the folder:

files = sorted(os.listdir(trace))
print(len(files), "files;", files[:6], "...")

# %%
# ``trace_report`` diffs every pass against the step before it (here only
# the first lines of the report; ``html_path=`` writes all of it as one
# page, and ``python -m tilelang_mlir.tools.trace DIR --html trace.html``
# does the same from a shell).

report = tl.tools.trace_report(trace, max_lines=12)
print("\n".join(report.splitlines()[:60]))

# %%
# A pass that fails names itself in the error, with the file that holds its
# input IR, so the failing step can be rerun alone with ``tile-opt``.
#
# On sm_80 the pipeline's copies are ``cp.async`` groups; the PTX waits for
# all but ``num_stages - 2`` of them before each step's gemm:

ptx = kernel.get_source()
print(sorted({line.split()[0].rstrip(";") for line in ptx.splitlines()
              if "cp.async" in line}))
