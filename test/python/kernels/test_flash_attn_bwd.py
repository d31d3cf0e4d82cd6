"""FlashAttention backward (tilelang_mlir.kernels.attention.flash_attn_bwd)
on fresh random inputs against torch autograd: dQ, dK, dV for causal and not,
grouped-query attention (dK, dV summed over a group's query heads), float16
and bfloat16, head dims 64 and 128, sequence lengths that divide neither
tile. O and the LSE come from a float64 forward (O rounded to the input
dtype, as a forward kernel returns it). The CPU target checks against
float64 autograd at small sizes; the `cuda` target (marked gpu) runs the
same and, at realistic sizes, checks against float32 autograd."""

import pytest
import torch

from tilelang_mlir.kernels.attention import flash_attn_bwd as fab
from support.devices import put


# Relative Frobenius error of each gradient: P and dS are rounded to the
# input dtype before their gemms (about 3e-4 in float16, 3e-3 in bfloat16
# measured); a wrong scale, mask or group sum is off by more than 1e-1.
TOL = {"float16": 3e-3, "bfloat16": 2e-2}


def rel_error(out, ref):
    out = out.detach().cpu().double()
    assert torch.isfinite(out).all(), "gradient has NaN/Inf"
    ref = ref.detach().cpu().double()
    return ((out - ref).norm() / ref.norm()).item()


