"""Flash decoding: one query token per sequence attending to a long KV
cache, split along the cache (split-KV) so that a small batch still fills
the GPU, then a combine kernel.

Q is (batch, heads, dim); the cache has kv_heads = heads / groups heads
(grouped-query attention: query head h reads KV head h // groups) and each
sequence its own length (`cache_seqlens`, int32). Two cache layouts:

- contiguous: K and V (batch, kv_heads, max_seq, dim);
- paged: K and V (num_pages, kv_heads, page_size, dim) and a block table
  (batch x max_pages, int32) mapping a sequence's logical pages to physical
  ones, as in mla_decode.py. The contiguous cache is the paged one with one
  page of max_seq tokens per sequence (the table is then arange(batch)), so
  one kernel serves both; built for a contiguous cache (`contiguous`, as
  FlashDecode does) it reads page b for sequence b without loading the
  table.

The split kernel owns one KV head of one sequence and one of `num_splits`
shares of its KV tiles (`block_N` tokens). The `groups` query heads that
read this KV head are the rows of the score gemm (padded to `block_H`: 16
or 32 rows on warp-level mma, 64 on a Hopper warpgroup gemm): the tensor
cores compute Q
K^T and P V for all of them from one read of the cache, which is what bounds
decoding (it is memory-bound). Q is viewed as (batch, kv_heads, groups, dim):
rows past `groups` read as zero and their outputs are dropped. The kernel
runs the online softmax (online_softmax.py, shared with flash_attn.py and
mla_decode.py) and writes a float32 partial O and LSE; the combine kernel
weighs the partials by exp(lse_s - lse). A split with no tiles (a sequence
shorter than the others' splits) gives LSE -inf and weighs nothing.

Offers `flash_decode_split` (the program; the combine kernel is
`online_softmax.splitkv_combine`), HOPPER and RESIDENT2 with CP_ASYNC (its
configs),
`default_splits`, the `FlashDecode` wrapper, `make_inputs`, `gather` and
`reference`.
"""

import math

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T

from .online_softmax import (mask_past_end, page_of, softmax_finish, softmax_reset,
                             softmax_state, softmax_step, split_tiles, splitkv_combine)

FullRow = T.GemmWarpPolicy.FullRow


