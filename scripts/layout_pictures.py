"""Draws the fragment-layout pictures of docs/pictures/ (tl.tools.plot_layout;
needs matplotlib, no GPU):

    .venv/bin/python scripts/layout_pictures.py [out_dir]

- gemm_sm90a_accumulator.png: the 128x128 float32 accumulator of the seed
  GEMM (tilelang_mlir.kernels.gemm, matmul(1024, 1024, 1024, 128, 128, 32)) for
  cuda:sm_90a: the wgmma layout, warp w of the warpgroup on rows 16w..16w+15
  of each 64-row half.
- fullcol_sm90a_accumulator.png: an MLA-style FullCol split, a 64x512
  accumulator over 256 threads (two warpgroups side by side along N: threads
  0-127 hold columns 0-255, threads 128-255 columns 256-511).
"""

import os
import sys

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels import gemm

HERE = os.path.dirname(os.path.abspath(__file__))


def full_col(M=64, N=512, K=64, threads=256):
    """Q K^T of an MLA decode step, in shape: one 64-row block of queries
    against 512 keys, the warps side by side along the keys."""

    @T.prim_func
    def main(Q: T.Tensor((M, K), "float16"), K_: T.Tensor((K, N), "float16"),
             S: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            Q_shared = T.alloc_shared((M, K), "float16")
            K_shared = T.alloc_shared((K, N), "float16")
            S_local = T.alloc_fragment((M, N), "float32")
            T.copy(Q[0, 0], Q_shared)
            T.copy(K_[0, 0], K_shared)
            T.gemm(Q_shared, K_shared, S_local, policy=T.GemmWarpPolicy.FullCol,
                   clear_accum=True)
            T.copy(S_local, S[0, 0])

    return main


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)

    def accumulator(kernel):
        return next(a.index for a in tl.tools.allocations(kernel) if a.scope == "fragment")

    seed = tl.compile(gemm.matmul(1024, 1024, 1024, 128, 128, 32), target="cuda:sm_90a")
    path = os.path.join(out_dir, "gemm_sm90a_accumulator.png")
    tl.tools.plot_layout(seed, accumulator(seed), path, title=(
        "C_local of the seed GEMM (128x128x32 tile, cuda:sm_90a, wgmma 64xN128): 128x128xf32, "
        "128 threads, 128 registers/thread\ncolor: warp, lighter to darker over its lanes "
        "(lane 4 * (row mod 8) + (col mod 8) / 2)"))
    print("wrote", path)

    split = tl.compile(full_col(), target="cuda:sm_90a")
    path = os.path.join(out_dir, "fullcol_sm90a_accumulator.png")
    tl.tools.plot_layout(split, accumulator(split), path, title=(
        "S_local of a FullCol gemm (cuda:sm_90a, wgmma grid 1x2): 64x512xf32, 256 threads, "
        "128 registers/thread\ncolor: warp, lighter to darker over its lanes; thick line "
        "between the two warpgroups"))
    print("wrote", path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "docs", "pictures"))
