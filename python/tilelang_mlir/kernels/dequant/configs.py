"""The tuned configurations of the dequant kernels and the dispatch from a
config to its program: GEMV (M = 1), PAIRS, PACKED and DECODE (M <= 16),
PREFILL, the PORTABLE_* tiles every target compiles, `configs_for`,
`default_config` and `program`.
"""

import tilelang_mlir.language as T

from .gemm import dequant_gemm, dequant_gemm_packed, dequant_gemm_pairs, dequant_gemm_tn
from .gemv import dequant_gemv, dequant_gemv_elementwise, dequant_gemv_pairs


# Tile configurations: decode (M <= 16) and prefill. The benchmark tunes over
# each list; the first entry is the default. block_K divides the group size
# (128), so each row of a W tile has one scale (two for int4: one per half).
# M = 1 also tries the GEMV kernel (configs without block_M).
# M = 1: the pair GEMV (float16; the first is the default, 12.2-12.5 us cold
# at int4 1x8192x8192 on the H200, BENCHMARKS.md), then the chunked float32
# GEMV (the bfloat16 default; the fastest of its --gemv-sweep, 14.7 us cold).
GEMV = [
    dict(pairs=True, block_N=4, block_K=1024, threads=64, prefetch=True),
    dict(pairs=True, block_N=8, block_K=1024, threads=128, prefetch=True),
    dict(pairs=True, block_N=16, block_K=1024, threads=256, prefetch=True),
    dict(pairs=True, block_N=8, block_K=1024, threads=128),
    dict(block_N=8, block_K=1024, threads=128, prefetch=False),
    dict(block_N=4, block_K=1024, threads=64, prefetch=True),
    dict(block_N=16, block_K=1024, threads=256, prefetch=False),
    dict(block_N=8, block_K=1024, threads=64, prefetch=True),
    dict(block_N=16, block_K=1024, threads=128, prefetch=True),
    # the per-byte kernel (dequant_gemv_elementwise), for comparison
    dict(elementwise=True, block_N=8, block_K=1024, threads=128),
]
# Word-packed weights (`pack_words`, configs with `word`): 16-byte loads of
# W straight into registers, the next step's words prefetched; block_K in
# words. `overlap`: the step's P gemms asynchronous, one wait a step;
# `packed_scales`: S in `pack_scales` order, word loads of the scales.
OVERLAP = dict(overlap=True, packed_scales=True)
PACKED = [
    dict(word="int64", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128, **OVERLAP),
    dict(word="int64", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128,
         overlap=True),
    dict(word="int64", block_M=16, block_N=64, block_K=16, num_stages=2, threads=128, **OVERLAP),
    dict(word="int64", block_M=16, block_N=128, block_K=16, num_stages=2, threads=256,
         **OVERLAP),
    dict(word="int64", block_M=16, block_N=32, block_K=16, num_stages=3, threads=64, **OVERLAP),
    dict(word="int32", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128, **OVERLAP),
    # round 3's best (int4 118.8 us, int8 138.4 us at 16x28672x8192), kept
    dict(word="int64", block_M=16, block_N=64, block_K=32, num_stages=2, threads=128),
    dict(word="int64", block_M=16, block_N=128, block_K=16, num_stages=2, threads=256),
]
# float16 decode (M <= 16): the pair-packed GEMM (`dequant_gemm_pairs`,
# weights through shared memory num_stages deep), 2.7x the word-packed
# kernel at 16x28672x8192 int4 on the H200 (BENCHMARKS.md); tiled weights
# and scales (each step's tile one TMA box) 4-8% faster than row-major
# ones; at int4 two gemms a step the fastest, on 512 threads or, close
# behind, on 256 with the gemms asynchronous (`overlap`) (their 4 stages of
# 32 KB do not fit int8: `default_config` skips them).
# The untiled ones serve an N that is not whole tiles.
PAIRS = [
    dict(pairs=True, w_shared=True, tiled=True, block_M=16, block_N=256, block_K=128,
         num_stages=4, threads=512, splits=2),
    dict(pairs=True, w_shared=True, tiled=True, block_M=16, block_N=256, block_K=128,
         num_stages=4, threads=256, splits=2, overlap=True),
    dict(pairs=True, w_shared=True, tiled=True, block_M=16, block_N=256, block_K=128,
         num_stages=4, threads=256),
    dict(pairs=True, w_shared=True, block_M=16, block_N=256, block_K=128, num_stages=4,
         threads=256),
    dict(pairs=True, w_shared=True, block_M=16, block_N=256, block_K=128, num_stages=3,
         threads=256),
    dict(pairs=True, w_shared=True, block_M=16, block_N=128, block_K=128, num_stages=4,
         threads=256),
]
DECODE = PAIRS + PACKED + [
    dict(tn=True, block_M=16, block_N=64, block_K=128, num_stages=2, threads=128),
    dict(tn=True, block_M=16, block_N=64, block_K=64, num_stages=3, threads=128),
    dict(tn=True, block_M=16, block_N=128, block_K=64, num_stages=2, threads=256),
    dict(tn=True, block_M=16, block_N=32, block_K=128, num_stages=2, threads=64),
    dict(block_M=16, block_N=64, block_K=128, num_stages=4, threads=128),
    dict(block_M=16, block_N=128, block_K=128, num_stages=3, threads=256),
]
# Prefill: 256 threads keep the dequantized elements per thread (block_N *
# block_K / threads) at 32 next to the 64-per-thread accumulator; 128
# threads on 128x128 tiles spill.
PREFILL = [
    # float16: the pair GEMM with scaled weights (642 TFLOP/s int4 on the
    # H200, 1.8x the shared-memory dequant below; BENCHMARKS.md)
    dict(pairs=True, scale_weights=True, block_M=256, block_N=128, block_K=64, num_stages=3,
         threads=256),
    dict(pairs=True, scale_weights=True, block_M=128, block_N=128, block_K=128, num_stages=3,
         threads=256),
    dict(pairs=True, scale_weights=True, block_M=128, block_N=256, block_K=64, num_stages=3,
         threads=256),
    dict(block_M=128, block_N=128, block_K=64, num_stages=3, threads=256,
         policy=T.GemmWarpPolicy.Square),
    dict(block_M=128, block_N=256, block_K=32, num_stages=4, threads=256,
         policy=T.GemmWarpPolicy.Square),
    dict(block_M=128, block_N=128, block_K=32, num_stages=4, threads=256,
         policy=T.GemmWarpPolicy.Square),
]
# What programs() compiles for every target (CI assembles them for sm_80,
# sm_90a and the AMD chips): tiles that fit 64 KB of shared memory.
PORTABLE_DECODE = dict(block_M=16, block_N=32, block_K=128, num_stages=3, threads=128)
PORTABLE_TN = dict(tn=True, block_M=16, block_N=64, block_K=64, num_stages=2, threads=128)
PORTABLE_PREFILL = dict(block_M=128, block_N=128, block_K=32, num_stages=2, threads=256,
                        policy=T.GemmWarpPolicy.Square)
