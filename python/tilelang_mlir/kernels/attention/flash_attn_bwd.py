"""FlashAttention backward: dQ, dK, dV of O = softmax(Q K^T / sqrt(D)) V
from Q, K, V, O, dO and the natural-log LSE that the forward pass
(`flash_attn.flash_attn`) returns.

Three tile programs, FlashAttention-2 style:
  1. preprocess: Delta = rowsum(O * dO) per query row, and the float32 dQ
     accumulator cleared;
  2. main: a block owns `block_M` KV rows of one (batch, KV head) and walks
     the query blocks of every query head of its group (grouped-query
     attention sums dK, dV over them in registers). It works on the
     transposed scores so that P^T and dS^T are register fragments that feed
     the gemms directly: S^T = K Q^T, P^T = exp2(S^T scale - LSE), dV += P^T
     dO, dP^T = V dO^T, dS^T = P^T (dP^T - Delta), dK += dS^T Q; dQ = dS K
     goes through shared memory (dS^T read transposed) and is added into
     the float32 accumulator with one `T.atomic_add` of the fragment. dS^T
     leaves out the softmax scale: dK is scaled once before it is stored;
  3. postprocess: dQ scaled and cast to the input dtype.
Causal attention starts each KV block's walk at the diagonal and zeroes P
above it in the tiles that cross the diagonal; its blocks launch longest
first over chunks of (KV head, batch) pairs (`block_order`). Sequence
tails need no masks: rows past the end load as zeros (dO, Delta = 0 make
their P, dS contribute nothing) and their stores and atomic adds are
dropped.

Offers the three programs, `bwd_buffers` and `grads_of_tile` (the
buffers and the gradient step both this and the variable-length backward
use), BLOCKS (default tiles per head dim) and HOPPER_BLOCKS (per head dim
and causal flag; `default_blocks` picks between them), CONFIGS
(the tuning space), `describe`, the `FlashAttnBwd` wrapper, `reference`
(torch autograd) and `forward` (the float64 forward's O and LSE).
"""

import math

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T

from . import flash_attn  # the forward reference
from .block_order import heavy_first_blocks

FullRow = T.GemmWarpPolicy.FullRow
LOG2E = math.log2(math.e)


def preprocess(batch, heads, seq_len, dim, block=128, dtype="float16"):
    """Delta[b, h, i] = sum_d O[b, h, i, d] dO[b, h, i, d], and the float32
    dQ accumulator set to zero (outputs 2 and 3)."""
    shape = (batch, heads, seq_len, dim)

    @T.prim_func
    def main(O: T.Tensor(shape, dtype), dO: T.Tensor(shape, dtype),
             Delta: T.Tensor((batch, heads, seq_len), "float32"),
             dQ_accum: T.Tensor(shape, "float32")):
        with T.Kernel(T.ceildiv(seq_len, block), heads, batch, threads=128) as (bx, by, bz):
            o = T.alloc_fragment((block, dim), "float32")
            do = T.alloc_fragment((block, dim), "float32")
            delta = T.alloc_fragment((block,), "float32")
            T.copy(O[bz, by, bx * block, 0], o)
            T.copy(dO[bz, by, bx * block, 0], do)
            for i, j in T.Parallel(block, dim):
                o[i, j] *= do[i, j]
            T.reduce_sum(o, delta, dim=1)
            T.copy(delta, Delta[bz, by, bx * block])
            T.clear(do)
            T.copy(do, dQ_accum[bz, by, bx * block, 0])

    return main


@T.macro
def bwd_buffers(block_M, block_N, dim, dtype):
    """The buffers of a backward block (this file's and the variable-length
    one's): its K and V rows, the query block's Q, dO, LSE and Delta, dS^T
    staged for dq, the score tiles S^T/P^T and dP^T, and the dq, dK, dV
    accumulators."""
    accum = "float32"
    K_shared = T.alloc_shared((block_M, dim), dtype)
    V_shared = T.alloc_shared((block_M, dim), dtype)
    q = T.alloc_shared((block_N, dim), dtype)
    do = T.alloc_shared((block_N, dim), dtype)
    lse = T.alloc_shared((block_N,), accum)
    delta = T.alloc_shared((block_N,), accum)
    dsT_shared = T.alloc_shared((block_M, block_N), dtype)
    qkT = T.alloc_fragment((block_M, block_N), accum)      # S^T, then P^T
    dsT = T.alloc_fragment((block_M, block_N), accum)      # dP^T
    pT = T.alloc_fragment((block_M, block_N), dtype)
    dsT_cast = T.alloc_fragment((block_M, block_N), dtype)
    dq = T.alloc_fragment((block_N, dim), accum)
    dk = T.alloc_fragment((block_M, dim), accum)
    dv = T.alloc_fragment((block_M, dim), accum)
    return K_shared, V_shared, q, do, lse, delta, dsT_shared, qkT, dsT, pT, dsT_cast, dq, dk, dv


