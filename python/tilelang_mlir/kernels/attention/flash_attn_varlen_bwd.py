"""Variable-length FlashAttention backward (the backward of
flash_attn_varlen.py): dQ, dK, dV of packed sequences without padding, for
any total number of tokens (`T.dynamic`).

The layout is the forward's: Q, dO (total_tokens, heads, dim), K, V
(total_tokens, heads / groups, dim), the forward's LSE (heads,
total_tokens), float32, and cu_seqlens (batch + 1 int32 offsets; sequence
b is rows cu_seqlens[b] to cu_seqlens[b + 1]). Three tile programs, as in
flash_attn_bwd.py, each on a grid of ceil(max_seqlen / block) x heads x
batch whose blocks past their sequence's end do nothing:

  1. preprocess: Delta (heads, total_tokens) = rowsum(O * dO), and the
     float32 dQ accumulator of the sequence's rows cleared;
  2. main: a block owns `block_M` key rows of one sequence and one KV head
     and walks the query blocks of the sequence for every query head of
     its group, on the transposed scores (S^T = K Q^T, P^T, dV += P^T dO,
     dP^T = V dO^T, dS^T, dK += dS^T Q, dQ += dS K added atomically);
  3. postprocess: dQ cast to the input dtype.

Unlike the padded backward, a tile that runs past its sequence's end reads
the next sequence's rows, so keys and queries past the end are masked (P^T
= 0, which makes their dS^T 0) and every store and atomic add stops at the
end. Causal attention starts each key block's walk at the diagonal.

Offers the three programs, `FlashAttnVarlenBwd` (the wrapper: (q, k, v, o,
do, lse, cu_seqlens) -> (dq, dk, dv)) and `reference` (torch autograd).
"""

import math

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T

from .flash_attn_bwd import bwd_buffers, grads_of_tile

FullRow = T.GemmWarpPolicy.FullRow
LOG2E = math.log2(math.e)


def _rows(cu_seqlens, bx, bz, block):
    """(start, seqlen, first_row): sequence bz's first packed row, its
    length and this block's first row within it."""
    start = T.cast(cu_seqlens[bz], "index")
    return start, cu_seqlens[bz + 1] - start, bx * block


def preprocess(batch, heads, max_seqlen, dim, block=64, dtype="float16"):
    """Delta[h, r] = sum_d O[r, h, d] dO[r, h, d] (output 3) and the float32
    dQ accumulator set to zero (output 4) on every row of every sequence."""
    total = T.dynamic("total_tokens")
    shape = (total, heads, dim)

    @T.prim_func
    def main(O: T.Tensor(shape, dtype), dO: T.Tensor(shape, dtype),
             cu_seqlens: T.Tensor((batch + 1,), "int32"),
             Delta: T.Tensor((heads, total), "float32"),
             dQ_accum: T.Tensor(shape, "float32")):
        with T.Kernel(T.ceildiv(max_seqlen, block), heads, batch, threads=128) as (bx, by, bz):
            o = T.alloc_fragment((block, dim), "float32")
            do = T.alloc_fragment((block, dim), "float32")
            delta = T.alloc_fragment((block,), "float32")
            start, seqlen, first_row = _rows(cu_seqlens, bx, bz, block)
            row = start + first_row
            T.copy(O[row:row + block, by:by + 1, :], o)
            T.copy(dO[row:row + block, by:by + 1, :], do)
            for i, j in T.Parallel(block, dim):
                o[i, j] *= do[i, j]
            T.reduce_sum(o, delta, dim=1)
            for i in T.Parallel(block):
                if first_row + i < seqlen:
                    Delta[by, row + i] = delta[i]
            for i, j in T.Parallel(block, dim):
                if first_row + i < seqlen:
                    dQ_accum[row + i, by, j] = 0.0

    return main