def flash_decode_split(batch, heads, kv_heads, dim, num_pages, page_size, max_pages, num_splits,
                       block_H=None, block_N=128, num_stages=2, threads=128, dtype="float16",
                       sm_scale=None, direct=False, contiguous=False):
    """The split kernel. A contiguous cache is num_pages = batch, page_size =
    max_seq, max_pages = 1 (and the identity block table); with
    `contiguous` the kernel reads sequence b's tokens from page b without
    loading the table (whose load each KV tile would otherwise wait for
    before issuing its copies). block_H (the
    gemm rows) defaults to the smallest of 16, 32, 64 that holds the group:
    16 and 32 rows are warp-level mma, 64 a Hopper warpgroup gemm. With
    `direct` (one split only) O_part is O itself, in dtype: there is
    nothing to combine."""
    if direct and num_splits != 1:
        raise tl.TileLangError(f"flash_decode: direct output needs one split, not {num_splits}")
    if heads % kv_heads:
        raise tl.TileLangError(f"flash_decode: {heads} query heads are not a multiple of "
                               f"{kv_heads} KV heads")
    groups = heads // kv_heads
    if block_H is None:
        block_H = next((n for n in (16, 32, 64) if n >= groups), groups)
    if groups > block_H:
        raise tl.TileLangError(f"flash_decode: {groups} query heads per KV head do not fit "
                               f"block_H = {block_H} rows")
    if contiguous and (max_pages != 1 or num_pages != batch):
        raise tl.TileLangError(f"flash_decode: a contiguous cache has one page a sequence, "
                               f"not {num_pages} pages of which {max_pages} a sequence")
    if max_pages > 1 and page_size % block_N:
        raise tl.TileLangError(f"flash_decode: a KV tile of {block_N} tokens must lie within "
                               f"one page of {page_size}")
    # softmax(x sm_scale) through exp2; sm_scale defaults to 1 / sqrt(D)
    log2e = math.log2(math.e)
    scale = log2e / math.sqrt(dim) if sm_scale is None else log2e * sm_scale
    accum = "float32"
    kv_shape = (num_pages, kv_heads, page_size, dim)

    @T.prim_func
    def main(Q: T.Tensor((batch, kv_heads, groups, dim), dtype), K: T.Tensor(kv_shape, dtype),
             V: T.Tensor(kv_shape, dtype), block_table: T.Tensor((batch, max_pages), "int32"),
             cache_seqlens: T.Tensor((batch,), "int32"),
             O_part: T.Tensor((batch, num_splits, kv_heads, groups, dim),
                             dtype if direct else accum),
             LSE_part: T.Tensor((batch, num_splits, kv_heads, groups), accum)):
        with T.Kernel(batch, kv_heads, num_splits, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_H, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            S = T.alloc_fragment((block_H, block_N), accum)
            P = T.alloc_fragment((block_H, block_N), dtype)
            acc_o = T.alloc_fragment((block_H, dim), accum)
            state = softmax_state(block_H)  # the online softmax's row state

            seqlen, first, n_tiles = split_tiles(cache_seqlens, bx, bz, num_splits, block_N)
            T.copy(Q[bx, by, 0, 0], Q_shared)  # the group's query heads; zero rows past it
            softmax_reset(state, acc_o)
            for k in T.Pipelined(n_tiles, num_stages=num_stages):
                token = (first + k) * block_N
                page = bx if contiguous else page_of(block_table, bx, token, page_size)
                row = token if contiguous else token % page_size
                T.copy(K[page, by, row, 0], K_shared)
                T.copy(V[page, by, row, 0], V_shared)
                T.clear(S)
                T.gemm(Q_shared, K_shared, S, transpose_B=True, policy=FullRow)
                mask_past_end(S, token, seqlen, block_H, block_N)
                softmax_step(S, state, acc_o, block_H, block_N, dim, scale)
                T.copy(S, P)
                T.gemm(P, V_shared, acc_o, policy=FullRow)
            softmax_finish(acc_o, state, block_H, dim, scale, empty_rows=True)
            T.copy(acc_o, O_part[bx, bz, by, 0, 0])  # (rows past the group are dropped)
            T.copy(state.lse, LSE_part[bx, bz, by, 0])

    return main


# KV tiles of 128 tokens in 2 stages (the default): Q (16 x 128) and the
# K/V ring are 137 KB of shared memory at D = 128, which sm_80 has too.
HOPPER = dict(block_N=128, num_stages=2)
# What ops.flash_decode runs on NVIDIA GPUs: 64-token tiles in 3 stages,
# loaded by every thread with cp.async (CP_ASYNC: no TMA, no producer
# warpgroup), 100 KB of shared memory and 128 registers at D = 128, so two
# blocks share a multiprocessor; with twice the one-wave split count
# (default_splits(..., waves=2)) it is within 6% of the fastest config in
# every case of benchmarks/flash_decode.py on the H200 and the fastest in 10
# of the 18 (BENCHMARKS.md 2026-12-02). Multi-head decoding of many
# blocks runs it on two warps (ops._decode_config).
RESIDENT2 = dict(block_N=64, num_stages=3)
CP_ASYNC = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}
# The same with num_stages - 1 K/V slots, each copy into the slot its
# step's gemm just read (tl.pipeline_reuse_slots).
CP_ASYNC_REUSE = dict(CP_ASYNC, **{"tl.pipeline_reuse_slots": True})


