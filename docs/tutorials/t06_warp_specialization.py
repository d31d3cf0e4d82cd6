"""
Explicit warp specialization: roles and barriers
================================================

On Hopper the compiler warp-specializes a pipelined loop by itself (a TMA
producer warpgroup and consumer warpgroups). A kernel can also give its
warpgroups *roles* itself: a branch on the thread index (``if tx < 128:`` /
``elif`` / ``else``) or ``with T.ws(i):`` makes those threads a role; tile
operations inside a role run on its threads only, and the roles meet at
barriers the program allocates (``T.alloc_barrier``), arrives on
(``T.barrier_arrive``, or a TMA copy's byte count with ``T.tma_copy(...,
barrier=)``) and waits for (``T.barrier_wait(bar, parity)``).
``T.set_max_nreg`` moves registers from the producer to the consumers.

This is how the fastest MLA decode kernel of the library is written. The
CPU cannot run roles (they are an sm_90a feature), so this page compiles
for ``cuda:sm_90a`` and reads the IR and PTX. On an H100 or H200::

    python examples/attention/mla_decode.py --target cuda --variant roles
"""

import re

import tilelang_mlir as tl
import tilelang_mlir.language as T

# %%
# A GEMM in three roles
# ---------------------
#
# Warpgroup 2 loads tiles of A and B with TMA; warpgroups 0 and 1 each
# multiply one half of the N tile. Two barriers: ``full`` (the tiles have
# landed: the producer's 128 arrivals plus the TMA bytes) and ``empty``
# (both consumers are done with them: 256 arrivals). The loop is
# ``T.serial``: the program itself is the schedule, so the automatic
# pipeliner and warp specialization step aside.


def gemm_roles(M, N, K, block_M=64, block_N=128, block_K=64):
    half = block_N // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=384) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_lo = T.alloc_shared((block_K, half), "float16")
            B_hi = T.alloc_shared((block_K, half), "float16")
            C_lo = T.alloc_fragment((block_M, half), "float32")
            C_hi = T.alloc_fragment((block_M, half), "float32")
            full = T.alloc_barrier(arrive_count=128)
            empty = T.alloc_barrier(arrive_count=256)
            tx = T.get_thread_binding()
            if tx < 128:                      # consumer: the left half
                T.set_max_nreg(232, 1)
                T.clear(C_lo)
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(full, ko % 2)
                    T.gemm(A_s, B_lo, C_lo)
                    T.barrier_arrive(empty)
                T.copy(C_lo, C[by * block_M, bx * block_N])
            elif tx < 256:                    # consumer: the right half
                T.set_max_nreg(232, 1)
                T.clear(C_hi)
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(full, ko % 2)
                    T.gemm(A_s, B_hi, C_hi)
                    T.barrier_arrive(empty)
                T.copy(C_hi, C[by * block_M, bx * block_N + half])
            else:                             # producer
                T.set_max_nreg(40, 0)
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(empty, (ko % 2) ^ 1)
                    T.tma_copy(A[by * block_M, ko * block_K], A_s, barrier=full)
                    T.tma_copy(B[ko * block_K, bx * block_N], B_lo, barrier=full)
                    T.tma_copy(B[ko * block_K, bx * block_N + half], B_hi, barrier=full)
                    T.barrier_arrive(full)

    return main


kernel = tl.compile(gemm_roles(512, 512, 512), out_idx=[2], target="cuda:sm_90a")

# %%
# In the tile IR each branch is a ``tile.role`` over a range of threads:

tile_ir = kernel.mlir("tile")
print(re.findall(r"tile\.role threads\(\d+ to \d+\)", tile_ir))
print([line.strip() for line in tile_ir.splitlines() if "alloc_barrier" in line])

# %%
# In the PTX: the register moves, the mbarriers, the TMA loads and the
# wgmma of each consumer warpgroup (one m64n64 instruction shape: each
# role's gemm runs on its own warpgroup).

ptx = kernel.get_source()
print([" ".join(m.split()) for m in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+\d+", ptx)])
for what in ("mbarrier.init", "mbarrier.try_wait", "cp.async.bulk.tensor"):
    print(f"{what:22s}", sum(what in line for line in ptx.splitlines()), "lines")
print(sorted({line.split()[0] for line in ptx.splitlines() if "wgmma.mma_async" in line}))

# %%
# The compiler checks a role program: a fragment used in two roles, a tile
# operation under a thread condition that is not a role, a barrier waited on
# that nothing arrives on, arrive counts the arriving roles cannot add up
# to, and register budgets over the register file are compile errors at the
# user's line. For instance, a consumer that waits on a barrier nobody
# arrives on:


def never_arrives(M=128, N=128, K=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((M, K), "float16")
            bar = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.barrier_wait(bar, 0)
            else:
                T.copy(A[0, 0], A_s)

    return main


try:
    tl.compile(never_arrives(), target="cuda:sm_90a")
except tl.TileLangError as e:
    print(str(e).splitlines()[0])

# %%
# MLA decode with roles
# ---------------------
#
# ``tilelang_mlir.kernels.attention.mla_decode_roles`` is DeepSeek's MLA
# decode in this style: a producer warpgroup loads 64-token KV tiles into a
# ring; warpgroup 0 computes the scores and the online softmax and hands P
# to warpgroup 1 through shared memory, so the next tile's scores run under
# this tile's P V. Its roles and barriers:

from tilelang_mlir.kernels.attention.mla_decode_roles import mla_decode_roles_split  # noqa: E402

mla = tl.compile(mla_decode_roles_split(batch=4, heads=64, num_pages=4 * 64, max_pages=64,
                                        num_splits=1, direct=True),
                 out_idx=[5, 6], target="cuda:sm_90a")
mla_ir = mla.mlir("tile")
print(re.findall(r"tile\.role threads\(\d+ to \d+\)", mla_ir))
print(sum("tile.alloc_barrier" in line for line in mla_ir.splitlines()), "barrier allocations")
print([" ".join(m.split()) for m in
       re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+\d+", mla.get_source())])
print(mla.ptxas_info.splitlines()[-2])
