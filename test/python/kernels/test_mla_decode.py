"""MLA decode (tilelang_mlir.kernels.attention.mla_decode) on fresh random inputs
against a float64 PyTorch reference that gathers the paged cache: cache
lengths that are not multiples of the page size, several splits (some of
them empty for the short sequences), a shuffled block table, float16 and
bfloat16. Small sizes: the CPU target runs them in CI; the `cuda` target
runs them on a GPU."""

import math
import re

import pytest
import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention import mla_decode as mla
from support.devices import get, put


# Relative Frobenius error of O (P is rounded to the input dtype before P V).
TOL = {"float16": 1e-2, "bfloat16": 2e-2}


def rel_error(out, ref):
    out = torch.as_tensor(get(out)).double()
    assert torch.isfinite(out).all(), "output has NaN/Inf"
    return ((out - ref).norm() / ref.norm()).item()


def run(target, heads, cache_lens, num_splits, dtype="float16", **config):
    batch = len(cache_lens)
    inputs = mla.make_inputs(batch, heads, cache_lens, dtype=getattr(torch, dtype))
    num_pages, max_pages = inputs[2].shape[0], inputs[3].shape[1]
    kernel = mla.MlaDecode(batch, heads, num_pages, max_pages, num_splits, target=target,
                           dtype=dtype, **config)
    o = kernel(*(put(x, target) for x in inputs))
    assert tuple(o.shape) == (batch, heads, mla.DV)
    return rel_error(o, mla.reference(*inputs))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mla_decode_ragged_lengths(target, dtype):
    """Three sequences: one page and a bit, several pages plus a tail, and
    a single token (its later splits are empty)."""
    err = run(target, 64, [100, 333, 1], num_splits=3, dtype=dtype)
    assert err < TOL[dtype], err


def test_mla_decode_two_head_groups_one_split(target):
    """128 heads (two blocks of 64), no split: the combine sees one share."""
    err = run(target, 128, [130, 64], num_splits=1)
    assert err < TOL["float16"], err


def test_mla_decode_half_page_tiles(target):
    """32-token KV tiles (the sm_80 configuration): two tiles per page, the
    second at row 32 of its page."""
    err = run(target, 64, [90, 161], num_splits=2, **mla.AMPERE)
    assert err < TOL["float16"], err


def test_mla_decode_more_splits_than_pages(target):
    """Four splits of a two-page sequence and of a 63-token one: empty
    splits give LSE -inf and weigh nothing."""
    err = run(target, 64, [127, 63], num_splits=4, num_stages=1)
    assert err < TOL["float16"], err


def test_mla_decode_lse_of_a_split(target):
    """The split kernel's partial LSE is the natural log-sum-exp of the
    scaled scores of its pages (checked for one split of one sequence)."""
    lens = [200]
    q, q_pe, kv, table, seqlens = mla.make_inputs(1, 64, lens)
    kernel = tl.compile(mla.mla_decode_split(1, 64, kv.shape[0], table.shape[1], 1),
                        out_idx=[5, 6], target=target)
    o_part, lse_part = kernel(*(put(x, target) for x in (q, q_pe, kv, table, seqlens)))
    cache = kv[table[0].long()].reshape(-1, mla.DV + mla.DPE)[:200].double()
    s = torch.cat([q[0], q_pe[0]], -1).double() @ cache.T / math.sqrt(mla.DV + mla.DPE)
    lse = torch.as_tensor(get(lse_part)).double()[0, 0]
    assert torch.allclose(lse, torch.logsumexp(s, -1), rtol=1e-4, atol=1e-4)


def test_mla_decode_hopper_config_assembles():
    """The Hopper configuration (64-token tiles, 2 stages: 226 KB of shared
    memory, more than sm_80 has) compiles for sm_90a with a TMA producer
    (the block table is read by the producer) and no register spills."""
    from tilelang_mlir.compiler.cuda import resource_report
    kernel = tl.compile(mla.mla_decode_split(64, 128, 64 * 128, 128, 4, **mla.HOPPER),
                        out_idx=[5, 6], target="cuda:sm_90a",
                        pass_configs={"tl.disable_cache": True})
    ptx = kernel.get_source()
    assert "setmaxnreg" in ptx and "cp.async.bulk.tensor" in ptx
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, kernel.ptxas_info
    assert "C7510" not in kernel.ptxas_info, kernel.ptxas_info  # wgmma serialized at a call


def test_mla_decode_replicated_scores(target):
    """scores="replicate": each warpgroup computes the whole score tile and
    P stays a fragment (the A operand of P V); same results."""
    err = run(target, 64, [200, 64, 130], num_splits=2, scores="replicate")
    assert err < TOL["float16"], err


def test_mla_decode_replicate_assembles():
    """The replicated-score Hopper configuration compiles for sm_90a: the
    score gemm as 64x64 wgmma tiles on each warpgroup, P V in the register-A
    form (m64n256, P from registers), no register spills."""
    from tilelang_mlir.compiler.cuda import resource_report
    kernel = tl.compile(mla.mla_decode_split(64, 128, 64 * 128, 128, 4,
                                             **mla.HOPPER_REPLICATE),
                        out_idx=[5, 6], target="cuda:sm_90a",
                        pass_configs={"tl.disable_cache": True})
    ptx = kernel.get_source()
    assert "wgmma.mma_async.sync.aligned.m64n64k16" in ptx
    assert "m64n32k16" not in ptx
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, kernel.ptxas_info


