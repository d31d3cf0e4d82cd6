#!/usr/bin/env python3
"""Where the MLA decode split kernel's time goes (issue 6): a copy of the
example's split kernel (scores="split", Hopper tiles) whole and with one
part cut out at a time: the softmax (S straight to P), the softmax's
rescale of O, the P V gemm, the score gemms. Timing only: the cut copies
compute nonsense. Batch 128, cache 8192, 4 splits.

    TILELANG_MLIR_AOT_PREPARE=1 TILELANG_MLIR_CUDA_ARCH=sm_90a \
        TILELANG_MLIR_CACHE_DIR=$PWD/.gpu-cache-p scripts/investigations/mla_parts_probe.py   (here: compiles)
    TILELANG_MLIR_OFFLINE=1 TILELANG_MLIR_CACHE_DIR=... scripts/investigations/mla_parts_probe.py   (GPU)
"""
import math
import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels.attention import mla_decode as mla
from tilelang_mlir.kernels.attention.online_softmax import softmax_step, softmax_finish

DV, DPE = 512, 64
FullRow, FullCol = T.GemmWarpPolicy.FullRow, T.GemmWarpPolicy.FullCol


def variant(batch, heads, num_pages, max_pages, num_splits, cut, page_size=64, block_H=64,
            block_N=64, num_stages=2, threads=256, dtype="float16"):
    scale = math.log2(math.e) / math.sqrt(DV + DPE)
    accum = "float32"

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, DV), dtype), Q_pe: T.Tensor((batch, heads, DPE), dtype),
             KV: T.Tensor((num_pages, page_size, DV + DPE), dtype),
             block_table: T.Tensor((batch, max_pages), "int32"),
             cache_seqlens: T.Tensor((batch,), "int32"),
             O_part: T.Tensor((batch, num_splits, heads, DV), accum),
             LSE_part: T.Tensor((batch, num_splits, heads), accum)):
        with T.Kernel(batch, heads // block_H, num_splits, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_H, DV), dtype)
            Qpe_shared = T.alloc_shared((block_H, DPE), dtype)
            KV_shared = T.alloc_shared((block_N, DV), dtype)
            Kpe_shared = T.alloc_shared((block_N, DPE), dtype)
            P = T.alloc_shared((block_H, block_N), dtype)
            S = T.alloc_fragment((block_H, block_N), accum)
            acc_o = T.alloc_fragment((block_H, DV), accum)
            m = T.alloc_fragment((block_H,), accum)
            m_prev = T.alloc_fragment((block_H,), accum)
            alpha = T.alloc_fragment((block_H,), accum)
            l = T.alloc_fragment((block_H,), accum)
            l_tile = T.alloc_fragment((block_H,), accum)
            lse = T.alloc_fragment((block_H,), accum)
            seqlen = cache_seqlens[bx] + 0
            n_blocks = T.ceildiv(seqlen, block_N)
            per_split = T.ceildiv(n_blocks, num_splits)
            first = bz * per_split
            n_tiles = T.max(T.min(per_split, n_blocks - first), 0)
            T.copy(Q[bx, by * block_H, 0], Q_shared)
            T.copy(Q_pe[bx, by * block_H, 0], Qpe_shared)
            T.clear(acc_o)
            T.clear(l)
            T.clear(S)
            T.fill(m, -T.infinity(accum))
            for k in T.Pipelined(n_tiles, num_stages=num_stages):
                token = (first + k) * block_N
                page = block_table[bx, token // page_size] + 0
                T.copy(KV[page, token % page_size, 0], KV_shared)
                T.copy(KV[page, token % page_size, DV], Kpe_shared)
                if cut != "s":
                    T.clear(S)
                    T.gemm(Q_shared, KV_shared, S, transpose_B=True, policy=FullRow)
                    T.gemm(Qpe_shared, Kpe_shared, S, transpose_B=True, policy=FullRow)
                if cut == "softmax":
                    pass
                elif cut == "rescale":  # the softmax without the rescale of O
                    T.copy(m, m_prev)
                    T.reduce_max(S, m, dim=1, clear=False)
                    for i, j in T.Parallel(block_H, block_N):
                        S[i, j] = T.exp2(S[i, j] * scale - m[i] * scale)
                    T.reduce_sum(S, l_tile, dim=1)
                    for i in T.Parallel(block_H):
                        l[i] = l[i] + l_tile[i]
                else:
                    softmax_step(S, m, m_prev, alpha, l, l_tile, acc_o, block_H, block_N, DV, scale)
                T.copy(S, P)
                if cut != "pv":
                    T.gemm(P, KV_shared, acc_o, policy=FullCol)
            softmax_finish(acc_o, m, l, lse, block_H, DV, scale)
            T.copy(acc_o, O_part[bx, bz, by * block_H, 0])
            T.copy(lse, LSE_part[bx, bz, by * block_H])
    return main


B, H, CACHE, SPLITS = 128, 128, 8192, 4
pages = CACHE // 64
kernels = {cut: tl.compile(variant(B, H, B * pages, pages, SPLITS, cut), out_idx=[5, 6],
                           target="cuda")
           for cut in ("none", "softmax", "rescale", "pv", "s")}
q, q_pe, kv, table, lens = mla.make_inputs(B, H, [CACHE] * B, device="cuda", seed=1)
flop = 2 * B * H * CACHE * (DV + DPE + DV)
for cut, k in kernels.items():
    t = k.time(q, q_pe, kv, table, lens, repeat=30)
    print(f"cut {cut:8} {t * 1e6:8.1f} us  {flop / t / 1e12:6.1f} TFLOP/s-equivalent")
