"""FlashAttention forward (tilelang_mlir.kernels.attention.flash_attn) on fresh random
inputs against PyTorch: causal and not, grouped-query attention, float16 and
bfloat16, sequence lengths that do not divide the KV tile, and the
log-sum-exp output. Small sizes: the CPU target runs them in CI; the `cuda`
target runs them on a GPU (and compiles them in AOT-prepare mode)."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention import flash_attn as fa
from support.devices import get, put


# Relative Frobenius error of O (P is rounded to the input dtype before P V)
# and of the LSE (float32 throughout).
TOL = {"float16": 1e-2, "bfloat16": 2e-2}
LSE_TOL = 1e-4


def torch_reference(q, k, v, is_causal):
    """O from torch's scaled_dot_product_attention and the LSE from
    logsumexp, in float32 on the CPU, K/V heads repeated for GQA."""
    q, k, v = (x.detach().cpu().float() for x in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return o, torch.logsumexp(s, dim=-1)


def rel_error(out, ref):
    out = torch.as_tensor(get(out)).double()
    assert torch.isfinite(out).all(), "output has NaN/Inf"
    ref = ref.double()
    return ((out - ref).norm() / ref.norm()).item()


def run(target, batch, heads, seq_len, dim, is_causal=False, groups=1, dtype="float16", **blocks):
    """Runs the library's kernel on random inputs; returns the relative
    errors of O and of the LSE against torch (after checking shapes and
    dtypes)."""
    kernel = tl.compile(fa.flash_attn(batch, heads, seq_len, dim, is_causal, groups, dtype=dtype,
                                      **blocks), out_idx=[3, 4], target=target)
    torch_dtype = getattr(torch, dtype)
    q = torch.randn(batch, heads, seq_len, dim).to(torch_dtype)
    k = torch.randn(batch, heads // groups, seq_len, dim).to(torch_dtype)
    v = torch.randn(batch, heads // groups, seq_len, dim).to(torch_dtype)
    o, lse = kernel(put(q, target), put(k, target), put(v, target))
    assert o.shape == q.shape and o.dtype == torch_dtype
    assert lse.shape == (batch, heads, seq_len) and lse.dtype == torch.float32
    o_ref, lse_ref = torch_reference(q, k, v, is_causal)
    return rel_error(o, o_ref), rel_error(lse, lse_ref)


def assert_matches_on_gpu(kernel, q, k, v, is_causal):
    """Runs a compiled forward on the GPU; O and the LSE within the float16
    tolerances of torch."""
    o, lse = kernel(put(q, "cuda"), put(k, "cuda"), put(v, "cuda"))
    o_ref, lse_ref = torch_reference(q, k, v, is_causal)
    o_err, lse_err = rel_error(o, o_ref), rel_error(lse, lse_ref)
    assert o_err < TOL["float16"] and lse_err < LSE_TOL, (o_err, lse_err)


# The default tiles (128x128 on two warpgroups: on sm_90a P @ V takes P
# from registers and the warpgroups take turns at the gemms), and small
# tiles (64x64: one warpgroup's rows split across N, P staged through shared
# memory).
BLOCKS = {"default": {}, "small": dict(block_M=64, block_N=64)}


@pytest.mark.parametrize("blocks", BLOCKS)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim", [64, 128])
def test_flash_attn(dim, is_causal, blocks, target):
    o_err, lse_err = run(target, 1, 2, 256, dim, is_causal, **BLOCKS[blocks])
    assert o_err < TOL["float16"] and lse_err < LSE_TOL, (o_err, lse_err)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_flash_attn_gqa(dtype, target):
    o_err, lse_err = run(target, 2, 4, 128, 64, is_causal=True, groups=4, dtype=dtype,
                         block_M=64, block_N=32)
    assert o_err < TOL[dtype] and lse_err < LSE_TOL, (o_err, lse_err)


@pytest.mark.parametrize("stage_o", [True, False], ids=["staged", "direct"])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_ragged_sequence(is_causal, stage_o, target):
    """A sequence that divides neither tile: the KV tail is masked and the
    last query rows are dropped (causal: the blocks end at the sequence's
    end, the first two overlap); O stored through shared memory or straight
    from the registers."""
    o_err, lse_err = run(target, 1, 2, 100, 64, is_causal, groups=2, block_M=64, block_N=32,
                         stage_o=stage_o)
    assert o_err < TOL["float16"] and lse_err < LSE_TOL, (o_err, lse_err)


def test_flash_attn_bfloat16_default_blocks(target):
    o_err, lse_err = run(target, 1, 1, 256, 128, is_causal=True, dtype="bfloat16")
    assert o_err < TOL["bfloat16"] and lse_err < LSE_TOL, (o_err, lse_err)


# The rotated consumer loop on sm_90a (pass configs, off by default): S_k and
# the previous tile's O += P V in flight together, K and V on barrier rings
# of their own; with the warpgroups taking one turn for the two gemms
# (tl.enable_pingpong); on a 160-wide KV tile, which leaves a masked tail at
# S = 1000. Several laps of the 2-slot ring per block.
ROTATED = {
    "rotate": ({"tl.enable_rotate": True}, {}),
    "rotate_turns": ({"tl.enable_rotate": True, "tl.enable_pingpong": True}, {}),
    "rotate_turns_sched_160": ({"tl.enable_rotate": True, "tl.enable_pingpong": True,
                                "tl.rotate_sched_barrier": True}, dict(block_N=160)),
    # Every third exp2 of the softmax on the FMA pipe (tile-emulate-exp2).
    "rotate_turns_exp2": ({"tl.enable_rotate": True, "tl.enable_pingpong": True,
                           "tl.exp2_emulation": 3}, {}),
}


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ROTATED)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("seq_len", [1024, 1000])
def test_flash_attn_rotated(variant, is_causal, seq_len):
    pass_configs, blocks = ROTATED[variant]
    kernel = tl.compile(fa.flash_attn(2, 4, seq_len, 128, is_causal, groups=2, **blocks),
                        out_idx=[3, 4], target="cuda", pass_configs=pass_configs)
    q = torch.randn(2, 4, seq_len, 128).half()
    k, v = torch.randn(2, 2, seq_len, 128).half(), torch.randn(2, 2, seq_len, 128).half()
    assert_matches_on_gpu(kernel, q, k, v, is_causal)


@pytest.mark.parametrize("dim,is_causal", [(128, False), (128, True), (64, True)])
def test_flash_attn_hopper_schedule_assembles(dim, is_causal):
    """The Hopper schedule (PASS_CONFIGS: the rotated loop with
    K and V on rings of their own, one warpgroup turn for an iteration's two
    gemms) assembles for sm_90a without spills (no GPU needed): the PTX has
    the second pair of barrier rings' waits and the turns' named barriers
    (a wait before S_k, an arrival after O += P V, in each iteration)."""
    from tilelang_mlir.compiler.cuda import resource_report

    kernel = tl.compile(fa.flash_attn(8, 32, 4096, dim, is_causal), out_idx=[3, 4],
                        target="cuda:sm_90a", pass_configs=fa.PASS_CONFIGS)
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, kernel.ptxas_info
    ptx = kernel.get_source()
    assert "bar.arrive" in ptx and "wgmma.wait_group.sync.aligned \t1" in ptx
    # turn barriers take a computed id (3 + warpgroup): bar.sync/bar.arrive on a register
    assert re.search(r"bar\.sync\s+%r\d+, 256", ptx) and re.search(r"bar\.arrive\s+%r\d+, 256", ptx)


# Every per-card default (fa.CARD_DEFAULTS): no spills for sm_90a (no GPU
# needed) and right on the GPU, where torch ops pick them by card.
CARD_CASES = [(card, dim, causal) for card, table in fa.CARD_DEFAULTS.items()
              for dim, causal in table]


@pytest.mark.parametrize("card,dim,is_causal", CARD_CASES)
def test_card_defaults_assemble_without_spills(card, dim, is_causal):
    from tilelang_mlir.compiler.cuda import resource_report

    config, passes = fa.default_config(dim, is_causal, f"NVIDIA {card} 80GB HBM3")
    assert (config, passes) != (fa.CONFIGS[0], fa.PASS_CONFIGS)
    kernel = tl.compile(fa.flash_attn(8, 32, 4096, dim, is_causal, **config), out_idx=[3, 4],
                        target="cuda:sm_90a", pass_configs=passes)
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["spill_loads"] == 0, kernel.ptxas_info


def test_default_config_falls_back_to_the_schedule():
    assert fa.default_config(128, False, "NVIDIA H200") == (fa.CONFIGS[0], fa.PASS_CONFIGS)
    assert fa.default_config(64, False, None) == (fa.CONFIGS[0], fa.PASS_CONFIGS)


@pytest.mark.gpu
@pytest.mark.parametrize("card,dim,is_causal", CARD_CASES)
@pytest.mark.parametrize("seq_len", [1024, 1000])
def test_card_defaults_on_gpu(card, dim, is_causal, seq_len):
    config, passes = fa.default_config(dim, is_causal, f"NVIDIA {card}")
    kernel = tl.compile(fa.flash_attn(2, 4, seq_len, dim, is_causal, groups=2, **config),
                        out_idx=[3, 4], target="cuda", pass_configs=passes)
    q = torch.randn(2, 4, seq_len, dim).half()
    k, v = torch.randn(2, 2, seq_len, dim).half(), torch.randn(2, 2, seq_len, dim).half()
    assert_matches_on_gpu(kernel, q, k, v, is_causal)


# ---------------------------------------------------------------------------
# exp2 on the FMA pipe (tl.exp2_emulation, tile-emulate-exp2)
# ---------------------------------------------------------------------------


def _ex2_count(ptx):
    return len(re.findall(r"ex2\.approx", ptx))


def test_exp2_emulation_assembles():
    """With tl.exp2_emulation=4 a quarter of the D=64 forward's exp2s leave
    the special-function unit: ex2.approx count down by about a quarter,
    add.rm.f32 (the floor) in their place, still no spills (no GPU needed).
    Values the pass cannot take are refused with the config's name."""
    from tilelang_mlir.compiler.cuda import resource_report

    def ptx(**configs):
        kernel = tl.compile(fa.flash_attn(8, 32, 4096, 64, False), out_idx=[3, 4],
                            target="cuda:sm_90a", pass_configs=dict(fa.PASS_CONFIGS, **configs))
        report = resource_report(kernel.ptxas_info)
        assert report["spill_stores"] == 0, kernel.ptxas_info
        return kernel.get_source()

    plain, emulated = ptx(), ptx(**{"tl.exp2_emulation": 4})
    n, m = _ex2_count(plain), _ex2_count(emulated)
    assert "add.rm.f32" in emulated and "add.rm.f32" not in plain
    assert 0.7 * n <= m <= 0.8 * n, (n, m)
    for bad in (1, 65, -2, True, 2.0, "4"):
        with pytest.raises(ValueError, match="tl.exp2_emulation"):
            ptx(**{"tl.exp2_emulation": bad})


