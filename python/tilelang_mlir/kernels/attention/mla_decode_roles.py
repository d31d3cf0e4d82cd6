"""DeepSeek MLA decode written with explicit warpgroup roles (issue 20).

The same computation as mla_decode.py (paged cache of 576-wide tokens,
`block_H` heads of one sequence and one of `num_splits` shares of its KV
tiles per block, partial O and LSE combined by `mla_decode_combine`), with
the schedule in the program instead of the compiler's:

- warpgroup 2 (the producer, 40 registers) loads each 64-token KV tile of
  the share by TMA into one of `num_stages` slots (`kv_full[s]`, freed by
  both consumers through `kv_free[s]`);
- warpgroup 0 computes the scores S = Q K^T of the tile (the whole 64 x 64
  tile: no exchange of row statistics), runs the online softmax on them,
  hands P and the rescaling alpha to warpgroup 1 through shared memory
  (`p_ready`, freed by `p_free`) and computes its half of O (columns 0-255)
  from P;
- warpgroup 1 rescales its half of O (columns 256-511) by alpha and adds
  P V for it, while warpgroup 0 is already on the next tile's scores.

So the score gemm and softmax of tile k+1 run under the P V of tile k on
the other warpgroup. Offers `mla_decode_roles_split` and `MlaDecodeRoles`
(the split kernel and the combine as one call, as `mla_decode.MlaDecode`).
"""

import math

import tilelang_mlir.language as T

from .mla_decode import DPE, DV, MlaDecode
from .online_softmax import (mask_past_end, softmax_finish, softmax_reset, softmax_state,
                             softmax_step, split_tiles)


def mla_decode_roles_split(batch, heads, num_pages, max_pages, num_splits, page_size=64,
                           block_H=64, block_N=64, num_stages=2, dtype="float16",
                           registers=(232, 232, 40)):
    scale = math.log2(math.e) / math.sqrt(DV + DPE)
    accum = "float32"
    half = DV // 2
    assert page_size % block_N == 0, "a KV tile lies within one page"

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, DV), dtype), Q_pe: T.Tensor((batch, heads, DPE), dtype),
             KV: T.Tensor((num_pages, page_size, DV + DPE), dtype),
             block_table: T.Tensor((batch, max_pages), "int32"),
             cache_seqlens: T.Tensor((batch,), "int32"),
             O_part: T.Tensor((batch, num_splits, heads, DV), accum),
             LSE_part: T.Tensor((batch, num_splits, heads), accum)):
        with T.Kernel(batch, heads // block_H, num_splits, threads=384) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_H, DV), dtype)
            Qpe_shared = T.alloc_shared((block_H, DPE), dtype)
            KV_shared = T.alloc_shared((num_stages, block_N, DV + DPE), dtype)
            P_shared = T.alloc_shared((block_H, block_N), dtype)
            alpha_shared = T.alloc_shared((block_H,), accum)
            inv_l_shared = T.alloc_shared((block_H,), accum)
            S = T.alloc_fragment((block_H, block_N), accum)
            acc_left = T.alloc_fragment((block_H, half), accum)
            acc_right = T.alloc_fragment((block_H, half), accum)
            alpha_right = T.alloc_fragment((block_H,), accum)
            state = softmax_state(block_H)
            kv_full = T.alloc_barrier([128] * num_stages)   # the producer's arrivals
            kv_free = T.alloc_barrier([256] * num_stages)   # both consumers'
            p_ready = T.alloc_barrier(128)
            p_free = T.alloc_barrier(128)
            finished = T.alloc_barrier(128)

            seqlen, first, n_tiles = split_tiles(cache_seqlens, bx, bz, num_splits, block_N)
            T.copy(Q[bx, by * block_H, 0], Q_shared)
            T.copy(Q_pe[bx, by * block_H, 0], Qpe_shared)
            T.sync_threads()
            tx = T.get_thread_binding()
            if tx < 128:  # scores, softmax, the left half of O
                T.set_max_nreg(registers[0], 1)
                softmax_reset(state, acc_left)
                for k in T.serial(n_tiles):
                    T.barrier_wait(kv_full[k % num_stages], (k // num_stages) % 2)
                    T.clear(S)
                    T.gemm(Q_shared, KV_shared[k % num_stages, :, 0:DV], S, transpose_B=True)
                    T.gemm(Qpe_shared, KV_shared[k % num_stages, :, DV:DV + DPE], S,
                           transpose_B=True)
                    mask_past_end(S, (first + k) * block_N, seqlen, block_H, block_N)
                    softmax_step(S, state, acc_left, block_H, block_N, half, scale)
                    T.barrier_wait(p_free, (k % 2) ^ 1)
                    T.copy(S, P_shared)
                    T.copy(state.alpha, alpha_shared)
                    T.barrier_arrive(p_ready)
                    T.gemm(P_shared, KV_shared[k % num_stages, :, 0:half], acc_left)
                    T.barrier_arrive(kv_free[k % num_stages])
                softmax_finish(acc_left, state, block_H, half, scale, empty_rows=True)
                T.copy(state.l, inv_l_shared)  # 1 / l after softmax_finish
                T.barrier_arrive(finished)
                T.copy(acc_left, O_part[bx, bz, by * block_H, 0])
                T.copy(state.lse, LSE_part[bx, bz, by * block_H])
            elif tx < 256:  # the right half of O
                T.set_max_nreg(registers[1], 1)
                T.clear(acc_right)
                for k in T.serial(n_tiles):
                    T.barrier_wait(p_ready, k % 2)
                    T.copy(alpha_shared, alpha_right)
                    for i, j in T.Parallel(block_H, half):
                        acc_right[i, j] *= alpha_right[i]
                    T.gemm(P_shared, KV_shared[k % num_stages, :, half:DV], acc_right)
                    T.barrier_arrive(p_free)
                    T.barrier_arrive(kv_free[k % num_stages])
                T.barrier_wait(finished, 0)
                T.copy(inv_l_shared, alpha_right)
                for i, j in T.Parallel(block_H, half):
                    acc_right[i, j] *= alpha_right[i]
                T.copy(acc_right, O_part[bx, bz, by * block_H, half])
            else:  # the producer: KV tiles by TMA
                T.set_max_nreg(registers[2], 0)
                for k in T.serial(n_tiles):
                    T.barrier_wait(kv_free[k % num_stages], ((k // num_stages) % 2) ^ 1)
                    token = (first + k) * block_N
                    page = block_table[bx, token // page_size] + 0
                    T.tma_copy(KV[page, token % page_size, 0], KV_shared[k % num_stages, :, :],
                               barrier=kv_full[k % num_stages])
                    T.barrier_arrive(kv_full[k % num_stages])

    return main


class MlaDecodeRoles(MlaDecode):
    """The split kernel with roles and the combine as one call:
    (q, q_pe, kv, table, lens) -> O, as `mla_decode.MlaDecode`."""

    program = staticmethod(mla_decode_roles_split)