def run(target, batch, heads, seq_len, dim, is_causal=False, groups=1, dtype="float16", **blocks):
    """Runs the three kernels on random inputs; returns the relative errors
    of dQ, dK, dV against autograd (after checking shapes and dtypes)."""
    bwd = fab.FlashAttnBwd(batch, heads, seq_len, dim, is_causal, groups, dtype, target=target,
                           **blocks)
    torch_dtype = getattr(torch, dtype)
    q = torch.randn(batch, heads, seq_len, dim).to(torch_dtype)
    k = torch.randn(batch, heads // groups, seq_len, dim).to(torch_dtype)
    v = torch.randn(batch, heads // groups, seq_len, dim).to(torch_dtype)
    do = torch.randn(batch, heads, seq_len, dim).to(torch_dtype)
    q, k, v, do = (put(x, target) for x in (q, k, v, do))
    torch.backends.cuda.matmul.allow_tf32 = False
    o, lse = fab.forward(q, k, v, is_causal)
    dq, dk, dv = bwd(q, k, v, o, do, lse)
    for grad, x in zip((dq, dk, dv), (q, k, v)):
        assert grad.shape == x.shape and grad.dtype == torch_dtype, (grad.shape, grad.dtype)
    refs = fab.reference(q, k, v, do, is_causal)
    return tuple(rel_error(g, r) for g, r in zip((dq, dk, dv), refs))


SMALL = dict(block_M=32, block_N=32, threads=128)


@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim", [64, 128])
def test_flash_attn_bwd(dim, is_causal, target):
    errors = run(target, 1, 2, 128, dim, is_causal)
    assert max(errors) < TOL["float16"], errors


@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_bwd_dq_by_tma(is_causal, target):
    """dq through a float32 shared tile and T.atomic_add(..., use_tma=True)
    (a TMA reduce-add on sm_90; element by element on the CPU), GQA, a
    sequence past the last Q block's end (TMA drops the rows past it)."""
    errors = run(target, 1, 4, 200, 64, is_causal, groups=2, block_M=64, block_N=64,
                 threads=256 if target == "cuda" else 128, dq_tma=True)
    assert max(errors) < TOL["float16"], errors


@pytest.mark.parametrize("dq_tma", [False, True], ids=["atomics", "dq-tma"])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_bwd_overlap(is_causal, dq_tma, target):
    """Asynchronous gemms (overlap=True: S^T and dP^T in flight together,
    dV and dK accumulating while the next values are computed; synchronous
    on the CPU), key tiles twice the query tiles (causal tiles crossing the
    diagonal at two query blocks), GQA, a sequence past the last tiles."""
    blocks = (dict(block_M=128, block_N=64, threads=256) if target == "cuda"
              else dict(block_M=64, block_N=32, threads=128))
    errors = run(target, 1, 4, 200, 128, is_causal, groups=2, overlap=True, dq_tma=dq_tma,
                 **blocks)
    assert max(errors) < TOL["float16"], errors


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_flash_attn_bwd_gqa(dtype, target):
    """Four query heads per KV head: dK, dV sum over the group."""
    errors = run(target, 2, 8, 96, 64, is_causal=True, groups=4, dtype=dtype, **SMALL)
    assert max(errors) < TOL[dtype], errors


@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_bwd_ragged_sequence(is_causal, target):
    """A sequence that divides neither tile (KV block 64, Q block 32): the
    last KV block and the last Q block run past the end."""
    errors = run(target, 1, 4, 100, 64, is_causal, groups=2, block_M=64, block_N=32)
    assert max(errors) < TOL["float16"], errors


@pytest.mark.parametrize("heavy_first", [False, True], ids=["grid", "chunks"])
@pytest.mark.parametrize("batch,heads,groups", [(3, 8, 2), (1, 6, 2), (1, 7, 1)])
def test_flash_attn_bwd_block_order(batch, heads, groups, heavy_first, target):
    """Causal KV blocks in grid order or longest first over chunks of
    (KV head, batch) pairs: 12 pairs make chunks of 4, 3 of 3, 7 of 1;
    dK, dV of every block and dQ summed over them."""
    errors = run(target, batch, heads, 100, 64, True, groups=groups, block_M=32, block_N=32,
                 heavy_first=heavy_first)
    assert max(errors) < TOL["float16"], errors


def test_flash_attn_bwd_bfloat16_d128(target):
    errors = run(target, 1, 2, 160, 128, is_causal=True, dtype="bfloat16")
    assert max(errors) < TOL["bfloat16"], errors


def test_flash_attn_bwd_bad_groups():
    with pytest.raises(ValueError, match="multiple of groups"):
        fab.flash_attn_bwd(1, 6, 128, 64, groups=4)


@pytest.mark.gpu
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim", [64, 128])
def test_flash_attn_bwd_realistic(dim, is_causal):
    """The default tiles at a realistic size against float32
    autograd on the GPU."""
    errors = run("cuda", 2, 8, 1024, dim, is_causal)
    assert max(errors) < TOL["float16"], errors


@pytest.mark.gpu
def test_flash_attn_bwd_realistic_gqa_bf16():
    errors = run("cuda", 2, 8, 1000, 128, is_causal=True, groups=2, dtype="bfloat16")
    assert max(errors) < TOL["bfloat16"], errors


@pytest.mark.gpu
@pytest.mark.parametrize("dim", [64, 128])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_bwd_producer_tile_copies(is_causal, dim):
    """The Hopper tiles launched one block a tile with K and V copied by
    the TMA producer (tl.producer_tile_copies) and reused for the dK/dV
    stores: GQA, a ragged sequence (the last block's K and V rows past the
    end zero-filled by TMA)."""
    blocks = fab.default_blocks(dim, is_causal, True)
    configs = dict(blocks.pop("pass_configs", {}),
                   **{"tl.persistent_sms": 0, "tl.producer_tile_copies": True})

    def tma_copies(passes):
        main = fab.FlashAttnBwd(2, 8, 1000, dim, is_causal, 2, target="cuda",
                                pass_configs=passes, **blocks).main
        return main.get_kernel_source().count("cp.async.bulk.tensor.4d.shared::cluster.global")
    assert tma_copies(configs) > tma_copies(dict(configs, **{"tl.producer_tile_copies": False}))
    errors = run("cuda", 2, 8, 1000, dim, is_causal, groups=2, pass_configs=configs, **blocks)
    assert max(errors) < TOL["float16"], errors


@pytest.mark.gpu
@pytest.mark.parametrize("dim", [64, 128])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_bwd_early_tile_release(is_causal, dim):
    """dK and dV stored from their fragments (`dkv_tile`) in a persistent
    walk over 5 blocks with K and V freed after the loop
    (tl.early_tile_release): several tiles a block, the next tile's K and
    V copied during this tile's epilogue, dK and dV stored by TMA (4-d
    boxes, the rows past the ragged end clipped); GQA. At D=128 the walk
    has one K/V slot: without the option two do not fit and the kernel is
    launched one block a tile."""
    blocks = dict(fab.default_blocks(dim, is_causal, True), dkv_tile=True)
    configs = dict(blocks.pop("pass_configs", {}),
                   **{"tl.persistent_sms": 5, "tl.early_tile_release": True})

    def source(passes):
        return fab.FlashAttnBwd(2, 8, 1000, dim, is_causal, 2, target="cuda",
                                pass_configs=passes, **blocks).main.get_kernel_source()
    walked = source(configs)
    assert "%nctaid.x" in walked  # a persistent walk
    assert walked.count("cp.async.bulk.tensor.4d.global.shared::cta") >= 2  # dK, dV by TMA
    if dim == 128:
        assert "%nctaid.x" not in source(dict(configs, **{"tl.early_tile_release": False}))
    errors = run("cuda", 2, 8, 1000, dim, is_causal, groups=2, pass_configs=configs, **blocks)
    assert max(errors) < TOL["float16"], errors


@pytest.mark.gpu
@pytest.mark.parametrize("overlap", [False, True], ids=["sync", "overlap"])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_bwd_persistent(is_causal, overlap):
    """The D=64 Hopper tiles as a persistent walk over 5 blocks (64 tiles:
    several a block, the last round partial), K and V issued early on two
    tile slots and reused for the dK/dV stores; GQA, a ragged sequence."""
    errors = run("cuda", 2, 8, 1000, 64, is_causal, groups=2, block_M=128, block_N=128,
                 threads=256, dq_tma=True, overlap=overlap,
                 pass_configs={"tl.persistent_sms": 5})
    assert max(errors) < TOL["float16"], errors