# Persistent walks on sm_90a (tl.persistent_sms: blocks at compile time;
# the launch uses at most as many): 4 x 3 x 2 = 24 tiles over 3 or 5 blocks,
# so that every block runs several tiles, the two Q slots each more than
# once, and (5 blocks) the last round is partial. D=128 and D=64, the Hopper
# schedule (rotated, warpgroups taking turns) and the plain one, a masked
# KV tail (S = 500 with 128-row tiles).
PERSISTENT = {"hopper_3": (fa.PASS_CONFIGS, 3), "hopper_5": (fa.PASS_CONFIGS, 5),
              "plain_3": ({}, 3)}


@pytest.mark.gpu
@pytest.mark.parametrize("variant", PERSISTENT)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim", [64, 128])
def test_flash_attn_persistent(variant, is_causal, dim):
    configs, sms = PERSISTENT[variant]
    assert_walk_matches(fa.flash_attn(2, 3, 500, dim, is_causal), configs, sms, is_causal)


def assert_walk_matches(program, pass_configs, sms, is_causal):
    """Compiles `program` (no grouped heads) as a persistent walk over
    `sms` blocks and checks it on the GPU on random inputs of its shape."""
    kernel = tl.compile(program, out_idx=[3, 4], target="cuda",
                        pass_configs=dict(pass_configs, **{"tl.persistent_sms": sms}))
    assert "%nctaid.x" in kernel.get_kernel_source()  # (the walk's stride: the launch's grid)
    q, k, v = (torch.randn(program.params[0].shape).half() for _ in range(3))
    assert_matches_on_gpu(kernel, q, k, v, is_causal)


