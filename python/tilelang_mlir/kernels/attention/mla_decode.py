"""DeepSeek MLA decode: one query token per sequence, `heads` query heads
sharing one latent KV head, over a paged KV cache, split along the cache.

Per token the cache holds the latent c_kv (dim 512, also the value) and the
rope key k_pe (dim 64), side by side: KV is (pages, page_size, 576). The
query is q_nope (512) and q_pe (64); the score of a head and a token is
q_nope . c_kv + q_pe . k_pe, scaled by 1/sqrt(576), and the output is the
softmax-weighted sum of c_kv (dim 512). A block table (batch x max_pages,
int32) maps a sequence's logical pages to physical ones, and each sequence
has its own cache length.

Two kernels. The split kernel owns `block_H` heads of one sequence and one
of `num_splits` shares of its KV tiles (`block_N` tokens within one page:
64 on Hopper, 32 to fit sm_80's shared memory); it runs the online softmax
over them and writes a float32 partial O (already divided by its row sum)
and the partial log-sum-exp. The combine kernel weighs the partials of each
head by exp(lse_s - lse).

The accumulator is block_H x 512 in float32: on two warpgroups it is split
by columns (policy FullCol: each warpgroup owns 256 of the 512 columns).
Two ways to get the scores to both warpgroups (`scores`):
- "split": the score gemm (block_H x 64) uses FullRow, each warpgroup 32 of
  the 64 columns; the row maximum and sum cross the warpgroups through
  shared memory every tile, and P goes through shared memory so both
  warpgroups read all of it.
- "replicate": every warpgroup computes the whole score tile (policy
  Replicate: twice the score gemm's tensor work, but as 64 x 64 instead of
  64 x 32 wgmma tiles); the softmax is then local to each warpgroup and P
  stays in registers as the A operand of P V (wgmma RS): no exchange and no
  barrier between the warpgroups inside the loop.

Offers `mla_decode_split` and `mla_decode_combine` (the programs), DV and
DPE (the head dims), the tuned tiles HOPPER, HOPPER_REPLICATE and AMPERE,
the `MlaDecode` wrapper, `make_inputs` and `reference`.
"""

import math

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T

from .online_softmax import (mask_past_end, page_of, softmax_finish, softmax_reset,
                             softmax_state, softmax_step, split_tiles, splitkv_combine)

FullRow = T.GemmWarpPolicy.FullRow
FullCol = T.GemmWarpPolicy.FullCol

DV, DPE = 512, 64  # latent (value) dim, rope dim; the key dim is DV + DPE


