"""
Layouts, swizzles and the layout pictures
=========================================

A fragment is a tile held in the registers of a block's threads; its
*layout* says which thread and which register hold each element. Shared
buffers get a *swizzle*: an XOR of the column's 16-byte chunk with the row,
so that the rows a warp reads land in different banks. Layout inference
(``tile-layout-inference``) chooses both from the operations that touch a
buffer: a ``T.gemm`` accumulator gets the tensor core's layout (mma.sync on
sm_80, wgmma on sm_90a), and the other fragments follow from it.

``tl.tools`` shows what was chosen, for a kernel compiled for a CUDA target
(no GPU needed): ``allocations`` lists the buffers, ``layout_text`` prints
one as a table and ``plot_layout`` draws it with matplotlib.
``scripts/layout_pictures.py`` draws the pictures of the design pages.
Everything here runs without a GPU.
"""

import io

import matplotlib.pyplot as plt

import tilelang_mlir as tl
import tilelang_mlir.language as T


def show(fig):
    """Shows a Figure that plot_layout returned (it draws off pyplot, so
    that it never opens a window) as a pyplot image on this page."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    buf.seek(0)
    image = plt.imread(buf)
    plt.figure(figsize=(image.shape[1] / 100, image.shape[0] / 100), dpi=100)
    plt.imshow(image)
    plt.axis("off")


def matmul(M, N, K, block_M, block_N, block_K, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# %%
# The buffers and their layouts
# -----------------------------
#
# A small tile (32 x 32, one warp) compiled for sm_80: the accumulator gets
# mma.sync's layout.

kernel = tl.compile(matmul(256, 256, 256, 32, 32, 32, threads=32), out_idx=[2],
                    target="cuda:sm_80")
for a in tl.tools.allocations(kernel):
    print(a.index, a.scope, a)

# %%
# ``layout_text`` prints ``T<thread>:R<register>`` for each element of the
# accumulator: the quad pattern of mma.sync, 8 columns a group.

acc = next(a.index for a in tl.tools.allocations(kernel) if a.scope == "fragment")
print(tl.tools.layout_text(kernel, acc, region=(slice(0, 8), slice(0, 16))))

# %%
# The same as a picture, colored by thread:

show(tl.tools.plot_layout(kernel, acc, title="32x32 float32 accumulator, sm_80, one warp"))

# %%
# A shared buffer's picture shows where its elements land after the
# swizzle: here each element is colored by its 16-byte chunk, so the XOR
# pattern of the B tile is visible.

shared = [a.index for a in tl.tools.allocations(kernel) if a.scope == "shared"]
show(tl.tools.plot_layout(kernel, shared[1], color_by="chunk",
                          title="B tile (32x32 float16), swizzled"))

# %%
# On Hopper
# ---------
#
# For sm_90a the gemm becomes a wgmma: the accumulator of a 64-row
# warpgroup tile puts warp w on rows 16w..16w+15. ``pass_configs=
# {"tl.layout_plot_dir": folder}`` writes one picture per buffer of a
# compile; ``tile-opt --pass-pipeline='builtin.module(func.func(
# tile-layout-inference,tile-print-layouts))'`` prints the same tables from
# tile IR.

hopper = tl.compile(matmul(256, 256, 256, 64, 64, 32), out_idx=[2], target="cuda:sm_90a")
acc = next(a.index for a in tl.tools.allocations(hopper) if a.scope == "fragment")
show(tl.tools.plot_layout(hopper, acc, title="64x64 accumulator, sm_90a (wgmma)"))