@T.macro
def grads_of_tile(K_shared, V_shared, q, do, delta, qkT, dsT, pT, dsT_cast, dsT_shared, dq, dk,
                  dv, block_M, block_N, overlap=False):
    """One (key block, query block) step of the backward once qkT holds P^T
    (masked): dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - Delta), dK +=
    dS^T Q, and dq = dS K (dS^T through shared memory, read transposed),
    which the caller adds into its dQ accumulator. dS^T leaves out the
    softmax scale (one multiply per score saved): the caller scales dK once
    at the end and the postprocess scales dQ. overlap: the caller issued
    dP^T asynchronously (it is waited for here), and dV and dK accumulate
    asynchronously, waited for before dq."""
    if not overlap:
        T.clear(dsT)
        T.gemm(V_shared, do, dsT, transpose_B=True, policy=FullRow)
    T.copy(qkT, pT)
    if overlap:
        T.wait_wgmma(0)
    T.gemm(pT, do, dv, policy=FullRow, wg_wait=-1 if overlap else 0)  # while dS^T is computed
    for i, j in T.Parallel(block_M, block_N):
        dsT_cast[i, j] = qkT[i, j] * (dsT[i, j] - delta[j])
    T.gemm(dsT_cast, q, dk, policy=FullRow, wg_wait=-1 if overlap else 0)
    T.copy(dsT_cast, dsT_shared)  # (the gemms in flight only read pT, dsT_cast)
    if overlap:
        T.wait_wgmma(0)
    T.clear(dq)
    T.gemm(dsT_shared, K_shared, dq, transpose_A=True)