# ---------------------------------------------------------------------------
# The version with explicit warpgroup roles (kernels/attention/mla_decode_roles.py):
# GPU only (roles run concurrently; the CPU backend refuses them).
# ---------------------------------------------------------------------------


def run_roles(heads, cache_lens, num_splits, dtype="float16", schedule="MlaDecodeRoles",
              **config):
    from tilelang_mlir.kernels.attention import mla_decode_roles as roles

    batch = len(cache_lens)
    inputs = mla.make_inputs(batch, heads, cache_lens, dtype=getattr(torch, dtype))
    num_pages, max_pages = inputs[2].shape[0], inputs[3].shape[1]
    kernel = getattr(roles, schedule)(batch, heads, num_pages, max_pages, num_splits,
                                      target="cuda", dtype=dtype, **config)
    o = kernel(*(put(x, "cuda") for x in inputs))  # (AOT prepare: compiled, then skipped)
    assert tuple(o.shape) == (batch, heads, mla.DV)
    return rel_error(o.cpu(), mla.reference(*inputs))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mla_decode_roles_ragged_lengths(dtype):
    """Ragged lengths, empty later splits, two head groups, a shuffled block
    table; the producer's TMA tiles, the consumers' hand-over of P and alpha
    and the barrier phases over many tiles."""
    err = run_roles(128, [100, 333, 1, 1500], num_splits=3, dtype=dtype)
    assert err < TOL[dtype], err


@pytest.mark.gpu
def test_mla_decode_roles_one_stage_many_tiles():
    """One KV slot: the producer waits for both consumers every tile."""
    err = run_roles(64, [2000, 77], num_splits=1, num_stages=1)
    assert err < TOL["float16"], err


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mla_decode_seesaw_ragged_lengths(dtype):
    """The seesaw schedule: ragged lengths (odd and even tile counts, a
    sequence of one token, so a masked partner tile; empty later splits),
    two head groups, a shuffled block table."""
    err = run_roles(128, [100, 333, 1, 1500, 640], num_splits=3, dtype=dtype,
                    schedule="MlaDecodeSeesaw")
    assert err < TOL[dtype], err


@pytest.mark.gpu
def test_mla_decode_seesaw_many_pairs():
    """Many pairs of tiles in one split: the barrier phases, the slots'
    parts refilled while the other warpgroup reads them, the rescaling of
    P and O between the two warpgroups' maxima."""
    err = run_roles(64, [4096 + 64 * 7 + 5, 3 * 64], num_splits=1, schedule="MlaDecodeSeesaw")
    assert err < TOL["float16"], err


def test_mla_decode_seesaw_assembles():
    """The seesaw program compiles for sm_90a: 256 threads (no producer
    warpgroup: each consumer issues the TMA loads of the parts it frees),
    the async score and P V gemms on wgmma (m64n64 and m64n256), the P V of
    P from registers, and no wgmma serialized by ptxas. At 255 registers
    ptxas spills a few values outside the main loop (the epilogue's): the
    bound below holds them to that."""
    from tilelang_mlir.compiler.cuda import resource_report
    from tilelang_mlir.kernels.attention import mla_decode_roles as roles

    kernel = tl.compile(roles.mla_decode_seesaw_split(64, 128, 64 * 128, 128, 2),
                        out_idx=[5, 6], target="cuda:sm_90a",
                        pass_configs={"tl.disable_cache": True})
    ptx = kernel.get_source()
    assert re.search(r"\.maxntid 256", ptx)
    assert "cp.async.bulk.tensor" in ptx and "mbarrier.expect_tx" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in ptx
    assert "C7514" not in kernel.ptxas_info and "C7517" not in kernel.ptxas_info, \
        kernel.ptxas_info
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] <= 32 and report["spill_loads"] <= 48, kernel.ptxas_info


def test_mla_decode_roles_assembles_without_spills():
    """Both MLA versions compile for sm_90a with no register spills: the
    roles' budgets (232, 232, 40 registers) hold the two halves of O."""
    from tilelang_mlir.compiler.cuda import resource_report
    from tilelang_mlir.kernels.attention import mla_decode_roles as roles

    kernel = tl.compile(roles.mla_decode_roles_split(64, 128, 64 * 128, 128, 4),
                        out_idx=[5, 6], target="cuda:sm_90a",
                        pass_configs={"tl.disable_cache": True})
    ptx = kernel.get_source()
    assert "setmaxnreg.dec.sync.aligned.u32" in ptx and "cp.async.bulk.tensor" in ptx
    assert "mbarrier.expect_tx" in ptx
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, kernel.ptxas_info


@pytest.mark.parametrize("program", ["mla_decode_roles_split", "mla_decode_seesaw_split"])
def test_mla_decode_roles_refuse_the_cpu(program):
    from tilelang_mlir.base.errors import CompilationError
    from tilelang_mlir.kernels.attention import mla_decode_roles as roles

    with pytest.raises(CompilationError, match="roles run concurrently"):
        tl.compile(getattr(roles, program)(1, 64, 4, 4, 1), out_idx=[5, 6], target="cpu")
