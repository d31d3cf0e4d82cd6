"""Variable-length FlashAttention forward (like flash_attn_varlen_func):
sequences of different lengths packed without padding, one kernel compiled
once for any total number of tokens.

Q is (total_tokens, heads, dim) and K, V (total_tokens, heads / groups,
dim), with total_tokens a dynamic dimension (`T.dynamic`): the kernel takes
any total. Sequence b is rows cu_seqlens[b] to cu_seqlens[b + 1] (int32,
batch + 1 offsets, cu_seqlens[0] = 0) of Q, K and V (self-attention: the
same offsets for queries and keys). The grid is ceil(max_seqlen / block_M)
x heads x batch: block (x, h, b) owns query rows x * block_M onwards of
sequence b and head h, and a block past its sequence's end does nothing.
Inside a sequence the program is flash_attn.py's (the online softmax of
online_softmax.py), with keys masked at the sequence's end (and above the
diagonal when causal): a tile that runs past the end reads the next
sequence's rows (or zeros past the total) and masks them. Writes of O and
of the LSE ((heads, total_tokens), float32) stop at the sequence's end,
since the rows past it belong to the next sequence.

Offers `flash_attn_varlen` (the program), `make_inputs` and `reference`.
cu_seqlens is not checked here (kernels/attention/index_checks.py).
"""

import math

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T

from .online_softmax import softmax_finish, softmax_reset, softmax_state, softmax_step

FullRow = T.GemmWarpPolicy.FullRow


def flash_attn_varlen(batch, heads, max_seqlen, dim, is_causal=False, groups=1, block_M=128,
                      block_N=128, num_stages=2, threads=256, dtype="float16", sm_scale=None):
    """batch and max_seqlen (the longest sequence: the grid) are fixed at
    compile time; the total number of tokens is not. sm_scale: the softmax
    scale (default 1 / sqrt(D))."""
    if heads % groups:
        raise tl.TileLangError(f"flash_attn_varlen: {heads} heads are not a multiple of "
                               f"groups = {groups}")
    # softmax(x sm_scale) through exp2
    log2e = math.log2(math.e)
    scale = log2e / math.sqrt(dim) if sm_scale is None else log2e * sm_scale
    accum = "float32"
    total = T.dynamic("total_tokens")
    q_shape = (total, heads, dim)
    kv_shape = (total, heads // groups, dim)

    @T.prim_func
    def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype),
             V: T.Tensor(kv_shape, dtype), cu_seqlens: T.Tensor((batch + 1,), "int32"),
             O: T.Tensor(q_shape, dtype), LSE: T.Tensor((heads, total), accum)):
        with T.Kernel(T.ceildiv(max_seqlen, block_M), heads, batch, threads=threads) as \
                (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            S = T.alloc_fragment((block_M, block_N), accum)
            P = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum)
            state = softmax_state(block_M)  # the online softmax's row state

            # An index value: Q[row:row + block_M] below then has a static extent.
            start = T.cast(cu_seqlens[bz], "index")
            seqlen = cu_seqlens[bz + 1] - start
            first_row = bx * block_M  # within the sequence
            row = start + first_row
            kv_head = by // groups
            T.copy(Q[row:row + block_M, by:by + 1, :], Q_shared)
            softmax_reset(state, acc_o)
            n_tiles = T.ceildiv(seqlen, block_N)
            if is_causal:  # KV tiles past the block's last row are all masked
                n_tiles = T.min(n_tiles, T.ceildiv(first_row + block_M, block_N))
            # A block past the sequence's end runs no KV tile and writes nothing.
            # (Not an `if` around the body: warp specialization wants the
            # pipelined loop at the top level of the kernel.)
            n_tiles = T.if_then_else(first_row < seqlen, n_tiles, 0)
            for k in T.Pipelined(n_tiles, num_stages=num_stages):
                key = start + k * block_N
                T.copy(K[key:key + block_N, kv_head:kv_head + 1, :], K_shared)
                T.copy(V[key:key + block_N, kv_head:kv_head + 1, :], V_shared)
                T.clear(S)
                T.gemm(Q_shared, K_shared, S, transpose_B=True, policy=FullRow)
                # Tiles crossing the sequence's end (or the diagonal) mask keys.
                edge = T.min(seqlen, first_row + 1) if is_causal else seqlen
                if (k + 1) * block_N > edge:
                    for i, j in T.Parallel(block_M, block_N):
                        k_pos = k * block_N + j
                        visible = k_pos < seqlen
                        if is_causal:
                            visible = visible & (k_pos <= first_row + i)
                        S[i, j] = T.if_then_else(visible, S[i, j], -T.infinity(accum))
                softmax_step(S, state, acc_o, block_M, block_N, dim, scale)
                T.copy(S, P)
                T.gemm(P, V_shared, acc_o, policy=FullRow)
            softmax_finish(acc_o, state, block_M, dim, scale, empty_rows=False)
            T.copy(acc_o, Q_shared)  # Q is done with: stage O for coalesced stores
            for i, j in T.Parallel(block_M, dim):
                if first_row + i < seqlen:  # the rows past the end are the next sequence's
                    O[row + i, by, j] = Q_shared[i, j]
            for i in T.Parallel(block_M):
                if first_row + i < seqlen:
                    LSE[by, row + i] = state.lse[i]

    return main


def make_inputs(lens, heads, dim, groups=1, dtype=torch.float16, device="cpu", seed=None):
    """Random packed q, k, v and cu_seqlens (int32) for sequence lengths `lens`."""
    gen = torch.Generator(device=device).manual_seed(seed) if seed is not None else None
    total = sum(lens)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device).to(dtype)

    cu = torch.tensor([0] + list(lens), device=device).cumsum(0).to(torch.int32)
    return (randn(total, heads, dim), randn(total, heads // groups, dim),
            randn(total, heads // groups, dim), cu)


def reference(q, k, v, cu_seqlens, is_causal=False):
    """(O (total, heads, dim), LSE (heads, total)) one sequence at a time:
    float64 on the CPU, float32 on a GPU; KV heads repeated for GQA."""
    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    groups = q.shape[1] // k.shape[1]
    o = torch.empty(q.shape, dtype=wide, device=q.device)
    lse = torch.empty(q.shape[1], q.shape[0], dtype=wide, device=q.device)
    cu = [int(x) for x in cu_seqlens]
    for a, b in zip(cu[:-1], cu[1:]):
        qs = q[a:b].to(wide).transpose(0, 1)                                  # (H, n, D)
        ks = k[a:b].to(wide).transpose(0, 1).repeat_interleave(groups, dim=0)
        vs = v[a:b].to(wide).transpose(0, 1).repeat_interleave(groups, dim=0)
        s = qs @ ks.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if is_causal:
            n = b - a
            s.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1),
                           float("-inf"))
        o[a:b] = (torch.softmax(s, dim=-1) @ vs).transpose(0, 1)
        lse[:, a:b] = torch.logsumexp(s, dim=-1)
    return o, lse
