"""Weight-only quantized GEMM and GEMV (tilelang_mlir.kernels.dequant) on the CPU: int4
and int8, float16 and bfloat16, group sizes, ragged shapes, against a
float64 reference on random inputs; the packing helpers; bad inputs."""

import os
import re

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels import dequant as dq
from tilelang_mlir.kernels import gemv as gv
from tilelang_mlir.testing import random_seed, relative_error

# Small tiles: CPU compile and run times stay short; 64 elements per thread.
SMALL = dict(block_M=16, block_N=32, block_K=64, num_stages=2, threads=32)


# Twice the output dtype's unit roundoff (2^-10, 2^-7): rounding the exact
# result to the output alone costs up to one, and a float32 sum a hair off a
# rounding boundary lands one ulp away (seen at 4.5e-3 for bfloat16, N = 16).
OUT_TOL = {"float16": 1e-3, "bfloat16": 8e-3}


def _seed():
    torch.manual_seed(random_seed())


@pytest.mark.parametrize("bits,dtype,group,shape", [
    (4, "float16", 128, (16, 64, 256)),
    (4, "bfloat16", 64, (5, 50, 384)),     # ragged M and N, block_K == group
    (8, "float16", 64, (1, 33, 128)),      # decode, ragged N
    (8, "bfloat16", 128, (19, 64, 384)),   # M over one block
    (4, "float16", 256, (3, 40, 1024)),    # 4 tiles of K in each group
])
def test_dequant_gemm_matches_reference(bits, dtype, group, shape):
    _seed()
    M, N, K = shape
    kernel = tl.compile(dq.dequant_gemm(M, N, K, bits, group, dtype=dtype, **SMALL),
                        out_idx=[3], target="cpu")
    A, Wq, S = dq.random_problem(M, N, K, bits, group, dtype)
    out = kernel(A, Wq, S)
    assert out.dtype == getattr(torch, dtype) and tuple(out.shape) == (M, N)
    err = relative_error(out.float().numpy(), dq.reference(A, Wq, S, bits, group).numpy())
    assert err < OUT_TOL[dtype], err


@pytest.mark.parametrize("bits,dtype,group,shape,config", [
    (4, "float16", 128, (16, 128, 512), dict(block_N=64, block_K=64, threads=128)),
    (4, "bfloat16", 64, (5, 50, 384), dict(block_N=32, block_K=64, threads=64)),  # ragged
    (8, "float16", 64, (1, 70, 256), dict(block_N=64, block_K=64, threads=128)),
    (8, "bfloat16", 128, (19, 64, 256), dict(block_N=32, block_K=128, threads=64)),  # 2 M blocks
])
def test_dequant_gemm_tn_matches_reference(bits, dtype, group, shape, config):
    """The decode kernel with W as the register A operand (C^T = W X^T)."""
    _seed()
    M, N, K = shape
    kernel = tl.compile(dq.dequant_gemm_tn(M, N, K, bits, group, dtype=dtype, **config),
                        out_idx=[3], target="cpu")
    A, Wq, S = dq.random_problem(M, N, K, bits, group, dtype)
    out = kernel(A, Wq, S)
    assert out.dtype == getattr(torch, dtype) and tuple(out.shape) == (M, N)
    err = relative_error(out.float().numpy(), dq.reference(A, Wq, S, bits, group).numpy())
    assert err < OUT_TOL[dtype], err


@pytest.mark.parametrize("bits,word", [(4, "int64"), (8, "int64"), (4, "int32"),
                                       (8, "int32")])
