"""FlashAttention forward: O = softmax(Q K^T / sqrt(D)) V, with the
log-sum-exp of every row (what a backward pass needs).

Tensors are (batch, heads, seq, dim) as torch's scaled_dot_product_attention
takes them; K and V have heads / groups heads (grouped-query attention: query
head h reads KV head h // groups). A block owns `block_M` query rows of one
(batch, head) and walks the KV sequence in `block_N` tiles with the online
softmax: S = Q K^T on the tensor cores into a register fragment, the running
row maximum and sum, the accumulator rescaled by exp(m_old - m_new), P = exp(S
- m) cast to the input dtype, then O += P V. Causal attention stops at the
diagonal and masks the scores above it with -inf. The scale is folded into
exp2 (log2(e) / sqrt(D)).

Offers `flash_attn` (the program), CONFIGS (the tuning space for Hopper),
PASS_CONFIGS (the Hopper schedule), `describe` and `reference` (PyTorch).
"""

import math

import torch

import tilelang_mlir.language as T

from .online_softmax import softmax_finish, softmax_reset, softmax_state, softmax_step

FullRow = T.GemmWarpPolicy.FullRow


def flash_attn(batch, heads, seq_len, dim, is_causal=False, groups=1, block_M=128, block_N=128,
               num_stages=2, threads=256, dtype="float16", heavy_first=None, sm_scale=None,
               stage_o=True, end_aligned=None):
    # stage_o: O goes to global memory through the Q tile's shared memory
    # (coalesced stores, two barriers across the warpgroups), else straight
    # from the registers. end_aligned (default: causal with a partial last
    # block): the blocks end at the sequence's end (see row0 below).
    # softmax(x sm_scale) through exp2; sm_scale defaults to 1 / sqrt(D)
    log2e = math.log2(math.e)
    scale = log2e / math.sqrt(dim) if sm_scale is None else log2e * sm_scale
    q_shape = (batch, heads, seq_len, dim)
    kv_shape = (batch, heads // groups, seq_len, dim)
    accum = "float32"
    mask_tail = seq_len % block_N != 0  # the last KV tile reads zeros past the end
    q_blocks = -(-seq_len // block_M)
    if end_aligned is None:
        end_aligned = is_causal and seq_len % block_M != 0
    end_aligned = end_aligned and seq_len > block_M
    if heavy_first is None:  # causal blocks' work grows with their index
        heavy_first = is_causal

    @T.prim_func
    def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype),
             V: T.Tensor(kv_shape, dtype), O: T.Tensor(q_shape, dtype),
             LSE: T.Tensor((batch, heads, seq_len), accum)):
        with T.Kernel(q_blocks, heads, batch, threads=threads) as (bx_launch, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            S = T.alloc_fragment((block_M, block_N), accum)
            P = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum)
            state = softmax_state(block_M)  # the online softmax's row state

            kv_head = by // groups
            # Causal: the longest blocks first, so the last wave is short.
            bx = q_blocks - 1 - bx_launch if heavy_first else bx_launch
            if end_aligned:
                # The blocks' rows end at the sequence's end; the first block
                # starts at row 0 and overlaps the second (both write the
                # same values there), so no block computes rows past the
                # end, which a causal block would pay for with whole KV
                # tiles of the longest walk.
                row0 = T.max(seq_len - (q_blocks - bx) * block_M, 0)
            else:
                row0 = bx * block_M
            T.copy(Q[bz, by, row0, 0], Q_shared)
            softmax_reset(state, acc_o)
            n_tiles = T.ceildiv(seq_len, block_N)
            if is_causal:  # KV tiles past the block's last row are all masked
                n_tiles = T.min(n_tiles, T.ceildiv(row0 + block_M, block_N))
            for k in T.Pipelined(n_tiles, num_stages=num_stages):
                T.copy(K[bz, kv_head, k * block_N, 0], K_shared)
                T.copy(V[bz, kv_head, k * block_N, 0], V_shared)
                T.clear(S)
                T.gemm(Q_shared, K_shared, S, transpose_B=True, policy=FullRow)
                if is_causal or mask_tail:  # (causal rows never see keys past the end)
                    edge = row0 + 1 if is_causal else seq_len
                    if (k + 1) * block_N > edge:  # only tiles crossing the diagonal or the end
                        for i, j in T.Parallel(block_M, block_N):
                            q_pos, k_pos = row0 + i, k * block_N + j
                            visible = k_pos <= q_pos if is_causal else k_pos < seq_len
                            S[i, j] = T.if_then_else(visible, S[i, j], -T.infinity(accum))
                softmax_step(S, state, acc_o, block_M, block_N, dim, scale)
                T.copy(S, P)
                T.gemm(P, V_shared, acc_o, policy=FullRow)
            softmax_finish(acc_o, state, block_M, dim, scale, empty_rows=False)
            if stage_o:
                T.copy(acc_o, Q_shared)  # Q is done with: stage O for coalesced stores
                T.copy(Q_shared, O[bz, by, row0, 0])
            else:  # from the registers: no barriers between the warpgroups
                T.copy(acc_o, O[bz, by, row0, 0])
            T.copy(state.lse, LSE[bz, by, row0])

    return main