PORTABLE_PAIRS = dict(pairs=True, block_M=16, block_N=128, block_K=128, num_stages=2,
                      threads=256)
PORTABLE_PAIRS_PREFILL = dict(pairs=True, scale_weights=True, block_M=64, block_N=128,
                              block_K=32, num_stages=2, threads=256)


def configs_for(M):
    if M == 1:
        return GEMV + DECODE
    return DECODE if M <= 16 else PREFILL


# The most shared memory a pair GEMM's ring of weight tiles may take and
# leave room for the X tiles and the C tile (227 KB in all on the H200).
PAIR_RING_BYTES = 160 * 1024


def pair_ring_fits(config, bits):
    """Whether the pair GEMM's ring of weight tiles fits PAIR_RING_BYTES."""
    return (config.get("num_stages", 4) * config["block_N"] * config["block_K"] *
            config.get("splits", 1) * bits // 8) <= PAIR_RING_BYTES


def default_config(M, N, K, bits=4, group=128, dtype="float16"):
    """The regime's first config that fits the shape and dtype (the
    word-packed ones need K in P slices of whole groups, the pair GEMV
    float16 and groups of whole chunks)."""
    for config in configs_for(M):
        if config.get("pairs"):
            if "block_M" in config:  # the pair GEMM: steps of whole 32s within a group
                fits = not K % config["block_K"] and not group % config["block_K"]
                fits &= not config.get("tiled") or not N % config["block_N"]
                fits &= pair_ring_fits(config, bits)
            else:  # the pair GEMV: groups of whole chunks
                fits = not group % (32 if bits == 4 else 16)
            if dtype == "float16" and fits:
                return config
            continue
        if "word" not in config:
            return config
        parts = (64 if config["word"] == "int64" else 32) // bits
        if not K % (parts * group) and not group % config["block_K"]:
            return config
    return configs_for(M)[0]


def program(M, N, K, bits=4, group=128, dtype="float16", config=None):
    """The tile program for (M, N, K) with the regime's default tiles
    (`default_config`). Its arguments are `inputs_for(config, A, Wq, S)`:
    configs with `word` read word-packed weights and, with `packed_scales`,
    packed scales; the chunked GEMV reads views of A and Wq."""
    if config is None:
        config = default_config(M, N, K, bits, group, dtype)
    config = dict(config)
    span = K // 2 if bits == 4 else K
    gemv = "block_M" not in config  # its steps may span several groups

    def fits(bk):
        return not span % bk and (not group % bk or (gemv and not bk % group))

    # (the word- and pair-packed decode formats depend on block_K: kept)
    fixed = "word" in config or (config.get("pairs") and not gemv)
    while not fixed and not fits(config["block_K"]) and config["block_K"] > 8:
        config["block_K"] //= 2
    if gemv:  # M = 1: the GEMV kernel
        if M != 1:
            raise ValueError(f"the GEMV kernel computes one row, not M = {M}")
        if config.pop("elementwise", False):
            return dequant_gemv_elementwise(N, K, bits, group, dtype=dtype, **config)
        if config.pop("pairs", False):
            return dequant_gemv_pairs(N, K, bits, group, dtype=dtype, **config)
        return dequant_gemv(N, K, bits, group, dtype=dtype, **config)
    if config.pop("pairs", False):  # decode on pair-packed weights (pack_pairs_mma)
        return dequant_gemm_pairs(M, N, K, bits, group, dtype=dtype, **config)
    if "word" in config:  # decode on word-packed weights (pack_words)
        return dequant_gemm_packed(M, N, K, bits, group, dtype=dtype, **config)
    if config.pop("tn", False):  # decode: W as the register A operand
        return dequant_gemm_tn(M, N, K, bits, group, dtype=dtype, **config)
    return dequant_gemm(M, N, K, bits, group, dtype=dtype, **config)