def test_pack_words_round_trip(bits, word):
    """pack_words puts q[n, b + i K/P] (offset) into part i of word b, and
    unpack_words inverts it: the same integers as the byte format."""
    _seed()
    _, Wq, _ = dq.random_problem(1, 6, 1024, bits, 64)
    Wp = dq.pack_words(Wq, bits, word)
    parts = Wp.element_size() * 8 // bits
    assert Wp.dtype == getattr(torch, word) and tuple(Wp.shape) == (6, 1024 // parts)
    q = dq.unpack(Wq, bits)
    assert torch.equal(dq.unpack_words(Wp, bits), q)
    # one word by hand: part i of word 3 of row 2 holds q[2, 3 + i * K/P] + 2^(bits-1)
    w = int(Wp[2, 3]) & ((1 << (parts * bits)) - 1)
    for i in range(parts):
        assert (w >> (i * bits)) & ((1 << bits) - 1) == int(q[2, 3 + i * 1024 // parts]) + \
            (1 << (bits - 1))


@pytest.mark.parametrize("bits,dtype,group,shape,config", [
    (4, "float16", 64, (16, 64, 1024), dict(block_N=32, block_K=16, threads=32)),
    (4, "bfloat16", 32, (5, 50, 512), dict(block_N=32, block_K=16, threads=32)),  # ragged
    (8, "float16", 64, (1, 70, 512), dict(block_N=64, block_K=16, threads=128,
                                          prefetch=False)),
    (8, "bfloat16", 32, (19, 64, 256), dict(block_N=32, block_K=32, threads=64)),  # 2 M blocks
    (4, "float16", 32, (3, 40, 512), dict(block_N=32, block_K=16, threads=32, word="int32")),
    (8, "float16", 32, (16, 32, 256), dict(block_N=32, block_K=32, threads=32, word="int32",
                                           num_stages=3)),
    # asynchronous gemms (one wait a step) and packed scales (word loads)
    (4, "float16", 64, (16, 64, 2048), dict(block_N=32, block_K=16, threads=32, overlap=True,
                                            packed_scales=True)),
    (4, "bfloat16", 32, (5, 50, 1024), dict(block_N=32, block_K=32, threads=32,
                                            packed_scales=True)),
    (8, "float16", 32, (3, 70, 512), dict(block_N=64, block_K=16, threads=128, overlap=True)),
    (8, "bfloat16", 32, (16, 32, 256), dict(block_N=32, block_K=32, threads=32, word="int32",
                                            overlap=True, packed_scales=True)),
])
def test_dequant_gemm_packed_matches_reference(bits, dtype, group, shape, config):
    """The decode kernel on word-packed weights (16-byte register loads,
    the next step prefetched), against the float64 reference of the
    unpacked weights."""
    _seed()
    M, N, K = shape
    kernel = tl.compile(dq.dequant_gemm_packed(M, N, K, bits, group, dtype=dtype, **config),
                        out_idx=[3], target="cpu")
    A, Wq, S = dq.random_problem(M, N, K, bits, group, dtype)
    word = config.get("word", "int64")
    if config.get("packed_scales"):
        S_in = dq.pack_scales(S, bits, word)
        assert S_in.dtype == torch.int64 and S_in.shape == (N, K // group // 4)
    else:
        S_in = S
    out = kernel(A, dq.pack_words(Wq, bits, word), S_in)
    assert out.dtype == getattr(torch, dtype) and tuple(out.shape) == (M, N)
    err = relative_error(out.float().numpy(), dq.reference(A, Wq, S, bits, group).numpy())
    assert err < OUT_TOL[dtype], err


def test_packed_shapes_are_checked():
    with pytest.raises(ValueError, match="does not split into 16 slices"):
        dq.dequant_gemm_packed(16, 64, 1024, 4, 128)
    with pytest.raises(ValueError, match="must divide the group size"):
        dq.dequant_gemm_packed(16, 64, 2048, 4, 128, block_K=256)
    with pytest.raises(ValueError, match="word must be"):
        dq.dequant_gemm_packed(16, 64, 2048, 4, 128, word="int16")
    # (bfloat16: the float16 pair GEMM comes first for float16)
    assert dq.default_config(16, 64, 1024, 4, 128, "bfloat16")["word"] == "int32"  # 8 slices
    assert "word" not in dq.default_config(16, 64, 512, 4, 128, "bfloat16")  # falls back to tn
    assert dq.default_config(16, 64, 2048, 4, 128, "bfloat16") == dq.PACKED[0]
    assert dq.default_config(16, 64, 2048, 4, 128) == dq.PAIRS[3]  # (64 rows: no whole tile)
    assert dq.default_config(16, 512, 2048, 4, 128) == dq.PAIRS[0]
    assert dq.default_config(16, 512, 2048, 8, 128) == dq.PAIRS[2]  # (int8: 2 splits too big)


@pytest.mark.parametrize("bits,word,width", [(4, "int64", "v2.b64"), (8, "int64", "v2.b64"),
                                             (4, "int32", "v2.b32")])
def test_cuda_packed_weights_load_16_bytes(bits, word, width):
    """sm_90a PTX of the packed decode kernel: W arrives in 16-byte
    (int32 words: 8-byte) vector loads and nothing else (no byte or
    16-bit loads of W; the 16-bit loads left are the scales), twice
    per step with the prefetch (prologue and loop); packed f16x2
    dequantization; wgmma from registers; no spills."""
    import re

    from tilelang_mlir.compiler.cuda import resource_report

    config = dict(block_N=64, block_K=16, threads=128)
    kernel = tl.compile(dq.dequant_gemm_packed(16, 512, 2048, bits, 128, word=word, **config),
                        out_idx=[3], target="cuda:sm_90a")
    ptx = kernel.get_source()
    per_thread = 64 * 16 * (8 if word == "int64" else 4) // 128  # bytes a step
    vec = 16 if word == "int64" else 8
    loads = re.findall(r"ld\.global(?:\.nc)?\.(\S+)", ptx)
    assert loads.count(width) == 2 * per_thread // vec, loads
    assert not [w for w in loads if w.endswith(("b8", "u8", "s8"))], loads
    assert re.search(r"(mul|fma\.rn)\.f16x2", ptx)
    assert "wgmma.mma_async" in ptx and "ldmatrix" not in ptx
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0


@pytest.mark.parametrize("bits,word", [(4, "int64"), (8, "int64"), (4, "int32")])
def test_cuda_packed_overlap_waits_once_a_step(bits, word):
    """sm_90a PTX of the packed decode kernel with `overlap` and
    `packed_scales`: the P register-A wgmmas of a step are each committed
    without a wait and one wgmma.wait_group 0 ends the step (P commits a
    wait), ptxas does not serialize them (no performance-loss note); the
    scales arrive as 32-bit loads (halves of the packed int64 words, never
    16-bit loads); no spills. Without `overlap` every commit waits."""
    import re

    from tilelang_mlir.compiler.cuda import resource_report

    parts = (64 if word == "int64" else 32) // bits
    config = dict(block_N=64, block_K=16, threads=128, word=word)
    for overlap in (True, False):
        kernel = tl.compile(dq.dequant_gemm_packed(16, 512, 2048, bits, 128, overlap=overlap,
                                                   packed_scales=overlap, **config),
                            out_idx=[3], target="cuda:sm_90a")
        ptx = kernel.get_source()
        commits = ptx.count("wgmma.commit_group")
        waits = re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx)
        assert commits and set(waits) == {"0"}, waits
        assert commits == len(waits) * (parts if overlap else 1), (commits, len(waits))
        loads = re.findall(r"ld\.global(?:\.nc)?\.(\S+)", ptx)
        assert ("b16" not in loads) == overlap, loads
        assert "Potential Performance Loss" not in kernel.ptxas_info, kernel.ptxas_info
        report = resource_report(kernel.ptxas_info)
        assert report["spill_stores"] == 0 and report["spill_loads"] == 0


def test_pack_scales_orders_the_parts_of_a_word_column():
    """pack_scales: the P scales of word column b adjacent, as int64 words
    of 4 (little-endian halves)."""
    N, K, group = 3, 4096, 128
    S = torch.arange(N * K // group, dtype=torch.int16).reshape(N, K // group).view(torch.float16)
    for bits, word in ((4, "int64"), (8, "int64"), (4, "int32"), (8, "int32")):
        parts = (64 if word == "int64" else 32) // bits
        G = K // parts // group
        P = dq.pack_scales(S, bits, word)
        assert P.dtype == torch.int64 and P.shape == (N, K // group // 4)
        halves = P.view(torch.float16)
        for g in range(G):
            for i in range(parts):
                assert torch.equal(halves[:, g * parts + i], S[:, i * G + g])


def test_dequant_gemm_tn_keeps_weights_in_registers():
    """On sm_90a the dequantized W feeds wgmma from registers (the RS form:
    no shared-memory store of W, no ldmatrix), and on sm_80 mma.sync; the
    f16 dequantization runs two weights an instruction (f16x2)."""
    program = dq.program(16, 512, 1024, 4, config=dq.PORTABLE_TN)
    ptx = tl.compile(program, out_idx=[3], target="cuda:sm_90a").get_source()
    assert "wgmma.mma_async" in ptx and "ldmatrix" not in ptx
    assert "mul.f16x2" in ptx and "cvt.rn.f16.s32" not in ptx
    ptx = tl.compile(program, out_idx=[3], target="cuda:sm_80").get_source()
    # Each warp's 16 W rows are one m tile and X's 16 columns two n tiles:
    # X's fragments take one ldmatrix.x4 a k step (two n tiles, two
    # mma.sync); W's, from registers, none (through shared memory they
    # would add one a k step).
    mmas = ptx.count("mma.sync.aligned.m16n8k16")
    loads = ptx.count("ldmatrix.sync.aligned")
    assert mmas and loads * 2 == mmas, (loads, mmas)


def test_dequant_gemm_pairs_overlap_waits_per_gemm():
    """With `overlap` a step's two gemms are issued asynchronously and each
    one's sums are scaled after a wait that leaves only the later gemms in
    flight (wait_group 1, then 0), and the tiled weights and scales arrive
    by TMA (sm_90a PTX; no GPU needed). Without it every gemm waits for
    itself (wait_group 0 only)."""
    config = dict(next(c for c in dq.PAIRS if c.get("overlap")))
    assert config.get("splits") == 2 and config.get("tiled")
    ptx = tl.compile(dq.program(16, 512, 1024, 4, config=config), out_idx=[3],
                     target="cuda:sm_90a").get_source()
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx)
    assert waits == ["1", "0"], waits
    assert ptx.count("cp.async.bulk.tensor") >= 3  # X, the words' and the scales' tiles
    config.pop("overlap")
    ptx = tl.compile(dq.program(16, 512, 1024, 4, config=config), out_idx=[3],
                     target="cuda:sm_90a").get_source()
    assert set(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx)) == {"0"}


@pytest.mark.parametrize("bits,dtype,group,N,K", [
    (4, "float16", 128, 64, 512), (4, "bfloat16", 64, 45, 256), (8, "float16", 32, 70, 192),
    (8, "bfloat16", 128, 16, 256)])
def test_dequant_gemv_matches_reference(bits, dtype, group, N, K):
    """The M = 1 kernel (no tensor cores), ragged N included."""
    _seed()
    for config in (dict(block_N=8, block_K=32, threads=32),
                   dict(block_N=8, block_K=32, threads=32, prefetch=False),
                   dict(block_N=8, block_K=32, threads=32, elementwise=True)):
        kernel = tl.compile(dq.program(1, N, K, bits, group, dtype, config), out_idx=[3],
                            target="cpu")
        A, Wq, S = dq.random_problem(1, N, K, bits, group, dtype)
        out = kernel(*dq.inputs_for(config, A, Wq, S, bits))
        err = relative_error(out.float().numpy(), dq.reference(A, Wq, S, bits, group).numpy())
        assert err < OUT_TOL[dtype], (config, err)


@pytest.mark.parametrize("bits", [4, 8])
def test_pack_pairs_round_trip(bits):
    """pack_pairs puts k = 2p and 2p + 1 of a word in the two 16-bit
    halves (int4: nibbles at 2 * (p % 2) + p // 2 and 4 above; int8: bytes
    p and p + 2); unpack_pairs inverts it."""
    _seed()
    _, Wq, _ = dq.random_problem(1, 24, 256, bits)
    q = dq.unpack(Wq, bits)
    Wp = dq.pack_pairs(Wq, bits)
    assert Wp.dtype == torch.int32 and Wp.shape == (24, 256 // (8 if bits == 4 else 4))
    assert torch.equal(dq.unpack_pairs(Wp, bits), q)
    w = Wp[3, 5].item() & 0xFFFFFFFF
    if bits == 4:  # word 5 holds k = 40..47; pair 2 (k 44, 45) at nibbles 1 and 5
        assert (w >> 4) & 15 == q[3, 44] + 8 and (w >> 20) & 15 == q[3, 45] + 8
    else:  # word 5 holds k = 20..23; pair 1 (k 22, 23) in bytes 1 and 3
        assert (w >> 8) & 255 == q[3, 22] & 255 and (w >> 24) & 255 == q[3, 23] & 255


@pytest.mark.parametrize("bits,group,N,K,config", [
    (4, 128, 64, 1024, dict(block_N=4, block_K=256, threads=32)),
    (4, 32, 37, 512, dict(block_N=8, block_K=64, threads=32, prefetch=True)),
    (8, 64, 45, 512, dict(block_N=4, block_K=256, threads=32, prefetch=True)),
    (8, 128, 16, 1024, dict(block_N=8, block_K=1024, threads=64)),
    (4, 128, 70, 2048, dict(block_N=4, block_K=1024, threads=64, prefetch=True))])
def test_dequant_gemv_pairs_matches_reference(bits, group, N, K, config):
    """The float16-pair GEMV (T.hsub2/T.hfma2 on pair-packed weights):
    ragged N, steps shorter and longer than a group, with and without
    prefetch. Its half2 chunk sums add about one float16 rounding to the
    result's (the float32 GEMV's error is about half of it)."""
    _seed()
    config = dict(config, pairs=True)
    kernel = tl.compile(dq.program(1, N, K, bits, group, "float16", config), out_idx=[3],
                        target="cpu")
    A, Wq, S = dq.random_problem(1, N, K, bits, group, "float16")
    err = relative_error(kernel(*dq.inputs_for(config, A, Wq, S, bits)).float().numpy(),
                         dq.reference(A, Wq, S, bits, group).numpy())
    assert err < 1.5e-3, err


@pytest.mark.parametrize("bits", [4, 8])
def test_pack_pairs_mma_round_trip(bits):
    """pack_pairs_mma orders each step's words by the thread of the tensor
    cores' A operand that owns their pairs; unpack_pairs_mma inverts it."""
    _seed()
    _, Wq, _ = dq.random_problem(1, 16, 512, bits)
    q = dq.unpack(Wq, bits)
    for block_K in (32, 128):
        Wp = dq.pack_pairs_mma(Wq, bits, block_K)
        assert torch.equal(dq.unpack_pairs_mma(Wp, bits, block_K), q)
    # int4, block_K 128: word 1 of row 2 is thread 0's pairs of block 1
    # (k = 32 + 8 p, 33 + 8 p), pair p = 1 at nibbles 2 and 6
    w = dq.pack_pairs_mma(Wq, 4, 128)[2, 1].item() & 0xFFFFFFFF if bits == 4 else None
    if bits == 4:
        assert (w >> 8) & 15 == q[2, 40] + 8 and (w >> 24) & 15 == q[2, 41] + 8
    with pytest.raises(ValueError, match="multiple of 32"):
        dq.pack_pairs_mma(Wq, bits, 48)
    # tiled: the words of (row tile, step) contiguous, the same words
    Wp = dq.pack_pairs_mma(Wq, bits, 32)
    for splits in (1, 2):
        Wt = dq.pack_pairs_mma_tiled(Wq, bits, 32, 8, splits)
        words = Wp.shape[1] // Wt.shape[1]
        assert Wt.shape == (2, Wp.shape[1] // words, 8, words)
        assert torch.equal(Wt[1, 3], Wp[8:16, 3 * words:4 * words])
        assert torch.equal(dq.unpack_pairs_mma_tiled(Wt, bits, 32), q)
    with pytest.raises(ValueError, match="tiles of 32 rows"):
        dq.pack_pairs_mma_tiled(Wq, bits, 32, 32)
    # the scales of a tile's rows for one group contiguous
    S = torch.randn(16, 4)
    St = dq.tile_scales(S, 8)
    assert St.shape == (2, 4, 8) and torch.equal(St[1, 2], S[8:16, 2])


@pytest.mark.parametrize("bits,M,N,K,group,config", [
    (4, 16, 128, 512, 128, dict(block_N=64, block_K=128, threads=128, num_stages=2)),
    (4, 5, 70, 1024, 64, dict(block_N=128, block_K=64, threads=256, num_stages=3)),
    (8, 16, 96, 512, 128, dict(block_N=64, block_K=128, threads=128, w_shared=False)),
    (8, 3, 64, 256, 32, dict(block_N=64, block_K=32, threads=128, num_stages=2)),
    (4, 16, 64, 1024, 128, dict(block_N=64, block_K=128, threads=128, splits=2)),
    (8, 9, 64, 512, 64, dict(block_N=64, block_K=64, threads=128, splits=4, w_shared=False)),
    (4, 200, 256, 512, 128, dict(block_M=128, block_N=128, block_K=64, threads=256,
                                 num_stages=3, scale_weights=True)),
    (8, 16, 64, 256, 64, dict(block_N=64, block_K=64, threads=128, splits=2,
                              scale_weights=True)),
    (4, 7, 128, 1024, 128, dict(block_N=64, block_K=128, threads=128, tiled=True)),
    (8, 16, 128, 512, 64, dict(block_N=64, block_K=64, threads=128, splits=2, tiled=True)),
    (4, 40, 128, 512, 128, dict(block_M=64, block_N=64, block_K=64, threads=128, tiled=True,
                                scale_weights=True)),
    (4, 16, 128, 1024, 128, dict(block_N=64, block_K=128, threads=128, splits=2, tiled=True,
                                 overlap=True)),
    (8, 16, 128, 512, 64, dict(block_N=64, block_K=64, threads=128, splits=2, overlap=True,
                               scale_weights=True))])
def test_dequant_gemm_pairs_matches_reference(bits, M, N, K, group, config):
    """The pair-packed GEMM: steps of one group and of part of one, several
    gemms a step (splits), ragged N and M, the words through shared memory
    or straight into registers, the scales on the sums or on the weights
    (the prefill's tiles). The weights are exact in float16, so the error is the
    float32 accumulation's and the output's rounding."""
    _seed()
    config = dict({"block_M": 16}, **config, pairs=True)
    kernel = tl.compile(dq.program(M, N, K, bits, group, "float16", config), out_idx=[3],
                        target="cpu")
    A, Wq, S = dq.random_problem(M, N, K, bits, group, "float16")
    err = relative_error(kernel(*dq.inputs_for(config, A, Wq, S, bits)).float().numpy(),
                         dq.reference(A, Wq, S, bits, group).numpy())
    assert err < 1e-3, err


def test_dequant_gemm_pairs_checks_its_steps():
    with pytest.raises(ValueError, match="multiple of 32 dividing the group size"):
        dq.dequant_gemm_pairs(16, 64, 1024, 4, 128, block_K=48)
    with pytest.raises(ValueError, match="bfloat16 activations need the other decode"):
        dq.dequant_gemm_pairs(16, 64, 1024, 4, 128, dtype="bfloat16")
    assert dq.default_config(16, 64, 1024, 4, 128, "float16").get("pairs")
    assert not dq.default_config(16, 64, 1024, 4, 128, "bfloat16").get("pairs")
    assert not dq.default_config(16, 64, 1024, 4, 64, "float16").get("pairs")  # 128 > group
    # tiled weights need N in whole tiles; a ragged N takes the untiled layout
    assert dq.default_config(16, 512, 1024, 4, 128, "float16").get("tiled")
    ragged = dq.default_config(16, 300, 1024, 4, 128, "float16")
    assert ragged.get("pairs") and not ragged.get("tiled")
    with pytest.raises(ValueError, match="N = 300 in whole tiles"):
        dq.dequant_gemm_pairs(16, 300, 1024, 4, 128, block_N=128, tiled=True)


def test_dequant_gemv_pairs_is_float16_only():
    with pytest.raises(ValueError, match="bfloat16 activations need dequant_gemv"):
        dq.dequant_gemv_pairs(64, 1024, 4, 128, dtype="bfloat16")
    # the defaults: pairs for float16, the float32 GEMV for bfloat16
    assert dq.default_config(1, 64, 1024, 4, 128, "float16").get("pairs")
    assert not dq.default_config(1, 64, 1024, 4, 128, "bfloat16").get("pairs")


@pytest.mark.parametrize("bits", [4, 8])
def test_cuda_gemv_pairs_take_three_instructions_a_pair(bits):
    """A pair of weights costs one lop3 (mask and the exponent of 1024),
    one sub.f16x2 (the bias) and one fma.rn.f16x2 in the PTX; the words
    and x arrive in 16-byte loads, and nothing goes through shared memory
    in the step loop (the chunk sums stay in the thread)."""
    import re

    config = dict(pairs=True, block_N=4, block_K=256, threads=64)
    ptx = tl.compile(dq.program(1, 256, 4096, bits, 128, "float16", config), out_idx=[3],
                     target="cuda:sm_90a").get_source()  # 8 or 16 steps: a loop
    pairs = 4 * 256 * (2 if bits == 4 else 1) // 64 // 2  # a thread's per step
    assert len(re.findall(r"fma\.rn\.f16x2", ptx)) == pairs
    assert len(re.findall(r"lop3\.b32", ptx)) == pairs
    assert len(re.findall(r"(sub|add)\.f16x2", ptx)) == pairs
    assert ptx.count("ld.global.v4.b32") >= 2
    assert "st.shared" not in ptx.split("bar.sync")[0]  # the loop, before the reduction


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_prefill_tiles_on_cpu(dtype):
    """The prefill configurations compute the same thing, on a ragged M:
    the default (float16: the pair GEMM with scaled weights; bfloat16: the
    shared-memory dequant, 128x128 tiles, 256 threads)."""
    _seed()
    M, N, K = 130, 128, 256
    config = dq.default_config(M, N, K, 4, 128, dtype)
    assert bool(config.get("pairs")) == (dtype == "float16")
    kernel = tl.compile(dq.program(M, N, K, 4, 128, dtype, config), out_idx=[3], target="cpu")
    A, Wq, S = dq.random_problem(M, N, K, 4, 128, dtype)
    err = relative_error(kernel(*dq.inputs_for(config, A, Wq, S)).float().numpy(),
                         dq.reference(A, Wq, S).numpy())
    assert err < OUT_TOL[dtype], err


@pytest.mark.parametrize("bits", [4, 8])
def test_quantize_round_trip(bits):
    _seed()
    w = torch.randn(8, 256).half()
    Wq, S = dq.quantize(w, bits, 64)
    assert Wq.dtype == (torch.uint8 if bits == 4 else torch.int8)
    assert tuple(Wq.shape) == (8, 256 * bits // 8) and tuple(S.shape) == (8, 4)
    q = dq.unpack(Wq, bits)
    assert q.min() >= (-8 if bits == 4 else -128) and q.max() <= (7 if bits == 4 else 127)
    back = dq.dequantize(Wq, S, bits, 64).float()
    step = S.float().repeat_interleave(64, dim=1)
    assert torch.all((back - w.float()).abs() <= 0.51 * step + 1e-3)
    # The documented nibble order: k in the low nibble, k + K/2 in the high
    # one, offset by 8.
    if bits == 4:
        assert int(Wq[0, 5]) == int(q[0, 5] + 8) | (int(q[0, 128 + 5] + 8) << 4)


@pytest.mark.parametrize("dtype,shape", [("float16", (64, 2048)), ("bfloat16", (37, 1000))])
def test_gemv_matches_reference(dtype, shape):
    _seed()
    N, K = shape
    kernel = tl.compile(gv.gemv(N, K, block_N=4, block_K=256, threads=32, dtype=dtype),
                        out_idx=[2], target="cpu")
    tdt = getattr(torch, dtype)
    w, x = torch.randn(N, K).to(tdt), torch.randn(K).to(tdt)
    err = relative_error(kernel(w, x).float().numpy(), gv.reference(w, x))
    assert err < OUT_TOL[dtype], err


def test_gemv_loads_16_bytes():
    """coalesced_width=8 reaches the tile IR, and on the GPU layout inference
    gives each thread 8 consecutive elements of a row: W arrives in 16-byte
    loads (ptxas for sm_80; no GPU needed)."""
    kernel = tl.compile(gv.gemv(64, 2048), out_idx=[2], target="cpu")
    assert "vector = 8" in kernel.mlir("tile")
    ptx = tl.compile(gv.gemv(64, 2048), out_idx=[2], target="cuda:sm_80").get_source()
    loads = [line for line in ptx.splitlines() if "ld.global" in line]
    assert loads and all(".v4.b32" in line for line in loads), loads


def test_parallel_vector_must_be_power_of_two():
    @T.prim_func
    def bad(A: T.Tensor((64,), "float16")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((64,), "float16")
            for i in T.Parallel(64, coalesced_width=6):
                a[i] = 0
            T.copy(a, A)

    with pytest.raises(Exception, match="coalesced_width must be a positive power of two"):
        tl.compile(bad, target="cpu")


@pytest.fixture(scope="module")
def int4_kernel():
    return tl.compile(dq.dequant_gemm(4, 32, 128, 4, 64, **SMALL), out_idx=[3], target="cpu")


def test_wrong_weight_dtype_is_named(int4_kernel):
    A = torch.randn(4, 128).half()
    Wq = torch.zeros(32, 64, dtype=torch.int32)
    S = torch.ones(32, 2).half()
    with pytest.raises(Exception, match=r"(?i)dtype|uint8"):
        int4_kernel(A, Wq, S)


def test_wrong_scale_shape_is_named(int4_kernel):
    A = torch.randn(4, 128).half()
    Wq = torch.zeros(32, 64, dtype=torch.uint8)
    S = torch.ones(32, 4).half()  # group 32 scales for a group-64 kernel
    with pytest.raises(Exception, match=r"(?i)shape|size|dimension"):
        int4_kernel(A, Wq, S)


def test_bad_problem_is_refused_before_compiling():
    with pytest.raises(ValueError, match="multiple of the group size"):
        dq.dequant_gemm(16, 32, 200, 4, 128)
    with pytest.raises(ValueError, match="each half of K"):
        dq.dequant_gemm(16, 32, 384, 4, 128)
    with pytest.raises(ValueError, match="must divide the group size"):
        dq.dequant_gemm(16, 32, 512, 4, 64, block_K=128)
    with pytest.raises(ValueError, match="one row"):
        dq.program(2, 32, 256, 4, 128, config=dq.GEMV[0])
    with pytest.raises(ValueError, match="bits must be 4 or 8"):
        dq.dequant_gemm(16, 32, 256, 3, 128)
    with pytest.raises(ValueError, match="multiple of the group size"):
        dq.quantize(torch.randn(4, 100), 4, 64)
    with pytest.raises(ValueError, match="2-D"):
        dq.quantize(torch.randn(4, 4, 64), 4, 64)


def test_reference_is_float64_of_dequantized_weights():
    """The helpers agree with a direct NumPy computation."""
    _seed()
    A, Wq, S = dq.random_problem(3, 8, 256, 4, 128)
    q = dq.unpack(Wq, 4).numpy().astype(np.float64)
    w = (q * np.repeat(S.float().numpy(), 128, axis=1)).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(dq.reference(A, Wq, S).numpy(),
                               A.double().numpy() @ w.T, rtol=1e-12, atol=1e-12)


def test_narrow_index_makes_shared_offsets_32_bit():
    """tl.narrow_index (CUDA) runs MLIR's integer range narrowing: the
    shared-memory offsets and swizzles of the dequant loop become 32-bit
    (each 64-bit logic op is two on the GPU); still no spills."""
    import re

    from tilelang_mlir.compiler.cuda import resource_report

    program = dq.program(16, 256, 1024, 4, config=dq.PORTABLE_DECODE)
    counts = []
    for narrow in (False, True):
        kernel = tl.compile(program, out_idx=[3], target="cuda:sm_90a",
                            pass_configs={"tl.narrow_index": narrow})
        counts.append(len(re.findall(r"^\s+(or|xor|shl|and|shr)\.b64", kernel.get_source(),
                                     re.M)))
        report = resource_report(kernel.ptxas_info)
        assert report["spill_stores"] == 0 and report["spill_loads"] == 0
    assert counts[1] * 5 < counts[0], counts


@pytest.mark.parametrize("bits,dtype,group,block_K", [
    (4, "float16", 32, 128), (8, "bfloat16", 64, 256), (4, "bfloat16", 128, 64)])
def test_dequant_gemv_steps_over_several_groups(bits, dtype, group, block_K):
    """GEMV steps longer than a group (the per-element group index) and
    shorter ones, ragged N."""
    _seed()
    N, K = 37, 1024
    config = dict(block_N=4, block_K=block_K, threads=32)
    kernel = tl.compile(dq.program(1, N, K, bits, group, dtype, config), out_idx=[3],
                        target="cpu")
    A, Wq, S = dq.random_problem(1, N, K, bits, group, dtype)
    err = relative_error(kernel(*dq.inputs_for(config, A, Wq, S, bits)).float().numpy(),
                         dq.reference(A, Wq, S, bits, group).numpy())
    assert err < OUT_TOL[dtype], err


def test_gemv_step_must_fit_the_groups():
    with pytest.raises(ValueError, match="divide the group size 128 or be a multiple"):
        dq.dequant_gemv(64, 1024, 4, 128, block_K=192)
    with pytest.raises(ValueError, match="does not split into steps"):
        dq.dequant_gemv(64, 1024, 4, 128, block_K=1024)  # 512 bytes a row


@pytest.mark.parametrize("x_range,base,offset,bias,ftype", [
    # (integers, float bits of 2^p, integer constant added, float subtracted)
    # as tile-fast-int-to-float emits them (test/lit/.../tile-fast-int-to-float).
    ((-8, 7), 0x6400, 25608, 1032.0, np.float16),
    ((0, 15), 0x4300, 17152, 128.0, "bfloat16"),
    ((-128, 127), 0x6400, 25728, 1152.0, np.float16),
    ((-128, 127), 0x4B000000, 1258291328, float.fromhex("0x1.000100p+23"), np.float32),
])
def test_magic_number_conversion_is_exact(x_range, base, offset, bias, ftype):
    """The constants of the magic-number conversion give every integer of
    the range exactly: bits(offset + x) as the float, minus bias, is x."""
    x = np.arange(x_range[0], x_range[1] + 1, dtype=np.int64)
    assert offset == base - x_range[0]
    bits = offset + x
    if ftype == "bfloat16":
        v = torch.tensor(bits.astype(np.int16)).view(torch.bfloat16)
        out = (v - torch.tensor(bias, dtype=torch.bfloat16)).float().numpy()
    elif ftype is np.float16:
        out = (bits.astype(np.uint16).view(np.float16) - np.float16(bias)).astype(np.float64)
    else:
        out = (bits.astype(np.uint32).view(np.float32) - np.float32(bias)).astype(np.float64)
        out = torch.tensor(out).to(torch.bfloat16).double().numpy()  # the exact truncf
    np.testing.assert_array_equal(out, x.astype(np.float64))


@pytest.mark.parametrize("bits,dtype", [(4, "float16"), (8, "float16"), (4, "bfloat16"),
                                        (8, "bfloat16")])
def test_cuda_dequant_converts_without_i2f(bits, dtype):
    """On the GPU the weights become float16/bfloat16 by the magic-number
    trick (tile-fast-int-to-float): no integer-to-float conversion of a
    nibble or byte is left in the PTX of the GEMV or the decode GEMM."""
    import re

    for M, config in ((1, None), (16, dq.PORTABLE_DECODE)):
        kernel = tl.compile(dq.program(M, 256, 1024, bits, dtype=dtype, config=config),
                            out_idx=[3], target="cuda:sm_90a")
        ptx = kernel.get_source()
        assert not re.search(r"cvt\.rn\.(b?f16|f32)\.[su](8|16|32)", ptx), M
        assert re.search(r"(sub|add)(\.rn)?\.(b?f16|f32)", ptx), M


@pytest.mark.gpu
@pytest.mark.parametrize("bits,dtype", [(4, "float16"), (8, "bfloat16"), (4, "bfloat16")])
def test_cuda_dequant_kernels_match_reference(bits, dtype):
    """The GEMV and the decode GEMM on the GPU (magic-number conversion)."""
    _seed()
    N, K = 300, 2048
    # Every kernel compiled before the first launch (an AOT prepare stops there).
    tn = [c for c in dq.DECODE if c.get("tn")]
    kernels = [(M, config, tl.compile(dq.program(M, N, K, bits, dtype=dtype, config=config),
                                      out_idx=[3], target="cuda"))
               for M, config in ((1, None), (16, None), (5, dq.PORTABLE_DECODE),
                                 *(((7, dq.PAIRS[5]), (16, dict(dq.PAIRS[3], w_shared=False)),
                                    (130, dq.PREFILL[0]))
                                   if dtype == "float16" else ()),
                                 (16, tn[2]), (3, tn[3]), (16, dq.PACKED[1]),
                                 (7, dq.PACKED[2]), (9, dq.PACKED[3]), (16, dq.PACKED[4]),
                                 (16, dq.PACKED[5]), (16, dq.PACKED[6]))]
    for M, config, kernel in kernels:
        A, Wq, S = dq.random_problem(M, N, K, bits, 128, dtype, kernel.device)
        config = config or dq.default_config(M, N, K, bits, 128, dtype)
        err = relative_error(kernel(*dq.inputs_for(config, A, Wq, S, bits)).float().cpu().numpy(),
                             dq.reference(A, Wq, S, bits, 128).numpy())
        assert err < OUT_TOL[dtype], (M, err)


@pytest.mark.gpu
@pytest.mark.parametrize("bits", [4, 8])
def test_cuda_dequant_gemm_pairs_tiled(bits):
    """The pair GEMM on tiled weights and scales (one contiguous TMA box
    each a step), the decode list's tiled configs that fit: 256 and 512
    threads, one and two gemms a step, synchronous or not."""
    _seed()
    M, N, K = 16, 512, 2048
    configs = [c for c in dq.PAIRS
               if c.get("tiled") and dq.pair_ring_fits(c, bits)]
    assert len(configs) == (3 if bits == 4 else 1)
    kernels = [(c, tl.compile(dq.program(M, N, K, bits, config=c), out_idx=[3], target="cuda"))
               for c in configs]
    for config, kernel in kernels:
        A, Wq, S = dq.random_problem(M, N, K, bits, 128, "float16", kernel.device)
        err = relative_error(kernel(*dq.inputs_for(config, A, Wq, S, bits)).float().cpu().numpy(),
                             dq.reference(A, Wq, S, bits, 128).numpy())
        assert err < 1e-3, (config, err)


@pytest.mark.parametrize("bits", [4, 8])
def test_cuda_gemv_dequantizes_with_one_fma(bits):
    """The chunked GEMV puts each nibble (byte) into the top of a float32
    mantissa (T.reinterpret) and accumulates it with one fused multiply-add,
    the scale applied once a chunk: no float16 arithmetic, no integer-to-float
    conversion, one FMA a weight (the per-byte kernel takes two), the words
    in 16-byte loads."""
    import re

    def fmas(config):
        ptx = tl.compile(dq.program(1, 256, 1024, bits, 128, "float16", config), out_idx=[3],
                         target="cuda:sm_90a").get_source()
        assert not re.search(r"(add|sub|mul)(\.rn)?\.f16", ptx)
        assert not re.search(r"cvt\.rn\.f32\.[su](8|16|32)", ptx)
        return ptx, len(re.findall(r"fma\.rn\.f32", ptx))

    config = dict(block_N=4, block_K=256, threads=64)
    weights = 4 * 256 // 64 * (2 if bits == 4 else 1)  # a thread's per step (one chunk)
    ptx, count = fmas(config)
    assert weights <= count <= weights + 4, count  # + the chunk's scaling
    assert "ld.global.v4.b32" in ptx
    # mask and exponent in one lop3 a weight (tile-fuse-lop3), unless turned off
    assert len(re.findall(r"lop3\.b32", ptx)) == weights, ptx.count("lop3")
    off = tl.compile(dq.program(1, 256, 1024, bits, 128, "float16", config), out_idx=[3],
                     target="cuda:sm_90a", pass_configs={"tl.disable_lop3": True}).get_source()
    assert "lop3" not in off
    _, count = fmas(dict(config, elementwise=True))
    assert count >= 2 * weights


@pytest.mark.gpu
@pytest.mark.parametrize("bits,config", [(4, dq.GEMV[0]), (8, dq.GEMV[0]),
                                         (4, dict(block_N=8, block_K=1024, threads=128))])
def test_cuda_gemv_lop3_changes_no_bit(bits, config):
    """tile-fuse-lop3 computes the same bits: the GEMV (pairs, float32
    chunks) with and without it gives identical outputs (and both match the
    reference)."""
    _seed()
    N, K = 320, 2048
    program = dq.program(1, N, K, bits, 128, "float16", config)
    fused = tl.compile(program, out_idx=[3], target="cuda")
    plain = tl.compile(program, out_idx=[3], target="cuda",
                       pass_configs={"tl.disable_lop3": True})
    A, Wq, S = dq.random_problem(1, N, K, bits, 128, "float16", fused.device)
    inputs = dq.inputs_for(config, A, Wq, S, bits)
    a, b = fused(*inputs).float().cpu().numpy(), plain(*inputs).float().cpu().numpy()
    np.testing.assert_array_equal(a, b)
    assert relative_error(a, dq.reference(A, Wq, S, bits, 128).numpy()) < 1.5e-3


PAIRS_T = dict(pairs=True, w_shared=True, block_M=16, block_N=256, block_K=128, num_stages=3)


@pytest.mark.parametrize("threads", [256, 512])
def test_cuda_setmaxnreg_asks_only_what_the_producer_frees(threads):
    """A warp-specialized kernel starts with 64K / threads registers a
    thread (in steps of 8); setmaxnreg.inc can only give the consumers what
    the producer warpgroup's setmaxnreg.dec released in the same block, and
    asking for more blocks forever (512 consumer threads used to ask for
    112 with 96 at entry and hang on the H200)."""
    import re

    config = dict(PAIRS_T, threads=threads)
    ptx = tl.compile(dq.program(16, 1024, 1024, 4, 128, "float16", config), out_idx=[3],
                     target="cuda:sm_90a").get_source()
    total = int(re.search(r"\.maxntid\s+(\d+)", ptx).group(1))
    dec = int(re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+)", ptx).group(1))
    inc = int(re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+)", ptx).group(1))
    entry = 65536 // total // 8 * 8
    producers = total - threads
    assert producers == 128 and inc > entry > dec
    assert (inc - entry) * threads <= (entry - dec) * producers, (entry, dec, inc)


def test_cuda_producer_registers_pass_config():
    """The TMA producer keeps 24 registers by default, so the two consumer
    warpgroups of a 384-thread block get 240 (232 with the producer at 40,
    tl.producer_registers); values setmaxnreg cannot take are refused."""
    import re

    def budgets(**pass_configs):
        ptx = tl.compile(dq.program(16, 1024, 1024, 4, 128, "float16", dict(PAIRS_T, threads=256)),
                         out_idx=[3], target="cuda:sm_90a", pass_configs=pass_configs).get_source()
        return [int(re.search(rf"setmaxnreg\.{d}\.sync\.aligned\.u32\s+(\d+)", ptx).group(1))
                for d in ("dec", "inc")]

    assert budgets() == [24, 240]
    assert budgets(**{"tl.producer_registers": 40}) == [40, 232]
    for bad in (30, 16, 264, True, "24"):
        with pytest.raises(ValueError, match="tl.producer_registers"):
            budgets(**{"tl.producer_registers": bad})


def test_cuda_shared_memory_is_addressed_with_32_bit_registers():
    """Shared-memory loads and stores take 32-bit addresses (LLVM's
    nvptx-short-ptr): no 64-bit register holds a shared address."""
    import re

    ptx = tl.compile(dq.program(16, 1024, 1024, 4, 128, "float16", dict(PAIRS_T, threads=256)),
                     out_idx=[3], target="cuda:sm_90a").get_source()
    shared = re.findall(r"(?:ld|st)\.shared\S*\s+[^;]*", ptx)
    assert shared and not [s for s in shared if "[%rd" in s], shared[:4]



def test_benchmark_read_floor_sums_rows():
    """The dequant benchmark's read-floor kernel (the weights' words read and
    summed, no arithmetic) sums each row, wrapping like int32, on a ragged
    N; its words are the packed weights' (int4: K / 8 a row)."""
    import importlib.util
    import os

    from support import ROOT as root
    spec = importlib.util.spec_from_file_location(
        "dequant_benchmark_under_test", os.path.join(root, "benchmarks", "dequant.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    case = bench.Case("dq", (1, 44, 2048), 4)
    assert bench.floor_words(case) == (44, 256)
    kernel = tl.compile(bench.read_floor(*bench.floor_words(case), block_W=64), out_idx=[1],
                        target="cpu")
    _seed()
    w = torch.randint(-2 ** 31, 2 ** 31 - 1, (44, 256), dtype=torch.int32)
    want = w.to(torch.int64).sum(dim=1).to(torch.int32)
    assert torch.equal(kernel(w), want)
    with pytest.raises(ValueError, match="do not split into steps"):
        bench.read_floor(44, 96, block_W=64)