def flash_attn_varlen_bwd(batch, heads, max_seqlen, dim, is_causal=False, groups=1, block_M=64,
                          block_N=64, num_stages=2, threads=128, dtype="float16", sm_scale=None):
    """dK, dV (outputs 9 and 10) of key block bx of sequence bz, KV head by;
    dQ added into dQ_accum (float32). sm_scale: the forward's softmax scale
    (default 1 / sqrt(D))."""
    if heads % groups:
        raise tl.TileLangError(f"flash_attn_varlen_bwd: {heads} heads are not a multiple of "
                               f"groups = {groups}")
    # P = exp2(S scale - LSE log2(e))
    scale = LOG2E / math.sqrt(dim) if sm_scale is None else LOG2E * sm_scale
    ds_scale = 1 / math.sqrt(dim) if sm_scale is None else sm_scale  # of dK
    total = T.dynamic("total_tokens")
    q_shape = (total, heads, dim)
    kv_shape = (total, heads // groups, dim)
    accum = "float32"

    @T.prim_func
    def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype),
             V: T.Tensor(kv_shape, dtype), dO: T.Tensor(q_shape, dtype),
             LSE: T.Tensor((heads, total), accum), Delta: T.Tensor((heads, total), accum),
             cu_seqlens: T.Tensor((batch + 1,), "int32"),
             dQ_accum: T.Tensor(q_shape, accum),
             dK: T.Tensor(kv_shape, dtype), dV: T.Tensor(kv_shape, dtype)):
        with T.Kernel(T.ceildiv(max_seqlen, block_M), heads // groups, batch,
                      threads=threads) as (bx, by, bz):
            (K_shared, V_shared, q, do, lse, delta, dsT_shared, qkT, dsT, pT, dsT_cast, dq, dk,
             dv) = bwd_buffers(block_M, block_N, dim, dtype)

            start, seqlen, kv_first = _rows(cu_seqlens, bx, bz, block_M)
            kv_row = start + kv_first
            T.copy(K[kv_row:kv_row + block_M, by:by + 1, :], K_shared)
            T.copy(V[kv_row:kv_row + block_M, by:by + 1, :], V_shared)
            T.clear(dk)
            T.clear(dv)
            first = kv_first // block_N if is_causal else 0  # the diagonal's query block
            per_head = T.max(T.ceildiv(seqlen, block_N) - first, 0)
            # A block past the sequence's end walks nothing (and stores nothing).
            per_head = T.if_then_else(kv_first < seqlen, per_head, 0)
            for t in T.Pipelined(groups * per_head, num_stages=num_stages):
                h = by * groups + t // per_head  # query head and query block of this step
                k = first + t % per_head
                q_row = start + k * block_N
                T.copy(Q[q_row:q_row + block_N, h:h + 1, :], q)
                T.copy(dO[q_row:q_row + block_N, h:h + 1, :], do)
                T.copy(LSE[h, q_row:q_row + block_N], lse)
                T.copy(Delta[h, q_row:q_row + block_N], delta)
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True, policy=FullRow)
                for i, j in T.Parallel(block_M, block_N):
                    # keys and queries past the end are the next sequence's rows
                    visible = (kv_first + i < seqlen) & (k * block_N + j < seqlen)
                    if is_causal:
                        visible = visible & (kv_first + i <= k * block_N + j)
                    qkT[i, j] = T.if_then_else(visible, T.exp2(qkT[i, j] * scale - lse[j] * LOG2E),
                                               0)
                grads_of_tile(K_shared, V_shared, q, do, delta, qkT, dsT, pT, dsT_cast,
                              dsT_shared, dq, dk, dv, block_M, block_N)
                for i, j in T.Parallel(block_N, dim):
                    if k * block_N + i < seqlen:
                        T.atomic_add(dQ_accum[q_row + i, h, j], dq[i, j])
            for i, j in T.Parallel(block_M, dim):  # stage dK, dV for coalesced stores
                K_shared[i, j] = dk[i, j] * ds_scale  # (dS^T left out the scale)
            T.copy(dv, V_shared)
            for i, j in T.Parallel(block_M, dim):
                if kv_first + i < seqlen:  # the rows past the end are the next sequence's
                    dK[kv_row + i, by, j] = K_shared[i, j]
                    dV[kv_row + i, by, j] = V_shared[i, j]

    return main


