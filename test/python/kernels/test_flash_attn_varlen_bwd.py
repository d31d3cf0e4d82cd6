"""Variable-length FlashAttention backward (kernels.attention.
flash_attn_varlen_bwd) on fresh random inputs against float64 torch
autograd, sequence by sequence: packed sequences whose tiles run into the
next sequence (lengths of 1, under a tile, several tiles plus a tail),
causal and not, GQA (dK, dV summed over a group), float16 and bfloat16,
one compiled backward for several totals. O and the LSE come from our
varlen forward. Small sizes: the CPU target runs them in CI; the `cuda`
target runs them on a GPU."""

import pytest
import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention import flash_attn_varlen as fav
from tilelang_mlir.kernels.attention import flash_attn_varlen_bwd as fvb
from support.devices import get, put

TOL = {"float16": 1e-2, "bfloat16": 2e-2}


def rel_error(out, ref):
    out = torch.as_tensor(get(out)).double()
    assert torch.isfinite(out).all(), "output has NaN/Inf"
    return ((out - ref).norm() / ref.norm()).item()


def check(target, lens_list, heads, dim, groups=1, causal=False, dtype="float16", **blocks):
    batch, max_seqlen = len(lens_list[0]), max(max(lens) for lens in lens_list)
    fwd = tl.compile(fav.flash_attn_varlen(batch, heads, max_seqlen, dim, causal, groups,
                                           block_M=64, block_N=64, dtype=dtype),
                     out_idx=[4, 5], target=target)
    bwd = fvb.FlashAttnVarlenBwd(batch, heads, max_seqlen, dim, causal, groups, dtype=dtype,
                                 target=target, **blocks)
    for lens in lens_list:
        q, k, v, cu = fav.make_inputs(lens, heads, dim, groups, dtype=getattr(torch, dtype))
        do = torch.randn(q.shape).to(q.dtype)
        dev = [put(x, target) for x in (q, k, v, cu, do)]
        o, lse = fwd(*dev[:4])
        dq, dk, dv = bwd(dev[0], dev[1], dev[2], o, dev[4], lse, dev[3])
        refs = fvb.reference(q, k, v, do, cu, is_causal=causal)
        for name, out, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), refs):
            assert tuple(out.shape) == tuple(ref.shape), name
            err = rel_error(out, ref)
            assert err < TOL[dtype], (name, lens, err)


def test_varlen_bwd_tails_into_the_next_sequence(target):
    """Lengths 1, under a tile, a tile plus a tail: every tile that runs
    past a sequence reads the next one's rows; one backward for two
    packings with different totals."""
    check(target, [[70, 1, 33], [5, 130, 64]], 2, 64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_varlen_bwd_causal_gqa(target, dtype):
    """Causal, two query heads per KV head (dK, dV summed over the group)."""
    check(target, [[90, 17, 64]], 4, 64, groups=2, causal=True, dtype=dtype)


@pytest.mark.gpu
def test_varlen_bwd_d128():
    """D=128 with the default tiles (256 threads), causal, longer sequences,
    on the GPU only (a CPU case under the gpu mark would run on GPU machines
    and fail on those without the compiler)."""
    check("cuda", [[300, 1, 513, 128]], 4, 128, causal=True)


def test_varlen_bwd_groups_must_divide_heads():
    with pytest.raises(tl.TileLangError, match="not a multiple of groups"):
        fvb.flash_attn_varlen_bwd(1, 3, 64, 64, groups=2)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_varlen_bwd_assembles(arch):
    """The main kernel at D=128 assembles for sm_80 and sm_90a without
    register spills."""
    from tilelang_mlir.compiler.cuda import resource_report

    kernel = tl.compile(fvb.flash_attn_varlen_bwd(4, 8, 1024, 128, is_causal=True, groups=2,
                                                  **fvb.BLOCKS[128]),
                        out_idx=[8, 9], target=f"cuda:{arch}",
                        pass_configs={"tl.disable_cache": True})
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, kernel.ptxas_info