def mla_decode_split(batch, heads, num_pages, max_pages, num_splits, page_size=64,
                     block_H=64, block_N=64, num_stages=2, threads=256, dtype="float16",
                     scores="split", direct=False, sm_scale=None):
    # softmax(x sm_scale) through exp2; sm_scale defaults to 1 / sqrt(576)
    log2e = math.log2(math.e)
    scale = log2e / math.sqrt(DV + DPE) if sm_scale is None else log2e * sm_scale
    accum = "float32"
    s_policy = T.GemmWarpPolicy.Replicate if scores == "replicate" else FullRow
    assert page_size % block_N == 0, "a KV tile lies within one page"
    assert scores in ("split", "replicate")
    replicate = scores == "replicate"

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, DV), dtype), Q_pe: T.Tensor((batch, heads, DPE), dtype),
             KV: T.Tensor((num_pages, page_size, DV + DPE), dtype),
             block_table: T.Tensor((batch, max_pages), "int32"),
             cache_seqlens: T.Tensor((batch,), "int32"),
             # float32 partials, or O itself in dtype with `direct` (one split)
             O_part: T.Tensor((batch, num_splits, heads, DV), dtype if direct else accum),
             LSE_part: T.Tensor((batch, num_splits, heads), accum)):
        # The head groups of one sequence are neighbours in launch order:
        # they run at the same time and read each KV tile once from DRAM
        # (the second read hits L2). With the batch first, the groups of a
        # sequence fell in different waves and the cache was read twice.
        with T.Kernel(heads // block_H, batch, num_splits, threads=threads) as (by, bx, bz):
            Q_shared = T.alloc_shared((block_H, DV), dtype)
            Qpe_shared = T.alloc_shared((block_H, DPE), dtype)
            KV_shared = T.alloc_shared((block_N, DV), dtype)
            Kpe_shared = T.alloc_shared((block_N, DPE), dtype)
            if replicate:
                P = T.alloc_fragment((block_H, block_N), dtype)
            else:
                P = T.alloc_shared((block_H, block_N), dtype)
            S = T.alloc_fragment((block_H, block_N), accum)
            acc_o = T.alloc_fragment((block_H, DV), accum)
            state = softmax_state(block_H)  # the online softmax's row state

            seqlen, first, n_tiles = split_tiles(cache_seqlens, bx, bz, num_splits, block_N)
            T.copy(Q[bx, by * block_H, 0], Q_shared)
            T.copy(Q_pe[bx, by * block_H, 0], Qpe_shared)
            softmax_reset(state, acc_o)
            for k in T.Pipelined(n_tiles, num_stages=num_stages):
                token = (first + k) * block_N
                page = page_of(block_table, bx, token, page_size)
                T.copy(KV[page, token % page_size, 0], KV_shared)
                T.copy(KV[page, token % page_size, DV], Kpe_shared)
                T.clear(S)
                T.gemm(Q_shared, KV_shared, S, transpose_B=True, policy=s_policy)
                T.gemm(Qpe_shared, Kpe_shared, S, transpose_B=True, policy=s_policy)
                mask_past_end(S, token, seqlen, block_H, block_N)
                softmax_step(S, state, acc_o, block_H, block_N, DV, scale)
                T.copy(S, P)
                T.gemm(P, KV_shared, acc_o, policy=FullCol)
            softmax_finish(acc_o, state, block_H, DV, scale, empty_rows=True)
            T.copy(acc_o, O_part[bx, bz, by * block_H, 0])
            T.copy(state.lse, LSE_part[bx, bz, by * block_H])

    return main


def mla_decode_combine(batch, heads, num_splits, threads=128, dtype="float16"):
    """O[b, h] = sum_s exp(lse_s - lse) O_s with lse = log sum_s exp(lse_s)."""
    return splitkv_combine(batch, heads, num_splits, DV, threads, dtype)


# Shared memory is Q (block_H x 576) plus num_stages KV tiles (block_N x
# 576) plus P, in 16 bits: 64-token tiles in 2 stages (226 KB) fit only
# Hopper; 32-token tiles (146 KB) fit sm_80 too.
HOPPER = dict(block_N=64, num_stages=2)
HOPPER_REPLICATE = dict(block_N=64, num_stages=2, scores="replicate")
AMPERE = dict(block_N=32, num_stages=2)


def make_inputs(batch, heads, cache_lens, page_size=64, dtype=torch.float16, device="cpu",
                seed=None):
    """Random q, q_pe, a paged cache KV with a shuffled block table, the
    cache lengths (int32), on `device`; every sequence owns max_pages
    physical pages."""
    gen = torch.Generator(device=device).manual_seed(seed) if seed is not None else None
    max_pages = max(math.ceil(n / page_size) for n in cache_lens)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device).to(dtype)

    q, q_pe = randn(batch, heads, DV), randn(batch, heads, DPE)
    kv = randn(batch * max_pages, page_size, DV + DPE)
    table = torch.randperm(batch * max_pages, generator=gen, device=device)
    table = table.view(batch, max_pages).to(torch.int32)
    lens = torch.tensor(cache_lens, dtype=torch.int32, device=device)
    return q, q_pe, kv, table, lens


def reference(q, q_pe, kv, table, lens, scale=None):
    """O (batch, heads, 512) from the (rounded) inputs: gather each
    sequence's pages, one sequence at a time on their device (float64 on the
    CPU, float32 on a GPU); softmax scale `scale` (default 1/sqrt(576))."""
    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    scale = 1 / math.sqrt(DV + DPE) if scale is None else scale
    page_size = kv.shape[1]
    out = torch.empty(q.shape, dtype=wide, device=q.device)
    for b in range(q.shape[0]):
        n = int(lens[b])
        pages = table[b, :math.ceil(n / page_size)].long()
        cache = kv[pages].reshape(-1, DV + DPE)[:n].to(wide)
        query = torch.cat([q[b], q_pe[b]], dim=-1).to(wide)
        s = query @ cache.T * scale
        out[b] = torch.softmax(s, dim=-1) @ cache[:, :DV]
    return out


class MlaDecode:
    """The two kernels as one call: (q, q_pe, kv, table, lens) -> O. The
    split kernel is `program`'s (mla_decode_roles.MlaDecodeRoles has the
    one with explicit roles). With one split there is nothing to combine:
    the split kernel writes O in the input dtype itself (`direct`) and the
    combine kernel is not run."""

    program = staticmethod(mla_decode_split)

    def __init__(self, batch, heads, num_pages, max_pages, num_splits, target="auto",
                 dtype="float16", **config):
        self.direct = num_splits == 1
        self.shape = (batch, heads, DV)
        self.split = tl.compile(self.program(batch, heads, num_pages, max_pages, num_splits,
                                             dtype=dtype, direct=self.direct, **config),
                                out_idx=[5, 6], target=target)
        self.combine = None if self.direct else tl.compile(
            mla_decode_combine(batch, heads, num_splits, dtype=dtype), out_idx=[2], target=target)
        self.device = self.split.device
        self.target = self.split.target

    def __call__(self, q, q_pe, kv, table, lens):
        o_part, lse_part = self.split(q, q_pe, kv, table, lens)
        if self.direct:
            return o_part.reshape(self.shape)
        return self.combine(o_part, lse_part)