def flash_attn_bwd(batch, heads, seq_len, dim, is_causal=False, groups=1, block_M=64, block_N=64,
                   num_stages=2, threads=128, dtype="float16", sm_scale=None, dq_tma=False,
                   overlap=False, heavy_first=None, dkv_tile=False):
    """dK, dV (outputs 8 and 9) and dQ accumulated into dQ_accum (float32,
    without the softmax scale) of one KV block per (block, KV head, batch).
    sm_scale: the forward's softmax scale (default 1 / sqrt(D)). dq_tma: each step's dq
    goes into a float32 shared tile and into dQ_accum as one TMA reduce-add
    (`T.atomic_add(..., use_tma=True)`, sm_90+) instead of per-thread
    atomics of the fragment. overlap: the gemms run asynchronously where
    the next step does not need their result (wgmma targets): S^T and dP^T
    are issued together and P^T computed while dP^T is in flight, dV +=
    P^T dO runs while dS^T is computed, dK += dS^T Q while dS^T is staged
    in shared memory. heavy_first (default: causal): the blocks launch
    longest first over chunks of (KV head, batch) pairs
    (`block_order.heavy_first_blocks`), else in grid order (a head's longest
    first). dkv_tile: dK and dV are copied from their fragments (on sm_90a
    the compiler stages them in a shared tile of its own and stores them by
    TMA) instead of through the K and V tiles, so that nothing reads K and V
    after the loop: a persistent walk (`tl.persistent_sms`) then holds one
    K/V slot, freed when the loop ends, and loads the next tile's K and V
    during this tile's epilogue, where two slots would not fit (D=128)."""
    if heads % groups:
        raise ValueError(f"flash_attn_bwd: heads ({heads}) must be a multiple of groups ({groups})")
    # P = exp2(S scale - LSE log2(e))
    scale = LOG2E / math.sqrt(dim) if sm_scale is None else LOG2E * sm_scale
    ds_scale = 1 / math.sqrt(dim) if sm_scale is None else sm_scale  # of dK
    q_shape = (batch, heads, seq_len, dim)
    kv_shape = (batch, heads // groups, seq_len, dim)
    accum = "float32"
    kv_blocks = -(-seq_len // block_M)
    if heavy_first is None:  # causal blocks' work shrinks with their index
        heavy_first = is_causal

    @T.prim_func
    def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype),
             V: T.Tensor(kv_shape, dtype), dO: T.Tensor(q_shape, dtype),
             LSE: T.Tensor((batch, heads, seq_len), accum),
             Delta: T.Tensor((batch, heads, seq_len), accum),
             dQ_accum: T.Tensor(q_shape, accum),
             dK: T.Tensor(kv_shape, dtype), dV: T.Tensor(kv_shape, dtype)):
        with T.Kernel(kv_blocks, heads // groups, batch,
                      threads=threads) as (bx_launch, by_launch, bz_launch):
            if heavy_first:
                bx, by, bz = heavy_first_blocks(bx_launch, by_launch, bz_launch, kv_blocks,
                                                heads // groups, batch)
            else:
                bx, by, bz = bx_launch, by_launch, bz_launch
            (K_shared, V_shared, q, do, lse, delta, dsT_shared, qkT, dsT, pT, dsT_cast, dq, dk,
             dv) = bwd_buffers(block_M, block_N, dim, dtype)
            if dq_tma:
                dq_shared = T.alloc_shared((block_N, dim), accum)

            T.copy(K[bz, by, bx * block_M, 0], K_shared)
            T.copy(V[bz, by, bx * block_M, 0], V_shared)
            T.clear(dk)
            T.clear(dv)
            first = bx * block_M // block_N if is_causal else 0  # the diagonal's Q block
            per_head = T.ceildiv(seq_len, block_N) - first
            for t in T.Pipelined(groups * per_head, num_stages=num_stages):
                h = by * groups + t // per_head  # query head and Q block of this step
                k = first + t % per_head
                T.copy(Q[bz, h, k * block_N, 0], q)
                T.copy(dO[bz, h, k * block_N, 0], do)
                T.copy(LSE[bz, h, k * block_N], lse)
                T.copy(Delta[bz, h, k * block_N], delta)
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True, policy=FullRow,
                       wg_wait=-1 if overlap else 0)
                if overlap:  # dP^T = V dO^T in flight while P^T is computed
                    T.clear(dsT)
                    T.gemm(V_shared, do, dsT, transpose_B=True, policy=FullRow, wg_wait=1)
                for i, j in T.Parallel(block_M, block_N):
                    qkT[i, j] = T.exp2(qkT[i, j] * scale - lse[j] * LOG2E)
                if is_causal:
                    if k * block_N < (bx + 1) * block_M:  # only tiles crossing the diagonal
                        for i, j in T.Parallel(block_M, block_N):
                            visible = bx * block_M + i <= k * block_N + j
                            qkT[i, j] = T.if_then_else(visible, qkT[i, j], 0)
                grads_of_tile(K_shared, V_shared, q, do, delta, qkT, dsT, pT, dsT_cast,
                              dsT_shared, dq, dk, dv, block_M, block_N, overlap)
                if dq_tma:
                    T.copy(dq, dq_shared)
                    T.atomic_add(dQ_accum[bz, h, k * block_N, 0], dq_shared, use_tma=True)
                else:
                    T.atomic_add(dQ_accum[bz, h, k * block_N, 0], dq)
            if dkv_tile:  # through the compiler's staging tile (TMA stores)
                for i, j in T.Parallel(block_M, dim):
                    dk[i, j] = dk[i, j] * ds_scale
                T.copy(dk, dK[bz, by, bx * block_M, 0])
                T.copy(dv, dV[bz, by, bx * block_M, 0])
            else:
                for i, j in T.Parallel(block_M, dim):  # staged for coalesced stores
                    K_shared[i, j] = dk[i, j] * ds_scale
                T.copy(K_shared, dK[bz, by, bx * block_M, 0])
                T.copy(dv, V_shared)
                T.copy(V_shared, dV[bz, by, bx * block_M, 0])

    return main