@pytest.mark.gpu
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dim", [64, 128])
def test_flash_attn_producer_tile_copies(is_causal, dim):
    """Launched one block a tile (no walk) with the Q tile copied by the
    TMA producer (tl.producer_tile_copies) instead of the consumers'
    threads, and O staged through it: the Hopper schedule, a masked KV
    tail and a partial last Q block (S = 500)."""
    program = fa.flash_attn(2, 3, 500, dim, is_causal)
    configs = dict(fa.PASS_CONFIGS, **{"tl.persistent_sms": 0, "tl.producer_tile_copies": True})
    kernel = tl.compile(program, out_idx=[3, 4], target="cuda", pass_configs=configs)
    plain = tl.compile(program, out_idx=[3, 4], target="cuda",
                       pass_configs=dict(configs, **{"tl.producer_tile_copies": False}))
    tma = "cp.async.bulk.tensor.4d.shared::cluster.global"
    assert (kernel.get_kernel_source().count(tma) > plain.get_kernel_source().count(tma))
    q, k, v = (torch.randn(program.params[0].shape).half() for _ in range(3))
    assert_matches_on_gpu(kernel, q, k, v, is_causal)


@pytest.mark.gpu
@pytest.mark.parametrize("stage_o", [True, False], ids=["staged", "direct"])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_three_warpgroups_persistent(is_causal, stage_o):
    """The 192-row tiles of three consumer warpgroups (D=64's fastest),
    walked by 5 blocks on the Hopper schedule: S = 1000 leaves a partial
    block (causal: the blocks end-aligned, the first two overlapping) and a
    masked KV tail; O through shared memory or from the registers."""
    program = fa.flash_attn(2, 3, 1000, 64, is_causal, block_M=192, block_N=128, threads=384,
                            stage_o=stage_o)
    assert_walk_matches(program, fa.PASS_CONFIGS, 5, is_causal)


