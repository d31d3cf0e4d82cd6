"""Flash decoding (tilelang_mlir.kernels.attention.flash_decode) on fresh random
inputs against a float64 PyTorch reference: ragged cache lengths in one
batch (lengths shorter than one split, shorter than one tile, not multiples
of the tile), grouped-query attention (the group's query heads as gemm
rows) and plain multi-head attention, contiguous and paged caches, head dim
64 and 128, float16 and bfloat16. Small sizes: the CPU target runs them in
CI; the `cuda` target runs them on a GPU."""

import math

import pytest
import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention import flash_decode as fd
from support.devices import get, put


# Relative Frobenius error of O (P is rounded to the input dtype before P V).
TOL = {"float16": 1e-2, "bfloat16": 2e-2}


def rel_error(out, ref):
    out = torch.as_tensor(get(out)).double()
    assert torch.isfinite(out).all(), "output has NaN/Inf"
    return ((out - ref).norm() / ref.norm()).item()


def run(target, heads, kv_heads, dim, cache_lens, num_splits, page_size=None, dtype="float16",
        **config):
    batch = len(cache_lens)
    q, k, v, lens, table = fd.make_inputs(batch, heads, kv_heads, dim, cache_lens, page_size,
                                          dtype=getattr(torch, dtype))
    paged = {} if table is None else dict(page_size=page_size, num_pages=k.shape[0],
                                          max_pages=table.shape[1])
    kernel = fd.FlashDecode(batch, heads, kv_heads, dim, max_seq=max(cache_lens),
                            num_splits=num_splits, target=target, dtype=dtype, **config, **paged)
    args = [put(x, target) for x in (q, k, v, lens)]
    if table is not None:
        args.append(put(table, target))
    o = kernel(*args)
    assert tuple(o.shape) == (batch, heads, dim)
    return rel_error(o, fd.reference(q, k, v, lens, table))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_flash_decode_gqa_ragged_lengths(target, dtype):
    """Four query heads per KV head, D=128, 64-token tiles, 3 splits: one
    sequence of several tiles plus a tail, one shorter than a split (its
    later splits are empty), one token."""
    err = run(target, 8, 2, 128, [333, 70, 1], num_splits=3, dtype=dtype, block_N=64)
    assert err < TOL[dtype], err


def test_flash_decode_mha_d64(target):
    """groups = 1 (one real row of the score gemm), D=64, 128-token tiles,
    lengths shorter than one tile and not multiples of it."""
    err = run(target, 4, 4, 64, [5, 129, 260], num_splits=2)
    assert err < TOL["float16"], err


def test_flash_decode_paged(target):
    """A paged cache with a shuffled block table (pages of 64, tiles of
    32: two tiles per page), GQA with 8 query heads per KV head."""
    err = run(target, 16, 2, 64, [200, 31, 129], num_splits=2, page_size=64, block_N=32)
    assert err < TOL["float16"], err


@pytest.mark.parametrize("num_splits", [8, 1])
def test_flash_decode_more_splits_than_tiles_and_one_split(target, num_splits):
    """Eight splits of sequences of one and two tiles (empty splits weigh
    nothing), and a single split (the split kernel writes O itself, in the
    input dtype; no combine runs). (One kernel per test: an AOT prepare
    stops at the first launch.)"""
    assert run(target, 8, 4, 64, [64, 65], num_splits=num_splits, block_N=64) < TOL["float16"]