def postprocess(batch, heads, seq_len, dim, block=128, dtype="float16", sm_scale=None):
    """dQ (output 1) = dQ_accum times the softmax scale (sm_scale, default
    1 / sqrt(D): the main kernel leaves it out of dS), cast to the input
    dtype."""
    shape = (batch, heads, seq_len, dim)
    scale = 1 / math.sqrt(dim) if sm_scale is None else sm_scale

    @T.prim_func
    def main(dQ_accum: T.Tensor(shape, "float32"), dQ: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block), heads, batch, threads=128) as (bx, by, bz):
            acc = T.alloc_fragment((block, dim), "float32")
            out = T.alloc_fragment((block, dim), dtype)
            T.copy(dQ_accum[bz, by, bx * block, 0], acc)
            for i, j in T.Parallel(block, dim):
                out[i, j] = acc[i, j] * scale
            T.copy(out, dQ[bz, by, bx * block, 0])

    return main


# Default tiles per head dim (dK, dV and two score tiles live in registers:
# these compile without spills for sm_80 and sm_90a); benchmarks/
# flash_attn_bwd.py tries each of CONFIGS.
BLOCKS = {64: dict(block_M=64, block_N=64, threads=128),
          128: dict(block_M=64, block_N=64, threads=256)}
_LOOP_TID = {"tl.enable_loop_thread_index": True}
_NARROW = {"tl.narrow_index": True}
_TILES = {"tl.producer_tile_copies": True}
# A persistent walk whose K/V slot is freed when the loop ends (with
# `dkv_tile`: one slot fits at D=128).
_EARLY = {"tl.early_tile_release": True}
# Hopper (wgmma and TMA): 128 key rows a block over two consumer warpgroups,
# dq by TMA reduce-add; per (head dim, causal), the fastest of CONFIGS on the
# H200 (BENCHMARKS.md 2026-12-03; at D=64 causal `overlap` read 352, 400 and
# 366 TFLOP/s in three runs, without it 374, 383 and 378). At D=64 the
# kernel may run as a persistent walk (K and V fit twice); causal, the
# walk read 374 against 382 as launched (overlap: 347 against 393,
# BENCHMARKS.md 2026-12-03 evening), so it is launched one block a tile.
# At D=128 the index arithmetic is 32-bit (`tl.narrow_index`): ptxas
# spills nothing (64-bit: 4 / 8 bytes full, 28 / 24 causal), and in
# interleaved rounds it read 487 / 431 TFLOP/s against 492 / 421
# (BENCHMARKS.md 2026-12-03 night). The kernels launched one block a tile
# have the TMA producer copy K and V (`tl.producer_tile_copies`) instead of
# the consumers' threads: in two A/B runs of 5 and 7 rounds (the second in
# reverse order) causal read 1-3% faster and full level to 2.6% faster
# (BENCHMARKS.md 2026-12-04, runs AI-AJ). A persistent D=128 walk (dK and
# dV stored by TMA from their fragments, `dkv_tile`, one K/V slot freed
# after the loop, `tl.early_tile_release`; in CONFIGS) read -0.6% to +2.8%
# against these launched tiles in five A/B comparisons on one machine but
# 1-4% below them in the benchmark on another (BENCHMARKS.md 2026-12-04
# evening, runs AS-AT); causal, the static walk read 7% slower than the
# launched heavy-first order (run AR). FlashAttnBwd takes these on such a
# target.
HOPPER_BLOCKS = {(64, False): dict(block_M=128, block_N=128, threads=256, dq_tma=True,
                                   overlap=True, pass_configs=_LOOP_TID),
                 (64, True): dict(block_M=128, block_N=128, threads=256, dq_tma=True,
                                  pass_configs=dict(_LOOP_TID, **_TILES,
                                                    **{"tl.persistent_sms": 0})),
                 (128, False): dict(block_M=128, block_N=64, threads=256, dq_tma=True,
                                    pass_configs=dict(_NARROW, **_TILES)),
                 (128, True): dict(block_M=128, block_N=64, threads=256, dq_tma=True,
                                   overlap=True, pass_configs=dict(_NARROW, **_TILES))}