@pytest.mark.gpu
@pytest.mark.parametrize("every", [2, 4])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_flash_attn_exp2_emulation_d64(every, is_causal):
    """The D=64 forward with every 2nd / 4th exp2 emulated, on the Hopper
    schedule: O and the LSE within the usual tolerances."""
    kernel = tl.compile(fa.flash_attn(2, 4, 1000, 64, is_causal), out_idx=[3, 4], target="cuda",
                        pass_configs=dict(fa.PASS_CONFIGS, **{"tl.exp2_emulation": every}))
    q, k, v = (torch.randn(2, 4, 1000, 64).half() for _ in range(3))
    assert_matches_on_gpu(kernel, q, k, v, is_causal)


@pytest.mark.gpu
def test_exp2_emulation_values():
    """T.exp2 with every 2nd element emulated, against float64: relative
    error <= 1e-4 on [-126, 128); below -126 (and -inf) at most 2^-126;
    from 128 on (and inf) either ex2.approx's inf or about 2^128 (the
    emulation's clamp), both seen; NaN stays NaN."""
    import tilelang_mlir.language as T

    n = 1 << 16

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(n // 1024, threads=128) as bx:
            x = T.alloc_fragment((1024,), "float32")
            T.copy(X[bx * 1024], x)
            for i in T.Parallel(1024):
                x[i] = T.exp2(x[i])
            T.copy(x, Y[bx * 1024])

    kernel = tl.compile(main, out_idx=[1], target="cuda",
                        pass_configs={"tl.exp2_emulation": 2})
    x = torch.empty(n).uniform_(-126, 127)
    special = torch.tensor([-float("inf"), -1000.0, -126.5, -126.0, 0.0, -0.0, 1e-7, 126.99,
                            127.0, 127.5, 128.0, 500.0, float("inf"), float("nan")])
    x[:special.numel() * 64] = special.repeat(64)  # each on many lanes and elements
    y = torch.as_tensor(get(kernel(put(x, "cuda")))).double()
    ref = torch.exp2(x.double())
    inside = (x >= -126) & (x < 128)
    rel = ((y - ref).abs() / ref)[inside]
    assert rel.max() <= 1e-4, rel.max()
    low = x < -126
    assert ((y[low] >= 0) & (y[low] <= 2.0 ** -126 * (1 + 1e-4))).all()
    high = x >= 128
    emulated = (y / 2.0 ** 128 - 1).abs() <= 1e-4  # the cubic just below 128
    assert (torch.isinf(y) | emulated)[high].all()
    assert (emulated & high).any() and (torch.isinf(y) & high).any()
    assert torch.isnan(y[torch.isnan(x)]).all()
