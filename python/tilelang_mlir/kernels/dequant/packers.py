"""The packed weight formats of the dequant kernels, on the host: their
rules (`check_shapes` and its GEMV and word-packed variants: clear errors
instead of wrong results), `quantize` (per-group symmetric int4/int8 into
the base format), the offline repackings each kernel reads (`pack_words`,
`pack_pairs`, `pack_pairs_mma`, `pack_pairs_mma_tiled`, `pack_scales`,
`tile_scales`) with their inverses, `inputs_for` (the arguments a config's
kernel takes), `dequantize`, `reference` and `random_problem`. The formats
are described in the package docstring (`tilelang_mlir.kernels.dequant`).
"""

import torch

from tilelang_mlir.runtime.arrays import to_device


def check_gemv_shapes(N, K, bits, group, block_K):
    """The GEMV's steps may span several groups: block_K divides the group
    size or is a multiple of it, and the stored row splits into steps."""
    check_shapes(N, K, bits, group, group)
    if group % block_K and block_K % group:
        raise ValueError(f"block_K = {block_K} must divide the group size {group} or be a "
                         f"multiple of it")
    span = K // 2 if bits == 4 else K
    if span % block_K:
        raise ValueError(f"K = {K} does not split into steps of block_K = {block_K} bytes")


def check_packed_shapes(N, K, bits, group, block_K, word):
    """The word-packed format's rules: P slices of K (P = word bits / bits),
    each whole groups; steps of block_K words within one group."""
    if word not in ("int64", "int32"):
        raise ValueError(f"word must be int64 or int32, got {word}")
    check_shapes(N, K, bits, group, group)
    parts = (64 if word == "int64" else 32) // bits
    if K % (parts * group):
        raise ValueError(f"K = {K} does not split into {parts} slices of whole groups "
                         f"({group}) for {word} words of int{bits}")
    if group % block_K:
        raise ValueError(f"block_K = {block_K} must divide the group size {group}")