# The tuning space for Hopper (benchmarks/flash_attn.py tries each): query
# rows per block on 64-row warpgroups (a producer warpgroup is added on
# sm_90a), KV rows per step, stages of the K/V ring. Shared memory is
# (block_M + 2 num_stages block_N) * dim * 2 bytes.
CONFIGS = [
    dict(block_M=128, block_N=128, num_stages=2, threads=256),
    dict(block_M=128, block_N=64, num_stages=2, threads=256),
    dict(block_M=128, block_N=128, num_stages=3, threads=256),
    dict(block_M=128, block_N=64, num_stages=4, threads=256),
    dict(block_M=192, block_N=128, num_stages=2, threads=384),
    dict(block_M=64, block_N=128, num_stages=2, threads=128),
]


# The Hopper schedule (sm_90a; other targets ignore these): the consumer loop
# rotated, S_k = Q K_k^T in flight with the previous tile's O += P V while
# the softmax runs, K and V on barrier rings of their own, and the two
# consumer warpgroups taking turns at each iteration's pair of gemms, so one
# warpgroup's softmax runs under the other's gemms. With 128x128 tiles on two
# warpgroups it is the fastest schedule in every case of
# benchmarks/flash_attn.py (BENCHMARKS.md); it is not the default of the
# compiler because three consumer warpgroups (192-row tiles) spill with it.
PASS_CONFIGS = {"tl.enable_rotate": True, "tl.enable_pingpong": True}

# Per-card defaults where the card's measured best differs from the schedule
# above: a substring of the card's name (torch.cuda.get_device_name) ->
# (head dim, causal) -> (config, pass configs). Measured with
# benchmarks/flash_attn.py's sweep (BENCHMARKS.md, H100 2026-12-07): at D=64
# three consumer warpgroups (192-row tiles; no spills at D=64) under the same
# schedule, 483 against 405 TFLOP/s; causal D=128 with three stages and the
# rotated loop without warpgroup turns (tl.rotate_sched_barrier), 515
# against 483 (192-row tiles measured 518 there but spill at D=128). Cards
# not listed (the H200, on which the schedule above was tuned) and other
# cases take CONFIGS[0] and PASS_CONFIGS.
CARD_DEFAULTS = {
    "H100": {
        (64, False): (dict(block_M=192, block_N=128, num_stages=2, threads=384), PASS_CONFIGS),
        (128, True): (dict(block_M=128, block_N=128, num_stages=3, threads=256),
                      {"tl.enable_rotate": True, "tl.rotate_sched_barrier": True}),
    },
}


def default_config(dim, is_causal, card=None):
    """(config, pass configs) of the library's default for a head dim and
    masking on `card` (a device name; None: the schedule above)."""
    for name, table in CARD_DEFAULTS.items():
        if card and name in card and (dim, bool(is_causal)) in table:
            config, passes = table[(dim, bool(is_causal))]
            return dict(config), dict(passes)
    return dict(CONFIGS[0]), dict(PASS_CONFIGS)


def describe(config):
    """'128x128 s2 t256': block_M x block_N, stages, threads (and 'launch
    order' where causal blocks are not taken longest first, 'direct O'
    where O is stored from the registers)."""
    c = config
    order = " launch order" if c.get("heavy_first") is False else ""
    direct = " direct O" if c.get("stage_o") is False else ""
    return f"{c['block_M']}x{c['block_N']} s{c['num_stages']} t{c['threads']}{order}{direct}"


def reference(q, k, v, is_causal=False):
    """(O, LSE) from the (rounded) inputs, one batch element at a time on
    their device: float64 on the CPU, float32 on a GPU (no TF32); K/V heads
    repeated for GQA."""
    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    groups = q.shape[1] // k.shape[1]
    n = q.shape[2]
    hidden = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if is_causal else None
    o = torch.empty(q.shape, dtype=wide, device=q.device)
    lse = torch.empty(q.shape[:3], dtype=wide, device=q.device)
    for b in range(q.shape[0]):
        kb = k[b].to(wide).repeat_interleave(groups, dim=0)
        vb = v[b].to(wide).repeat_interleave(groups, dim=0)
        s = q[b].to(wide) @ kb.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if is_causal:
            s.masked_fill_(hidden, float("-inf"))
        o[b], lse[b] = torch.softmax(s, dim=-1) @ vb, torch.logsumexp(s, dim=-1)
    return o, lse
