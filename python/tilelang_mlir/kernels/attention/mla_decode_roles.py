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

`mla_decode_seesaw_split` (`MlaDecodeSeesaw`) is the balanced schedule
FlashMLA uses on Hopper, written with the same layer: the two consumer
warpgroups take the KV tiles in turns, each computing the scores and the
softmax of its own tile while the other's gemms run (see its docstring).
"""

import math

import tilelang_mlir.language as T

from .mla_decode import DPE, DV, MlaDecode
from .online_softmax import (LN2, mask_past_end, page_of, softmax_finish, softmax_reset,
                             softmax_state, softmax_step, split_tiles)


def mla_decode_roles_split(batch, heads, num_pages, max_pages, num_splits, page_size=64,
                           block_H=64, block_N=64, num_stages=2, dtype="float16",
                           registers=(232, 232, 40), direct=False):
    scale = math.log2(math.e) / math.sqrt(DV + DPE)
    accum = "float32"
    half = DV // 2
    assert page_size % block_N == 0, "a KV tile lies within one page"

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, DV), dtype), Q_pe: T.Tensor((batch, heads, DPE), dtype),
             KV: T.Tensor((num_pages, page_size, DV + DPE), dtype),
             block_table: T.Tensor((batch, max_pages), "int32"),
             cache_seqlens: T.Tensor((batch,), "int32"),
             O_part: T.Tensor((batch, num_splits, heads, DV), dtype if direct else accum),
             LSE_part: T.Tensor((batch, num_splits, heads), accum)):
        # head groups first: see mla_decode.mla_decode_split
        with T.Kernel(heads // block_H, batch, num_splits, threads=384) as (by, bx, bz):
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
                    page = page_of(block_table, bx, token, page_size)
                    T.tma_copy(KV[page, token % page_size, 0], KV_shared[k % num_stages, :, :],
                               barrier=kv_full[k % num_stages])
                    T.barrier_arrive(kv_full[k % num_stages])

    return main


def mla_decode_seesaw_split(batch, heads, num_pages, max_pages, num_splits, page_size=64,
                            dtype="float16", direct=False):
    """MLA decode in FlashMLA's seesaw schedule, with explicit roles.

    The KV tiles of the split go in pairs (t, t + 1): warpgroup 0 owns the
    even tiles (KV slot 0), warpgroup 1 the odd ones (slot 1); each keeps
    its half of O (columns 0-255 / 256-511) in registers, and both take
    part in every tile's P V. Per pair:

    - wg0: the scores of tile t; the softmax against m(t - 1), the running
      row maximum in `m_shared` (-> `sm0`); its half of P(t) V(t) with P
      in registers; then, once wg1's softmax of t + 1 is done (`sm1`),
      P(t) rescaled to m(t + 1) into P0_shared (-> `p0`), O rescaled, and
      its half of P(t + 1) V(t + 1) from P1_shared (`p1`), left running
      under the next pair's scores;
    - wg1: the scores of tile t + 1; after `sm0` the softmax against m(t)
      (-> `sm1`), P(t + 1) into P1_shared (-> `p1`), its half of
      P(t + 1) V(t + 1) from registers and, after `p0`, of P(t) V(t).

    One warpgroup's softmax always runs under the other's gemms. The row
    sums stay per warpgroup (each scaled with its O) and are added at the
    end. There is no producer warpgroup (256 threads, up to 255 registers
    each): a tile lands in two parts, the owner's half of the 512 columns
    and the other half (the rope columns travel with the right half), each
    on its own barrier, and the warpgroup that reads a part last issues its
    TMA load for the tile two ahead as soon as that read is done (wg0 the
    left halves, wg1 the right halves and rope columns), so the score gemm
    starts on the part that landed first. The rope part of Q lives in
    registers (A of a score gemm), which leaves room for two P buffers next
    to Q and the two KV slots (225 KB). An odd last tile is paired with a
    masked one: every pair runs the same code, without branches around the
    asynchronous gemms."""
    block_H = block_N = 64
    scale = math.log2(math.e) / math.sqrt(DV + DPE)
    accum = "float32"
    half = DV // 2
    NEG = -1.0e30  # the start of the running maximum (exp2 of NEG - m is 0, never NaN)
    assert page_size % block_N == 0, "a KV tile lies within one page"

    @T.macro
    def scores(Q_shared, Qpe, KV_shared, S, kv_full, slot, phase, part):
        # S = Q K^T of the tile in `slot`, by part as the parts land: part 0
        # the owner's half of the 512 columns (kv_full[2 slot]), part 1 the
        # other half (kv_full[2 slot + 1]); the rope columns come with the
        # right half. One gemm group per part.
        cols = (slot if part == 0 else 1 - slot) * half
        T.barrier_wait(kv_full[2 * slot + part], phase)
        T.wgmma_gemm(Q_shared[:, cols:cols + half], KV_shared[slot, :, cols:cols + half], S,
                     transpose_B=True, clear_accum=part == 0)
        if cols == half:
            T.wgmma_gemm(Qpe, KV_shared[slot, :, DV:DV + DPE], S, transpose_B=True)

    @T.macro
    def load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, j, h):
        # TMA of half h of tile j's 512 columns (with the rope columns when
        # h = 1) into slot j % 2, completing on the slot's barrier of that
        # part, with the issuing warpgroup's 128 arrivals. A tile past the
        # split (the masked partner of an odd last tile) reads a page of the
        # sequence.
        s = j % 2
        bar = kv_full[2 * s + (0 if h == s else 1)]
        token = (first + j) * block_N
        page = page_of(block_table, bx, T.min(token, seqlen - 1), page_size)
        row = token % page_size
        T.tma_copy(KV[page, row, h * half], KV_shared[s, :, h * half:(h + 1) * half], barrier=bar)
        if h == 1:
            T.tma_copy(KV[page, row, DV], KV_shared[s, :, DV:DV + DPE], barrier=bar)
        T.barrier_arrive(bar)

    @T.macro
    def consumer_state(Q_pe, bx, by):
        # A consumer's registers: Q's rope part (A of a score gemm), the
        # scores S and P, its half of O, the maximum its O is scaled to
        # (m_acc), a row vector of work (m_new, r) and its own row sums l.
        Qpe = T.alloc_fragment((block_H, DPE), dtype)
        S = T.alloc_fragment((block_H, block_N), accum)
        P = T.alloc_fragment((block_H, block_N), dtype)
        acc = T.alloc_fragment((block_H, half), accum)
        m_acc = T.alloc_fragment((block_H,), accum)
        m_new = T.alloc_fragment((block_H,), accum)
        r = T.alloc_fragment((block_H,), accum)
        l = T.alloc_fragment((block_H,), accum)
        T.copy(Q_pe[bx, by * block_H, 0], Qpe)
        T.clear(acc)
        T.clear(l)
        T.fill(m_acc, NEG)
        return Qpe, S, P, acc, m_acc, m_new, r, l

    @T.macro
    def finish(me, acc, m_acc, m_new, r, l, l_shared, done, O_part, LSE_part, bx, by, bz):
        # Both row sums (each scaled to the final maximum) added through
        # l_shared, O divided by them; warpgroup 0 also writes the LSE. An
        # empty split gives O = 0 and LSE = -inf.
        for i in T.Parallel(block_H):
            l_shared[me, i] = l[i]
        T.barrier_arrive(done)
        T.barrier_wait(done, 0)
        for i in T.Parallel(block_H):
            l[i] = l[i] + l_shared[1 - me, i]
            r[i] = T.if_then_else(l[i] > 0, 1 / l[i], 0)
            if me == 0:
                m_new[i] = T.if_then_else(l[i] > 0, (T.log2(l[i]) + m_acc[i]) * LN2,
                                          -T.infinity(accum))
        for i, j in T.Parallel(block_H, half):
            acc[i, j] *= r[i]
        T.copy(acc, O_part[bx, bz, by * block_H, me * half])
        if me == 0:
            T.copy(m_new, LSE_part[bx, bz, by * block_H])

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, DV), dtype), Q_pe: T.Tensor((batch, heads, DPE), dtype),
             KV: T.Tensor((num_pages, page_size, DV + DPE), dtype),
             block_table: T.Tensor((batch, max_pages), "int32"),
             cache_seqlens: T.Tensor((batch,), "int32"),
             O_part: T.Tensor((batch, num_splits, heads, DV), dtype if direct else accum),
             LSE_part: T.Tensor((batch, num_splits, heads), accum)):
        # head groups first: see mla_decode.mla_decode_split
        with T.Kernel(heads // block_H, batch, num_splits, threads=256) as (by, bx, bz):
            Q_shared = T.alloc_shared((block_H, DV), dtype)
            KV_shared = T.alloc_shared((2, block_N, DV + DPE), dtype)
            P0_shared = T.alloc_shared((block_H, block_N), dtype)
            P1_shared = T.alloc_shared((block_H, block_N), dtype)
            m_shared = T.alloc_shared((block_H,), accum)      # the running row maximum
            scale1_shared = T.alloc_shared((block_H,), accum)  # exp2(m(t) - m(t+1))
            l_shared = T.alloc_shared((2, block_H), accum)
            # per slot: the owner's half; the other half and the rope columns
            kv_full = T.alloc_barrier([128] * 4)
            sm0 = T.alloc_barrier(128)   # wg0's softmax of tile t done (m_shared = m(t))
            sm1 = T.alloc_barrier(128)   # wg1's softmax of tile t+1 done
            p0 = T.alloc_barrier(128)    # P0_shared (scaled to m(t+1)) written
            p1 = T.alloc_barrier(128)    # P1_shared written
            done = T.alloc_barrier(256)  # both row sums in l_shared

            seqlen, first, n_tiles = split_tiles(cache_seqlens, bx, bz, num_splits, block_N)
            n_pairs = T.ceildiv(n_tiles, 2)
            limit = T.min(seqlen, (first + n_tiles) * block_N)  # keys past it are masked
            T.copy(Q[bx, by * block_H, 0], Q_shared)
            for i in T.Parallel(block_H):
                m_shared[i] = NEG
            T.sync_threads()
            tx = T.get_thread_binding()
            if tx < 128:
                Qpe, S, P, acc, m_acc, m_new, r, l = consumer_state(Q_pe, bx, by)
                if n_pairs > 0:  # I load the left halves of the tiles
                    load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, 0, 0)
                    load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, 1, 0)
                for k in T.serial(n_pairs):
                    t = 2 * k
                    T.wait_wgmma(0)  # my P(t-1) V(t-1) of the last pair: slot 1's left half free
                    if k > 0:
                        load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, t + 1, 0)
                    scores(Q_shared, Qpe, KV_shared, S, kv_full, 0, k % 2, 0)
                    scores(Q_shared, Qpe, KV_shared, S, kv_full, 0, k % 2, 1)
                    T.wait_wgmma(0)
                    # softmax of tile t against m(t-1)
                    mask_past_end(S, (first + t) * block_N, limit, block_H, block_N)
                    T.reduce_max(S, m_new, dim=1)
                    for i in T.Parallel(block_H):
                        m_new[i] = T.max(m_new[i] * scale, m_shared[i])
                        r[i] = T.exp2(m_acc[i] - m_new[i])
                        m_acc[i] = m_new[i]
                    for i, j in T.Parallel(block_H, block_N):
                        S[i, j] = T.exp2(S[i, j] * scale - m_new[i])
                    for i in T.Parallel(block_H):
                        m_shared[i] = m_new[i]
                    T.barrier_arrive(sm0)
                    for i, j in T.Parallel(block_H, half):
                        acc[i, j] *= r[i]
                    T.reduce_sum(S, m_new, dim=1)  # (m_new: the row sums of this tile)
                    for i in T.Parallel(block_H):
                        l[i] = l[i] * r[i] + m_new[i]
                    T.copy(S, P)
                    T.wgmma_gemm(P, KV_shared[0, :, 0:half], acc)
                    T.wait_wgmma(0)
                    if k + 1 < n_pairs:  # slot 0's left half is free
                        load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, t + 2, 0)
                    # wg1's softmax of tile t+1: P(t) rescaled to m(t+1) for wg1
                    T.barrier_wait(sm1, k % 2)
                    for i in T.Parallel(block_H):
                        r[i] = scale1_shared[i]
                        m_acc[i] = m_shared[i]
                    for i, j in T.Parallel(block_H, block_N):
                        P[i, j] = P[i, j] * r[i]
                    T.copy(P, P0_shared)
                    T.barrier_arrive(p0)
                    # P(t+1) V(t+1), my half
                    T.barrier_wait(p1, k % 2)
                    for i, j in T.Parallel(block_H, half):
                        acc[i, j] *= r[i]
                    for i in T.Parallel(block_H):
                        l[i] = l[i] * r[i]
                    T.wgmma_gemm(P1_shared, KV_shared[1, :, 0:half], acc)
                T.wait_wgmma(0)
                finish(0, acc, m_acc, m_new, r, l, l_shared, done, O_part, LSE_part, bx, by, bz)
            else:
                Qpe, S, P, acc, m_acc, m_new, r, l = consumer_state(Q_pe, bx, by)
                if n_pairs > 0:  # I load the right halves and the rope columns
                    load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, 0, 1)
                    load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, 1, 1)
                for k in T.serial(n_pairs):
                    t = 2 * k + 1
                    scores(Q_shared, Qpe, KV_shared, S, kv_full, 1, k % 2, 0)
                    scores(Q_shared, Qpe, KV_shared, S, kv_full, 1, k % 2, 1)
                    T.wait_wgmma(0)
                    mask_past_end(S, (first + t) * block_N, limit, block_H, block_N)
                    T.reduce_max(S, m_new, dim=1)
                    T.barrier_wait(sm0, k % 2)
                    for i in T.Parallel(block_H):
                        r[i] = m_shared[i]  # m(t-1)
                        m_new[i] = T.max(m_new[i] * scale, r[i])
                        scale1_shared[i] = T.exp2(r[i] - m_new[i])
                        r[i] = T.exp2(m_acc[i] - m_new[i])
                        m_acc[i] = m_new[i]
                    for i, j in T.Parallel(block_H, block_N):
                        S[i, j] = T.exp2(S[i, j] * scale - m_new[i])
                    for i in T.Parallel(block_H):
                        m_shared[i] = m_new[i]
                    T.barrier_arrive(sm1)
                    T.copy(S, P)
                    T.copy(P, P1_shared)
                    T.barrier_arrive(p1)
                    for i, j in T.Parallel(block_H, half):
                        acc[i, j] *= r[i]
                    T.reduce_sum(S, m_new, dim=1)
                    for i in T.Parallel(block_H):
                        l[i] = l[i] * r[i] + m_new[i]
                    T.wgmma_gemm(P, KV_shared[1, :, half:DV], acc)
                    T.barrier_wait(p0, k % 2)
                    T.wgmma_gemm(P0_shared, KV_shared[0, :, half:DV], acc)
                    T.wait_wgmma(1)
                    if k + 1 < n_pairs:  # slot 1's right half and rope columns are free
                        load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, t + 2, 1)
                    T.wait_wgmma(0)
                    if k + 1 < n_pairs:  # slot 0's right half and rope columns are free
                        load(KV, KV_shared, kv_full, block_table, bx, first, seqlen, t + 1, 1)
                finish(1, acc, m_acc, m_new, r, l, l_shared, done, O_part, LSE_part, bx, by, bz)

    return main


class MlaDecodeRoles(MlaDecode):
    """The split kernel with roles and the combine as one call:
    (q, q_pe, kv, table, lens) -> O, as `mla_decode.MlaDecode`."""

    program = staticmethod(mla_decode_roles_split)


class MlaDecodeSeesaw(MlaDecode):
    """The seesaw split kernel and the combine as one call."""

    program = staticmethod(mla_decode_seesaw_split)