def check_shapes(N, K, bits, group, block_K):
    """The rules of the packed format and the tiles (clear errors instead
    of wrong results): whole groups, each half of K (int4) whole groups,
    tiles of K within one group and whole tiles."""
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if group <= 0 or K % group:
        raise ValueError(f"K = {K} is not a multiple of the group size {group}")
    if bits == 4 and (K // 2) % group:
        raise ValueError(f"int4: each half of K ({K // 2}) must be a multiple of the group "
                         f"size {group}")
    if group % block_K:
        raise ValueError(f"block_K = {block_K} must divide the group size {group}")
    span = K // 2 if bits == 4 else K
    if span % block_K:
        raise ValueError(f"K = {K} does not split into tiles of block_K = {block_K}")


# Tile configurations: decode (M <= 16) and prefill. The benchmark tunes over
# each list; the first entry is the default. block_K divides the group size
# (128), so each row of a W tile has one scale (two for int4: one per half).
# M = 1 also tries the GEMV kernel (configs without block_M).
# M = 1: the pair GEMV (float16; the first is the default, 12.2-12.5 us cold
# at int4 1x8192x8192 on the H200, BENCHMARKS.md), then the chunked float32

def quantize(w, bits=4, group=128):
    """Symmetric per-group quantization of a float (N, K) torch tensor.
    Returns (Wq, S) in the packed format above, S in w's dtype."""
    if w.dim() != 2:
        raise ValueError(f"expected a 2-D weight, got shape {tuple(w.shape)}")
    N, K = w.shape
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if K % group:
        raise ValueError(f"K = {K} is not a multiple of the group size {group}")
    qmax = 7 if bits == 4 else 127
    g = w.float().reshape(N, K // group, group)
    scale = (g.abs().amax(dim=2) / qmax).clamp_min(1e-8).to(w.dtype)  # rounded like the kernel's
    q = torch.round(g / scale.float()[:, :, None]).clamp(-qmax - 1, qmax).to(torch.int32)
    q = q.reshape(N, K)
    if bits == 8:
        return q.to(torch.int8).contiguous(), scale.contiguous()
    if (K // 2) % group:
        raise ValueError(f"int4: each half of K ({K // 2}) must be a multiple of the group "
                         f"size {group}")
    nib = (q + 8).to(torch.uint8)
    return (nib[:, :K // 2] | (nib[:, K // 2:] << 4)).contiguous(), scale.contiguous()


def unpack(Wq, bits=4):
    """The integer weights (N, K) int32 of a packed Wq (on Wq's device)."""
    if bits == 8:
        return Wq.to(torch.int32)
    b = Wq.to(torch.int32)
    return torch.cat([(b & 15) - 8, (b >> 4) - 8], dim=1)


def pack_words(Wq, bits=4, word="int64"):
    """The word-packed format `dequant_gemm_packed` reads, from Wq in the
    format above (done once, offline, at quantization time; on Wq's
    device): (N, K / P) int64 (int32) words, P = 16 (8) nibbles or 8 (4)
    bytes a word; word b of row n holds q[n, b + i * K/P] + 2^(bits-1) in
    bits [i*bits, (i+1)*bits). `unpack_words` is its inverse."""
    q = unpack(Wq, bits).to(torch.int64)
    wbits = 64 if word == "int64" else 32
    parts = wbits // bits
    N, K = q.shape
    if K % parts:
        raise ValueError(f"K = {K} does not split into {parts} slices")
    span = K // parts
    u = q + (1 << (bits - 1))
    w = torch.zeros((N, span), dtype=torch.int64, device=q.device)
    for i in range(parts):
        w |= u[:, i * span:(i + 1) * span] << (i * bits)  # wraps into the sign bit
    if wbits == 32:
        w = torch.where(w >= 2 ** 31, w - 2 ** 32, w).to(torch.int32)
    return w.contiguous()


def unpack_words(Wp, bits=4):
    """The integer weights (N, K) int32 of word-packed Wp (pack_words)."""
    wbits = Wp.element_size() * 8
    w = Wp.to(torch.int64)
    mask, off = (1 << bits) - 1, 1 << (bits - 1)
    return torch.cat([((w >> (i * bits)) & mask) - off for i in range(wbits // bits)],
                     dim=1).to(torch.int32)


def _pair_shift(p, bits):
    """Bit position of lane 0 of pair p in a pair-packed word (lane 1 is 16
    above): int4 pairs 0, 1 at nibbles 0, 2 (shifts 0 and 8), pairs 2, 3 at
    nibbles 1, 3 (masked at bit 4); int8 pair p at byte p."""
    return 4 * (2 * (p % 2) + p // 2) if bits == 4 else 8 * p


def _pair_words(q, bits):
    """Integer weights q (N, K) as pair-packed int32 words (`pack_pairs`)."""
    q = q.to(torch.int64)
    N, K = q.shape
    per_word = 8 if bits == 4 else 4
    if K % per_word:
        raise ValueError(f"K = {K} is not a multiple of {per_word}")
    u = (q + 8 if bits == 4 else q & 255).reshape(N, K // per_word, per_word // 2, 2)
    w = torch.zeros((N, K // per_word), dtype=torch.int64, device=q.device)
    for p in range(per_word // 2):
        at = _pair_shift(p, bits)
        w |= u[:, :, p, 0] << at
        w |= u[:, :, p, 1] << (16 + at)
    return torch.where(w >= 2 ** 31, w - 2 ** 32, w).to(torch.int32).contiguous()


def pack_pairs(Wq, bits=4):
    """The pair-packed format `dequant_gemv_pairs` reads (offline, on Wq's
    device): (N, K / 8) int32 words for int4, (N, K / 4) for int8; word w
    of row n holds consecutive k. int4: k = 8w + 2p and 8w + 2p + 1, as
    q + 8, in the nibbles at bit `_pair_shift(p)` and 16 above, p = 0..3
    (nibbles 0, 2, 1, 3); int8: k = 4w + 2p in byte p and k = 4w + 2p + 1 in
    byte p + 2, as the signed byte, p = 0, 1. `unpack_pairs` is its
    inverse."""
    return _pair_words(unpack(Wq, bits), bits)


def pack_pairs_mma(Wq, bits=4, block_K=128):
    """The pair-packed format `dequant_gemm_pairs` reads (offline): (N, K / 8)
    int32 words for int4, (N, K / 4) for int8, each word's pairs laid out as
    in `pack_pairs`, the words of a step of `block_K` ordered so that the
    pairs of one thread of the tensor cores' A operand are adjacent (see
    `dequant_gemm_pairs`). `unpack_pairs_mma` is its inverse."""
    q = unpack(Wq, bits)
    K = q.shape[1]
    if K % block_K or block_K % 32:
        raise ValueError(f"K = {K} does not split into steps of block_K = {block_K} "
                         f"(a multiple of 32)")
    return _pair_words(q[:, _mma_pair_order(K, block_K)], bits)


def pack_pairs_mma_tiled(Wq, bits=4, block_K=128, block_N=256, splits=1):
    """`pack_pairs_mma` words in tiles (offline): (N / block_N, steps,
    block_N, words) int32 with steps = K / (block_K splits) and words the
    words of a row in a step, so that the tile of `block_N` rows a step of
    `dequant_gemm_pairs(tiled=True)` copies is contiguous.
    `unpack_pairs_mma_tiled` is its inverse."""
    w = pack_pairs_mma(Wq, bits, block_K)
    N, words_k = w.shape
    K = words_k * (8 if bits == 4 else 4)
    if N % block_N or K % (block_K * splits):
        raise ValueError(f"({N}, {K}) does not split into tiles of {block_N} rows and "
                         f"steps of {splits} x {block_K}")
    steps = K // (block_K * splits)
    return w.reshape(N // block_N, block_N, steps, words_k // steps).transpose(1, 2).contiguous()


def unpack_pairs_mma_tiled(Wt, bits=4, block_K=128):
    """The integer weights (N, K) int32 of `pack_pairs_mma_tiled` words."""
    tiles, steps, block_N, words = Wt.shape
    w = Wt.transpose(1, 2).reshape(tiles * block_N, steps * words)
    return unpack_pairs_mma(w, bits, block_K)


def unpack_pairs_mma(Wp, bits=4, block_K=128):
    """The integer weights (N, K) int32 of `pack_pairs_mma` words."""
    q = unpack_pairs(Wp, bits)
    out = torch.empty_like(q)
    out[:, _mma_pair_order(q.shape[1], block_K)] = q
    return out


def _mma_pair_order(K, block_K):
    """k of each position of the pair stream (pack_pairs order): the words
    of a step as (t, b), each word's pairs p, lanes (int8: words (t, b,
    p // 2) hold pairs p % 2, the same stream)."""
    blocks = block_K // 32
    order = []
    for step in range(K // block_K):
        for t in range(4):
            for b in range(blocks):
                for p in range(4):
                    for lane in range(2):
                        order.append(step * block_K + 32 * b + 8 * p + 2 * t + lane)
    return torch.tensor(order)


def unpack_pairs(Wp, bits=4):
    """The integer weights (N, K) int32 of pair-packed Wp (pack_pairs)."""
    w = Wp.to(torch.int64) & 0xFFFFFFFF
    mask = 15 if bits == 4 else 255
    lanes = [torch.stack([(w >> _pair_shift(p, bits)) & mask,
                          (w >> (16 + _pair_shift(p, bits))) & mask], dim=-1)
             for p in range(4 if bits == 4 else 2)]
    u = torch.stack(lanes, dim=2).reshape(Wp.shape[0], -1)
    q = u - 8 if bits == 4 else torch.where(u >= 128, u - 256, u)
    return q.to(torch.int32)


def weights_for(config, Wq, bits=4):
    """The weight tensor a config's kernel reads: Wq, or its word or pair
    packing."""
    if config and config.get("pairs"):
        if config.get("tiled"):
            return pack_pairs_mma_tiled(Wq, bits, config["block_K"], config["block_N"],
                                        config.get("splits", 1))
        if "block_M" in config:
            return pack_pairs_mma(Wq, bits, config["block_K"])
        return pack_pairs(Wq, bits)
    return pack_words(Wq, bits, config["word"]) if config and "word" in config else Wq


def pack_scales(S, bits=4, word="int64"):
    """The scales in the order of the word-packed format (offline, same
    shape): with P parts a word and G = K / P / group groups in a slice of
    K, S_packed[n, g * P + i] = S[n, i * G + g], the P scales of word
    column b (group g = b / group) adjacent, viewed as (N, groups / 4) int64
    words of 4 scales (what `dequant_gemm_packed(packed_scales=True)` reads)."""
    parts = (64 if word == "int64" else 32) // bits
    N, groups = S.shape
    if groups % parts:
        raise ValueError(f"{groups} groups do not split into {parts} slices")
    S = S.reshape(N, parts, groups // parts).transpose(1, 2).reshape(N, groups).contiguous()
    return S.view(torch.int64)


def tile_scales(S, block_N):
    """The scales (N, groups) in the tiled pair GEMM's order (offline):
    (N / block_N, groups, block_N), the scales of a tile's rows for one
    group contiguous."""
    N, groups = S.shape
    if N % block_N:
        raise ValueError(f"N = {N} is not whole tiles of {block_N} rows")
    return S.reshape(N // block_N, block_N, groups).transpose(1, 2).contiguous()


def scales_for(config, S, bits=4):
    """The scale tensor a config's kernel reads: S, pack_scales(S) or
    tile_scales(S)."""
    if config and config.get("packed_scales"):
        return pack_scales(S, bits, config["word"])
    if config and config.get("tiled"):
        return tile_scales(S, config["block_N"])
    return S


def is_chunked_gemv(config):
    """Whether a config is the chunked float32 GEMV (`dequant_gemv`)."""
    return (config is not None and "block_M" not in config and not config.get("elementwise")
            and not config.get("pairs"))


def input_key(config):
    """Configs with equal keys read the same arguments (`inputs_for`)."""
    config = config or {}
    tiles = ((config.get("block_N"), config.get("splits", 1)) if config.get("tiled")
             else None)
    return (config.get("word"), config.get("packed_scales"), bool(config.get("pairs")),
            config.get("block_K") if config.get("pairs") and "block_M" in config else None,
            is_chunked_gemv(config), tiles)


def inputs_for(config, A, Wq, S, bits=4):
    """The kernel arguments of a config (M = 1 with no config: the default
    GEMV): word-packed weights and scales (done once, offline) or, for the
    chunked GEMV, Wq viewed as int32 words (N, bytes / 4)."""
    if is_chunked_gemv(config):
        return A, Wq.view(torch.int32), S
    if config and config.get("pairs") and "block_M" not in config:  # x as float16 pairs
        return A.view(torch.int32), pack_pairs(Wq, bits), S
    return A, weights_for(config, Wq, bits), scales_for(config, S, bits)


def dequantize(Wq, S, bits=4, group=128):
    """dequant(W) as the kernel computes it: q * s in float32, rounded to
    S's dtype."""
    q = unpack(Wq, bits).float()
    s = S.float().repeat_interleave(group, dim=1)
    return (q * s).to(S.dtype)


def reference(A, Wq, S, bits=4, group=128):
    """A @ dequant(W)^T in float64."""
    w = dequantize(Wq.cpu(), S.cpu(), bits, group).double()
    return A.cpu().double() @ w.T


def random_problem(M, N, K, bits=4, group=128, dtype="float16", device="cpu"):
    """Random activations and a random quantized weight."""
    tdt = getattr(torch, dtype)
    A = torch.randn(M, K).to(tdt)
    Wq, S = quantize((torch.randn(N, K) * 0.05).to(tdt), bits, group)
    return to_device(A, device), to_device(Wq, device), to_device(S, device)