CONFIGS = [
    dict(block_M=64, block_N=64, threads=128),
    dict(block_M=64, block_N=64, threads=256),
    dict(block_M=64, block_N=128, threads=256),
    dict(block_M=128, block_N=64, threads=256),
    dict(block_M=128, block_N=128, threads=256),
    dict(block_M=64, block_N=64, num_stages=1, threads=128),
    dict(block_M=64, block_N=64, threads=256, dq_tma=True),
    dict(block_M=64, block_N=64, threads=128, dq_tma=True),
    dict(block_M=128, block_N=64, threads=256, dq_tma=True),
    dict(block_M=64, block_N=128, threads=256, dq_tma=True),
    dict(block_M=128, block_N=128, threads=256, dq_tma=True),
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, overlap=True),
    dict(block_M=128, block_N=64, threads=256, overlap=True),
    dict(block_M=128, block_N=128, threads=256, overlap=True),
    # The loop's addresses recomputed in the loop: no spills at 128x64 (D=128)
    # and less at 128x128 (D=64), but more instructions.
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, pass_configs=_LOOP_TID),
    dict(block_M=128, block_N=128, threads=256, pass_configs=_LOOP_TID),
    dict(block_M=128, block_N=128, threads=256, dq_tma=True, pass_configs=_LOOP_TID),
    dict(block_M=128, block_N=128, threads=256, dq_tma=True, overlap=True, pass_configs=_LOOP_TID),
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, overlap=True, pass_configs=_LOOP_TID),
    # 32-bit index arithmetic (fewer instructions, no spills at D=128; the
    # D=128 defaults).
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, pass_configs=_NARROW),
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, overlap=True, pass_configs=_NARROW),
    dict(block_M=128, block_N=64, threads=256, dq_tma=True,
         pass_configs=dict(_LOOP_TID, **_NARROW)),
    # The TMA producer at 40 registers (the consumers at 232) instead of the
    # default 24 (240).
    dict(block_M=128, block_N=64, threads=256, dq_tma=True,
         pass_configs={"tl.producer_registers": 40}),
    dict(block_M=128, block_N=128, threads=256, dq_tma=True,
         pass_configs=dict(_LOOP_TID, **{"tl.producer_registers": 40})),
    # Every fourth exp2 of P on the FMA pipe (tile-emulate-exp2; 3-6%
    # slower at D=64, BENCHMARKS.md 2026-12-03).
    dict(block_M=128, block_N=128, threads=256, dq_tma=True, overlap=True,
         pass_configs=dict(_LOOP_TID, **{"tl.exp2_emulation": 4})),
    # Causal KV blocks in grid order (each head's longest first) instead of
    # longest first over chunks of (KV head, batch) pairs (the default).
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, overlap=True, pass_configs=_NARROW,
         heavy_first=False),
    # The D=64 Hopper tiles launched one block a tile, not as a persistent
    # walk (the D=128 tiles never walk: K and V do not fit twice).
    dict(block_M=128, block_N=128, threads=256, dq_tma=True, overlap=True,
         pass_configs=dict(_LOOP_TID, **{"tl.persistent_sms": 0})),
    dict(block_M=128, block_N=128, threads=256, dq_tma=True,
         pass_configs=dict(_LOOP_TID, **{"tl.persistent_sms": 0})),
    # K and V copied by the TMA producer (the defaults of the launched
    # kernels) next to the same tiles copying them with the consumers.
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, pass_configs=dict(_NARROW, **_TILES)),
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, overlap=True,
         pass_configs=dict(_NARROW, **_TILES)),
    dict(block_M=128, block_N=128, threads=256, dq_tma=True,
         pass_configs=dict(_LOOP_TID, **_TILES, **{"tl.persistent_sms": 0})),
    # dK and dV stored from their fragments (by TMA in a persistent walk),
    # K and V freed after the loop: at D=128 a persistent walk on one K/V
    # slot, at D=64 on two.
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, dkv_tile=True,
         pass_configs=dict(_NARROW, **_LOOP_TID, **_EARLY)),
    dict(block_M=128, block_N=64, threads=256, dq_tma=True, overlap=True, dkv_tile=True,
         pass_configs=dict(_NARROW, **_LOOP_TID, **_EARLY)),
    dict(block_M=128, block_N=128, threads=256, dq_tma=True, overlap=True, dkv_tile=True,
         pass_configs=dict(_LOOP_TID, **_EARLY)),
]