def default_splits(batch, kv_heads, max_seq, block_N=128, sms=132, waves=1):
    """Splits for at most `waves` waves of (sequence, KV head, split)
    blocks over `sms` multiprocessors (at least one split, no more than KV
    tiles). One wave: the split kernel holds one block a multiprocessor,
    and on the H200 one wave beats two (benchmarks/flash_decode.py, batch
    1: 16 splits of 8 KV heads 14.8 us against 18.0 for 32, at 4096 tokens;
    BENCHMARKS.md 2026-12-02)."""
    return max(1, min(math.ceil(max_seq / block_N), waves * sms // (batch * kv_heads)))


class FlashDecode:
    """The split and combine kernels as one call:
    (q, k, v, cache_seqlens[, block_table]) -> O (batch, heads, dim). With
    one split the split kernel writes O itself and no combine runs.

    Contiguous cache (page_size None): k, v (batch, kv_heads, max_seq, dim).
    Paged (page_size given): k, v (num_pages, kv_heads, page_size, dim) and
    a block table (batch, max_pages). `pass_configs` go to the split
    kernel's compile."""

    def __init__(self, batch, heads, kv_heads, dim, max_seq=None, num_splits=None,
                 page_size=None, num_pages=None, max_pages=None, target="auto",
                 dtype="float16", pass_configs=None, **config):
        self.paged = page_size is not None
        if self.paged:
            if num_pages is None or max_pages is None:
                raise tl.TileLangError("flash_decode: a paged cache needs num_pages and max_pages")
        elif max_seq is None:
            raise tl.TileLangError("flash_decode: give max_seq (contiguous cache) or page_size")
        else:
            page_size, num_pages, max_pages = max_seq, batch, 1
        if num_splits is None:
            num_splits = default_splits(batch, kv_heads, page_size * max_pages,
                                        config.get("block_N", 128))
        self.batch, self.heads, self.kv_heads, self.dim = batch, heads, kv_heads, dim
        self.num_splits = num_splits
        self.direct = num_splits == 1
        self.split = tl.compile(
            flash_decode_split(batch, heads, kv_heads, dim, num_pages, page_size, max_pages,
                               num_splits, dtype=dtype, direct=self.direct,
                               contiguous=not self.paged, **config),
            out_idx=[5, 6], target=target, pass_configs=pass_configs)
        self.combine = None if self.direct else tl.compile(
            splitkv_combine(batch, heads, num_splits, dim, dtype=dtype), out_idx=[2],
            target=target)
        self.device = self.split.device
        self.target = self.split.target
        self._identity = None

    def split_args(self, q, k, v, cache_seqlens, block_table=None):
        """The split kernel's arguments (q viewed per KV head, the identity
        block table of a contiguous cache)."""
        B, H, KVH, D = self.batch, self.heads, self.kv_heads, self.dim
        if tuple(q.shape) != (B, H, D):
            raise tl.TileLangError(f"flash_decode: q is {tuple(q.shape)}, expected {(B, H, D)}")
        if self.paged != (block_table is not None):
            raise tl.TileLangError("flash_decode: a block table goes with a paged cache "
                                   "and only with one")
        if block_table is None:
            if self._identity is None or self._identity.device != cache_seqlens.device:
                self._identity = torch.arange(B, dtype=torch.int32,
                                              device=cache_seqlens.device).view(B, 1)
            block_table = self._identity
        return q.reshape(B, KVH, H // KVH, D), k, v, block_table, cache_seqlens

    def combine_args(self, o_part, lse_part):
        B, S, H, D = self.batch, self.num_splits, self.heads, self.dim
        return o_part.reshape(B, S, H, D), lse_part.reshape(B, S, H)

    def __call__(self, q, k, v, cache_seqlens, block_table=None):
        parts = self.split(*self.split_args(q, k, v, cache_seqlens, block_table))
        if self.direct:
            return parts[0].reshape(self.batch, self.heads, self.dim)
        return self.combine(*self.combine_args(*parts))


def make_inputs(batch, heads, kv_heads, dim, cache_lens, page_size=None, dtype=torch.float16,
                device="cpu", seed=None):
    """Random q (batch, heads, dim), a cache k, v (contiguous of max(lens)
    tokens, or paged with a shuffled block table, every sequence owning
    max_pages physical pages), the cache lengths (int32), and the block
    table (None when contiguous)."""
    gen = torch.Generator(device=device).manual_seed(seed) if seed is not None else None

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device).to(dtype)

    max_seq = max(cache_lens)
    q = randn(batch, heads, dim)
    lens = torch.tensor(cache_lens, dtype=torch.int32, device=device)
    if page_size is None:
        return q, randn(batch, kv_heads, max_seq, dim), randn(batch, kv_heads, max_seq, dim), \
            lens, None
    max_pages = math.ceil(max_seq / page_size)
    k = randn(batch * max_pages, kv_heads, page_size, dim)
    v = randn(batch * max_pages, kv_heads, page_size, dim)
    table = torch.randperm(batch * max_pages, generator=gen, device=device)
    return q, k, v, lens, table.view(batch, max_pages).to(torch.int32)


def gather(cache, b, n, table=None):
    """Sequence b's first n tokens of a cache: (kv_heads, n, dim)."""
    if table is None:
        return cache[b, :, :n]
    page_size = cache.shape[2]
    pages = table[b, :math.ceil(n / page_size)].long()
    return cache[pages].transpose(0, 1).reshape(cache.shape[1], -1, cache.shape[3])[:, :n]


def reference(q, k, v, lens, table=None, scale=None):
    """O (batch, heads, dim) from the (rounded) inputs, one sequence at a
    time on their device: float64 on the CPU, float32 on a GPU; KV heads
    repeated for GQA; softmax scale `scale` (default 1/sqrt(dim))."""
    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    groups = q.shape[1] // k.shape[1]
    out = torch.empty(q.shape, dtype=wide, device=q.device)
    for b in range(q.shape[0]):
        n = int(lens[b])
        kb = gather(k, b, n, table).to(wide).repeat_interleave(groups, dim=0)  # (H, n, D)
        vb = gather(v, b, n, table).to(wide).repeat_interleave(groups, dim=0)
        s = (kb @ q[b].to(wide).unsqueeze(-1)).squeeze(-1) * scale  # (H, n)
        out[b] = (torch.softmax(s, dim=-1).unsqueeze(1) @ vb).squeeze(1)
    return out