def postprocess(batch, heads, max_seqlen, dim, block=64, dtype="float16", sm_scale=None):
    """dQ (output 3) = dQ_accum times the softmax scale (sm_scale, default
    1 / sqrt(D): the main kernel leaves it out of dS), cast to the input
    dtype, row by row of every sequence."""
    scale = 1 / math.sqrt(dim) if sm_scale is None else sm_scale
    total = T.dynamic("total_tokens")
    shape = (total, heads, dim)

    @T.prim_func
    def main(dQ_accum: T.Tensor(shape, "float32"), cu_seqlens: T.Tensor((batch + 1,), "int32"),
             dQ: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(max_seqlen, block), heads, batch, threads=128) as (bx, by, bz):
            acc = T.alloc_fragment((block, dim), "float32")
            start, seqlen, first_row = _rows(cu_seqlens, bx, bz, block)
            row = start + first_row
            T.copy(dQ_accum[row:row + block, by:by + 1, :], acc)
            for i, j in T.Parallel(block, dim):
                if first_row + i < seqlen:
                    dQ[row + i, by, j] = acc[i, j] * scale

    return main


# Default tiles per head dim (as flash_attn_bwd.BLOCKS: dK, dV and two score
# tiles in registers).
BLOCKS = {64: dict(block_M=64, block_N=64, threads=128),
          128: dict(block_M=64, block_N=64, threads=256)}


class FlashAttnVarlenBwd:
    """The three kernels, compiled once for any total number of tokens;
    call with (q, k, v, o, do, lse, cu_seqlens) to get (dq, dk, dv)."""

    def __init__(self, batch, heads, max_seqlen, dim, is_causal=False, groups=1,
                 dtype="float16", target="auto", sm_scale=None, **blocks):
        blocks = {**BLOCKS.get(dim, {}), **blocks}
        self.pre = tl.compile(preprocess(batch, heads, max_seqlen, dim, dtype=dtype),
                              out_idx=[3, 4], target=target)
        self.main = tl.compile(flash_attn_varlen_bwd(batch, heads, max_seqlen, dim, is_causal,
                                                     groups, dtype=dtype, sm_scale=sm_scale,
                                                     **blocks),
                               out_idx=[8, 9], target=self.pre.target)
        self.post = tl.compile(postprocess(batch, heads, max_seqlen, dim, dtype=dtype,
                                           sm_scale=sm_scale),
                               out_idx=[2], target=self.pre.target)
        self.target, self.device = self.pre.target, self.pre.device

    def __call__(self, q, k, v, o, do, lse, cu_seqlens):
        delta, dq_accum = self.pre(o, do, cu_seqlens)
        dk, dv = self.main(q, k, v, do, lse, delta, cu_seqlens, dq_accum)
        return self.post(dq_accum, cu_seqlens), dk, dv


def reference(q, k, v, do, cu_seqlens, is_causal=False):
    """(dQ, dK, dV) by torch autograd one sequence at a time: float64 on the
    CPU, float32 on a GPU; KV heads repeated for GQA (their gradients sum
    over each group)."""
    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    groups = q.shape[1] // k.shape[1]
    grads = [torch.zeros(x.shape, dtype=wide, device=q.device) for x in (q, k, v)]
    cu = [int(x) for x in cu_seqlens]
    for a, b in zip(cu[:-1], cu[1:]):
        qs, ks, vs = (x[a:b].to(wide).transpose(0, 1).requires_grad_() for x in (q, k, v))
        s = qs @ ks.repeat_interleave(groups, dim=0).transpose(-1, -2) / math.sqrt(q.shape[-1])
        if is_causal:
            n = b - a
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1),
                              float("-inf"))
        o = torch.softmax(s, dim=-1) @ vs.repeat_interleave(groups, dim=0)
        for g, x in zip(grads, torch.autograd.grad(o, (qs, ks, vs),
                                                   do[a:b].to(wide).transpose(0, 1))):
            g[a:b] = x.transpose(0, 1)
    return tuple(grads)