def test_flash_decode_partial_lse(target):
    """The split kernel's partial LSE is the natural log-sum-exp of the
    scaled scores (one split, GQA: each query head against its KV head)."""
    q, k, v, lens, table = fd.make_inputs(1, 4, 2, 64, [150])
    kernel = fd.FlashDecode(1, 4, 2, 64, max_seq=150, num_splits=1, target=target, block_N=64)
    args = kernel.split_args(*(put(x, target) for x in (q, k, v, lens)))
    _, lse_part = kernel.split(*args)
    kb = k[0].double().repeat_interleave(2, dim=0)
    s = (kb @ q[0].double().unsqueeze(-1)).squeeze(-1) / math.sqrt(64)
    lse = torch.as_tensor(get(lse_part)).double().reshape(4)
    assert torch.allclose(lse, torch.logsumexp(s, -1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
def test_flash_decode_resident2(target, paged):
    """What ops.flash_decode runs on NVIDIA GPUs: 64-token tiles in 3
    stages loaded by cp.async (fd.RESIDENT2, fd.CP_ASYNC), GQA, ragged
    lengths, a paged cache with a shuffled block table."""
    err = run(target, 16, 2, 128, [200, 31, 129], num_splits=3, page_size=64 if paged else None,
              pass_configs=fd.CP_ASYNC, **fd.RESIDENT2)
    assert err < TOL["float16"], err


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_flash_decode_reuse_slots(target, stages):
    """The cp.async split kernel with tl.pipeline_reuse_slots (stages - 1
    K and V slots; a tile's K copy follows the score gemm, its V copy the
    P V gemm, each behind a barrier): GQA, ragged lengths, a paged cache."""
    err = run(target, 16, 2, 128, [200, 31, 129], num_splits=3, page_size=64, block_N=64,
              num_stages=stages,
              pass_configs=fd.CP_ASYNC_REUSE)
    assert err < TOL["float16"], err


@pytest.mark.parametrize("threads", [64, 32])
@pytest.mark.parametrize("kv_heads", [16, 2], ids=["mha", "gqa"])
def test_flash_decode_few_warps(target, threads, kv_heads):
    """The reuse-slots split kernel on two warps and on one (the softmax's
    row reductions and P's staging across fewer warps; the benchmark's
    fastest at B64 H32/32): multi-head and GQA, ragged lengths, a paged
    cache."""
    err = run(target, 16, kv_heads, 128, [200, 31, 129], num_splits=3, page_size=64,
              block_N=64, num_stages=3, threads=threads,
              pass_configs=fd.CP_ASYNC_REUSE)
    assert err < TOL["float16"], err


def test_flash_decode_reuse_slots_frees_a_slot():
    """With tl.pipeline_reuse_slots the 3-stage cp.async split kernel holds
    one K and one V tile less (64 x 128 halves each), so three blocks fit
    an H200 multiprocessor instead of two; no spills."""
    from tilelang_mlir.compiler.cuda import resource_report

    def build(extra):
        return tl.compile(fd.flash_decode_split(16, 32, 32, 128, 16, 4096, 1, 1, direct=True,
                                                **fd.RESIDENT2),
                          out_idx=[5, 6], target="cuda:sm_90a",
                          pass_configs=dict(fd.CP_ASYNC, **{"tl.disable_cache": True}, **extra))
    reused, plain = build({"tl.pipeline_reuse_slots": True}), build({})
    assert plain.shared_bytes - reused.shared_bytes == 2 * 64 * 128 * 2
    assert 3 * (reused.shared_bytes + 1024) <= 228 * 1024 < 3 * (plain.shared_bytes + 1024)
    report = resource_report(reused.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, reused.ptxas_info


@pytest.mark.parametrize("stages,reuse", [(2, False), (3, False), (3, True), (4, True)])
def test_flash_decode_group_per_copy(target, stages, reuse):
    """The cp.async split kernel with tl.pipeline_group_per_copy (the K and
    V copies commit a group each; the score gemm waits for K only, the P V
    gemm for V), alone and with reuse-slots: GQA, ragged lengths, a paged
    cache."""
    passes = dict(fd.CP_ASYNC, **{"tl.pipeline_group_per_copy": True,
                                  "tl.pipeline_reuse_slots": reuse})
    err = run(target, 16, 2, 128, [200, 31, 129], num_splits=3, page_size=64, block_N=64,
              num_stages=stages, pass_configs=passes)
    assert err < TOL["float16"], err


@pytest.mark.parametrize("reuse,waits", [(False, [3, 2]), (True, [3, 3])])
def test_group_per_copy_waits(reuse, waits):
    """With two groups a step, the 3-stage split kernel's score gemm lets 3
    groups pend (its own V and the next tile's K and V), where one group a
    step lets 1; the P V gemm waits again (2 pending; 3 with reuse-slots,
    where the K copy of tile i + 2 has been committed by then). The
    prologue has no consumer, so the steady loop's waits come first."""
    import re

    def waits_of(extra):
        kernel = tl.compile(fd.flash_decode_split(4, 32, 8, 128, 4, 4096, 1, 4, contiguous=True,
                                                  block_N=64, num_stages=3),
                            out_idx=[5, 6], target="cuda:sm_80",
                            pass_configs=dict(fd.CP_ASYNC, **{"tl.disable_cache": True,
                                                              "tl.pipeline_reuse_slots": reuse},
                                              **extra))
        return [int(n) for n in re.findall(r"tile.async_wait (\d+)", kernel.mlir("pipelined"))]
    assert waits_of({"tl.pipeline_group_per_copy": True})[:2] == waits
    assert waits_of({})[:2] == [1, 1]


def test_reuse_slots_excludes_early_copies():
    with pytest.raises(tl.TileLangError, match="tl.enable_early_copies and "
                                               "tl.pipeline_reuse_slots exclude each other"):
        tl.compile(fd.flash_decode_split(1, 8, 8, 64, 1, 256, 1, 1, direct=True, block_N=64,
                                         num_stages=3),
                   out_idx=[5, 6], target="cuda:sm_80",
                   pass_configs=dict(fd.CP_ASYNC_REUSE, **{"tl.enable_early_copies": True,
                                                           "tl.disable_cache": True}))


@pytest.mark.parametrize("num_splits,dim", [(64, 128), (5, 64), (24, 512)])
def test_splitkv_combine(target, num_splits, dim):
    """The combine kernel alone on random partials: 64 splits (two blocks of
    64 columns per head), a split count that is no power of two, and MLA's
    512 columns; some splits empty (LSE -inf, O 0), one head with a single
    non-empty split."""
    from tilelang_mlir.kernels.attention.online_softmax import splitkv_combine
    batch, heads = 2, 8
    o_part = torch.randn(batch, num_splits, heads, dim)
    lse_part = 4 * torch.randn(batch, num_splits, heads)
    empty = torch.rand(batch, num_splits, heads) < 0.3
    empty[:, 0, :] = False  # (every head has a non-empty split)
    empty[1, :, 3] = True  # head 3 of sequence 1: only its middle split
    empty[1, num_splits // 2, 3] = False
    lse_part[empty] = -math.inf
    o_part[empty.unsqueeze(-1).expand_as(o_part)] = 0
    kernel = tl.compile(splitkv_combine(batch, heads, num_splits, dim), out_idx=[2],
                        target=target)
    o = kernel(put(o_part, target), put(lse_part, target))
    weight = torch.softmax(lse_part.double(), dim=1).unsqueeze(-1)  # over the splits
    ref = (weight * o_part.double()).sum(1)
    assert rel_error(o, ref) < 2e-3


def test_flash_decode_bad_input():
    with pytest.raises(tl.TileLangError, match="not a multiple of 3 KV heads"):
        fd.flash_decode_split(1, 8, 3, 64, 1, 64, 1, 1)
    with pytest.raises(tl.TileLangError, match="within one page"):
        fd.flash_decode_split(1, 8, 2, 64, 4, 48, 4, 1, block_N=32)
    with pytest.raises(tl.TileLangError, match="a contiguous cache has one page a sequence"):
        fd.flash_decode_split(2, 8, 2, 64, 4, 64, 2, 1, contiguous=True)
    kernel = fd.FlashDecode(2, 4, 2, 64, max_seq=64, num_splits=1, target="cpu", block_N=64)
    q, k, v, lens, _ = fd.make_inputs(2, 4, 2, 64, [64, 10])
    with pytest.raises(tl.TileLangError, match="q is"):
        kernel(q[:1], k, v, lens)
    with pytest.raises(tl.TileLangError, match="block table"):
        kernel(q, k, v, lens, torch.zeros(2, 1, dtype=torch.int32))


def test_flash_decode_hopper_config_assembles():
    """The benchmark's Hopper configuration (D=128, 4 query heads per KV
    head, 128-token tiles) compiles for sm_90a with TMA loads and no
    register spills."""
    from tilelang_mlir.compiler.cuda import resource_report
    kernel = tl.compile(fd.flash_decode_split(16, 32, 8, 128, 16, 8192, 1, 4, **fd.HOPPER),
                        out_idx=[5, 6], target="cuda:sm_90a",
                        pass_configs={"tl.disable_cache": True})
    assert "cp.async.bulk.tensor" in kernel.get_source()
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, kernel.ptxas_info


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
def test_flash_decode_cp_async_barriers_merged(chip):
    """The cp.async split kernel (what ops.flash_decode runs) stages the
    row max, the row sum and P through scratch; they take turns over two
    scratch regions and tile-merge-barriers erases the barriers that then
    order nothing: fewer bar.sync than with tl.disable_barrier_merge, no
    spills, and the block's shared memory still leaves room for two blocks
    a multiprocessor on sm_90a."""
    from tilelang_mlir.compiler.cuda import resource_report

    def build(extra):
        return tl.compile(fd.flash_decode_split(16, 32, 32, 128, 16, 4096, 1, 1, direct=True,
                                                **fd.RESIDENT2),
                          out_idx=[5, 6], target=f"cuda:{chip}",
                          pass_configs=dict(fd.CP_ASYNC, **{"tl.disable_cache": True}, **extra))
    merged, kept = build({}), build({"tl.disable_barrier_merge": True})
    n_merged = merged.get_source().count("bar.sync")
    n_kept = kept.get_source().count("bar.sync")
    assert 0 < n_merged < n_kept, (n_merged, n_kept)
    report = resource_report(merged.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, merged.ptxas_info
    if chip == "sm_90a":
        shared = merged.shared_bytes
        assert 2 * (shared + 1024) <= 228 * 1024, shared