def describe(config):
    """'64x64 s2 t128': block_M (KV) x block_N (Q), stages, threads (and
    dq-tma: dq added by TMA reduce-add; overlap: asynchronous gemms; grid
    order: causal blocks not taken longest first over chunks of heads; then
    any pass configs)."""
    c = config
    return (f"{c['block_M']}x{c['block_N']} s{c.get('num_stages', 2)} t{c['threads']}" +
            (" dq-tma" if c.get("dq_tma") else "") + (" overlap" if c.get("overlap") else "") +
            (" grid order" if c.get("heavy_first") is False else "") +
            (" dkv-tile" if c.get("dkv_tile") else "") +
            "".join(f" {k.removeprefix('tl.')}" + ("" if v is True else f"={v}")
                    for k, v in (c.get("pass_configs") or {}).items()))


def default_blocks(dim, is_causal, wgmma):
    """The main kernel's default tiles (flash_attn_bwd's keywords, with
    its pass_configs): HOPPER_BLOCKS on a wgmma target, else BLOCKS."""
    return dict(HOPPER_BLOCKS.get((dim, bool(is_causal)), {}) if wgmma
                else BLOCKS.get(dim, {}))


class FlashAttnBwd:
    """The three kernels of one problem, compiled for `target`; call with
    (q, k, v, o, do, lse) to get (dq, dk, dv). The main kernel's tiles:
    `blocks` (flash_attn_bwd's keywords) when given, else HOPPER_BLOCKS on
    a wgmma target and BLOCKS elsewhere; pass_configs: the main kernel's
    (by default those of the default tiles)."""

    def __init__(self, batch, heads, seq_len, dim, is_causal=False, groups=1, dtype="float16",
                 target="auto", sm_scale=None, pass_configs=None, **blocks):
        self.pre = tl.compile(preprocess(batch, heads, seq_len, dim, dtype=dtype),
                              out_idx=[2, 3], target=target)
        if not blocks:
            chip = self.pre.target.chip
            blocks = default_blocks(dim, is_causal, bool(chip and chip.wgmma))
            default_passes = blocks.pop("pass_configs", None)
            if pass_configs is None:
                pass_configs = default_passes
        self.main = tl.compile(flash_attn_bwd(batch, heads, seq_len, dim, is_causal, groups,
                                              dtype=dtype, sm_scale=sm_scale, **blocks),
                               out_idx=[7, 8], target=self.pre.target,
                               pass_configs=pass_configs)
        self.post = tl.compile(postprocess(batch, heads, seq_len, dim, dtype=dtype,
                                           sm_scale=sm_scale),
                               out_idx=[1], target=self.pre.target)
        self.target, self.device = self.pre.target, self.pre.device

    def __call__(self, q, k, v, o, do, lse):
        delta, dq_accum = self.pre(o, do)
        dk, dv = self.main(q, k, v, do, lse, delta, dq_accum)
        return self.post(dq_accum), dk, dv


def reference(q, k, v, do, is_causal=False):
    """(dQ, dK, dV) by torch autograd through the attention of the (rounded)
    inputs: float64 on the CPU, float32 on a GPU (no TF32); K/V heads
    repeated for GQA, so their gradients sum over each group."""
    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    groups = q.shape[1] // k.shape[1]
    n = q.shape[2]
    hidden = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if is_causal else None
    grads = [torch.empty(x.shape, dtype=wide, device=q.device) for x in (q, k, v)]
    for b in range(q.shape[0]):  # one batch element at a time bounds the memory
        qb, kb, vb = (x[b].to(wide).requires_grad_() for x in (q, k, v))
        s = qb @ kb.repeat_interleave(groups, dim=0).transpose(-1, -2) / math.sqrt(q.shape[-1])
        if is_causal:
            s = s.masked_fill(hidden, float("-inf"))
        o = torch.softmax(s, dim=-1) @ vb.repeat_interleave(groups, dim=0)
        for g, x in zip(grads, torch.autograd.grad(o, (qb, kb, vb), do[b].to(wide))):
            g[b] = x
    return tuple(grads)


def forward(q, k, v, is_causal):
    """O (rounded to the input dtype) and the natural-log LSE in float32 (the
    inputs the backward pass takes): flash_attn.reference, cast."""
    o, lse = flash_attn.reference(q, k, v, is_causal)
    return o.to(q.dtype), lse.float()
