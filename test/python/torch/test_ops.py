"""tilelang_mlir.ops, the PyTorch operators on the kernel library, on CPU
tensors (the CPU target; the CUDA path is the same code on CUDA tensors):
each checked against PyTorch on fresh random inputs, `torch.library.opcheck`
on each (the fake implementation, the schema, autograd registration),
flash_attn's gradients against float64 autograd, a compiled function of
three ops with no graph break, and clear errors for what the kernels do not
take."""

import math

import pytest
import torch
import torch.nn.functional as F

import tilelang_mlir.ops as tlops
from support.bounds import assert_float32_matmul
from tilelang_mlir.base.errors import TileLangError

TOL = {torch.float16: 1e-2, torch.bfloat16: 2e-2}


def rel(out, ref):
    out, ref = out.double(), ref.double()
    assert torch.isfinite(out).all()
    return ((out - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rms_norm(dtype):
    x, w = torch.randn(3, 5, 64).to(dtype), torch.randn(64).to(dtype)
    ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()
    assert rel(tlops.rms_norm(x, w, 1e-5), ref) < TOL[dtype]
    torch.library.opcheck(tlops.rms_norm, (x, w, 1e-5))


def test_silu_mul():
    g, u = torch.randn(7, 200).half(), torch.randn(7, 200).half()
    assert rel(tlops.silu_mul(g, u), F.silu(g.float()) * u.float()) < 1e-2
    torch.library.opcheck(tlops.silu_mul, (g, u))


def test_gemm():
    a, b = torch.randn(64, 48).half(), torch.randn(48, 80).half()
    assert rel(tlops.gemm(a, b), a.float() @ b.float()) < 1e-2
    torch.library.opcheck(tlops.gemm, (a, b))


# opcheck's schema test compares tensors with arithmetic PyTorch lacks for
# float8 ("mul_cpu_reduced_float" not implemented): for float8 inputs the
# other three checks run and `unmutated` checks what the schema test would
# (the inputs' bytes unchanged, the result aliasing none of them).
FP8_OPCHECK = ("test_faketensor", "test_autograd_registration", "test_aot_dispatch_dynamic")


def unmutated(op, args):
    before = [a.view(torch.uint8).clone() if a.dtype.itemsize == 1 else a.clone()
              for a in args if isinstance(a, torch.Tensor)]
    out = op(*args)
    after = [a for a in args if isinstance(a, torch.Tensor)]
    for b, a in zip(before, after):
        assert torch.equal(b, a.view(torch.uint8) if a.dtype.itemsize == 1 else a)
        assert out.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()


def check_gemm_float8(M, N, K, out_dtype, device):
    """float8 e4m3 with per-tensor float32 scales, torch._scaled_mm's
    semantics: b as the transpose of a K-major (N, K) tensor and as a
    row-major (K, N) one; against the float32 product of the scaled float8
    values; opcheck. Returns (a, b, scale_a, scale_b, result)."""
    a = (torch.randn(M, K, device=device) * 2).to(torch.float8_e4m3fn)
    bt = (torch.randn(N, K, device=device) * 2).to(torch.float8_e4m3fn)
    sa, sb = torch.rand((), device=device) + 0.5, torch.rand((), device=device) + 0.5
    ref = (a.float() * sa) @ (bt.float() * sb).t()
    for b in (bt.t(), bt.t().contiguous()):
        c = tlops.gemm(a, b, sa, sb, out_dtype)
        assert c.dtype == (out_dtype or torch.bfloat16) and c.shape == (M, N)
        if device == "cpu" and out_dtype == torch.float32:
            # float32 sums of exact float8 products, scaled: the summation bound
            assert_float32_matmul(c, a, b, scale=float(sa) * float(sb))
        else:
            assert rel(c, ref) < 1e-2
    torch.library.opcheck(tlops.gemm, (a, bt.t(), sa, sb, out_dtype), test_utils=FP8_OPCHECK)
    unmutated(tlops.gemm, (a, bt.t(), sa, sb, out_dtype))
    return a, bt.t(), sa, sb, c


@pytest.mark.parametrize("out_dtype", [None, torch.float16, torch.float32])
def test_gemm_float8_with_scales(out_dtype):
    check_gemm_float8(64, 80, 96, out_dtype, "cpu")


def test_gemm_float8_errors():
    a = torch.randn(16, 32).to(torch.float8_e4m3fn)
    s = torch.ones(())
    with pytest.raises(TileLangError, match="float8 inputs need scale_b"):
        tlops.gemm(a, a.t(), s)
    with pytest.raises(TileLangError, match="scale_a must be a float32 tensor of one element"):
        tlops.gemm(a, a.t(), torch.ones(2), s)
    with pytest.raises(TileLangError, match="b is torch.float16, a torch.float8_e4m3fn"):
        tlops.gemm(a, a.t().half(), s, s)
    with pytest.raises(TileLangError, match="out_dtype torch.int32 is not supported"):
        tlops.gemm(a, a.t(), s, s, torch.int32)
    h = torch.randn(16, 32).half()
    with pytest.raises(TileLangError, match="scale_a and scale_b are for float8 inputs"):
        tlops.gemm(h, h.t(), s, s)
    with pytest.raises(TileLangError, match="only float8 inputs take out_dtype"):
        tlops.gemm(h, h.t(), out_dtype=torch.float32)
    with pytest.raises(TileLangError, match="float16, bfloat16 or float8_e4m3fn expected"):
        tlops.gemm(h.float(), h.t().float())


def attention_reference(q, k, v, causal, scale=None):
    g = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                          is_causal=causal, scale=scale)


def check_flash_attn(q, k, v, causal, scale=None, wide=torch.float64):
    """flash_attn's O, and its gradients through the op's autograd formula
    (our backward kernels) for a random dO, against autograd through
    scaled_dot_product_attention in `wide`. Returns (dO, the reference O)."""
    o = tlops.flash_attn(q, k, v, causal=causal, scale=scale)
    wq = [x.detach().to(wide).requires_grad_() for x in (q, k, v)]
    ref = attention_reference(*wq, causal, scale)
    assert rel(o, ref) < 1e-2
    do = torch.randn_like(q)
    for name, g, r in zip("qkv", torch.autograd.grad(o, (q, k, v), do),
                          torch.autograd.grad(ref, wq, do.to(wide))):
        assert rel(g, r) < 1e-2, name
    return do, ref.detach()


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attn_forward_and_backward(causal):
    """GQA (4 query heads on 2 KV heads), a sequence that is not a multiple
    of the tiles; the gradients through the op's autograd formula (our
    backward kernels) against float64 autograd."""
    q = torch.randn(1, 4, 80, 32).half().requires_grad_()
    k = torch.randn(1, 2, 80, 32).half().requires_grad_()
    v = torch.randn(1, 2, 80, 32).half().requires_grad_()
    check_flash_attn(q, k, v, causal)


def test_flash_attn_opcheck():
    q = torch.randn(1, 2, 64, 32).half().requires_grad_()
    k = torch.randn(1, 2, 64, 32).half().requires_grad_()
    v = torch.randn(1, 2, 64, 32).half().requires_grad_()
    torch.library.opcheck(tlops.flash_attn_fwd, (q, k, v, True))


def test_compiled_block_has_no_graph_break():
    """rms_norm -> gemm -> silu_mul in one compiled function: one graph, the
    eager result."""
    w_norm = torch.randn(64).half()
    w_up = torch.randn(64, 128).half()

    def block(x):
        h = tlops.gemm(tlops.rms_norm(x, w_norm, 1e-6), w_up)
        return tlops.silu_mul(h[:, :64].contiguous(), h[:, 64:].contiguous())

    x = torch.randn(32, 64).half()
    explained = torch._dynamo.explain(block)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), block(x))


def test_errors_name_the_argument():
    x = torch.randn(4, 64)
    with pytest.raises(TileLangError, match="x is torch.float32; float16 or bfloat16"):
        tlops.rms_norm(x, torch.randn(64), 1e-6)
    with pytest.raises(TileLangError, match=r"weight has shape \(32,\)"):
        tlops.rms_norm(x.half(), torch.randn(32).half(), 1e-6)
    with pytest.raises(TileLangError, match="differ in shape"):
        tlops.silu_mul(torch.randn(4, 8).half(), torch.randn(4, 9).half())
    with pytest.raises(TileLangError, match=r"\(M, K\) @ \(K, N\)"):
        tlops.gemm(torch.randn(4, 8).half(), torch.randn(9, 4).half())
    with pytest.raises(TileLangError, match="b is torch.bfloat16, the first input torch.float16"):
        tlops.gemm(torch.randn(4, 8).half(), torch.randn(8, 4).bfloat16())
    q = torch.randn(1, 2, 16, 32).half()
    with pytest.raises(TileLangError, match="scale -0.5 must be a positive finite number"):
        tlops.flash_attn(q, q, q, scale=-0.5)
    with pytest.raises(TileLangError, match="KV heads dividing"):
        tlops.flash_attn(torch.randn(1, 3, 16, 32).half(), q, q)
    with pytest.raises(TileLangError, match="head dim 24"):
        x = torch.randn(1, 2, 16, 24).half()
        tlops.flash_attn(x, x, x)


def test_softmax_scale():
    """A scale other than 1/sqrt(head dim) (as models with their own
    scaling pass): flash_attn forward and backward, flash_attn_varlen and
    flash_decode against PyTorch with the same scale; the default scale
    given explicitly shares the default kernels."""
    from tilelang_mlir.kernels.attention import flash_decode as fd

    scale = 0.3
    q = torch.randn(1, 4, 50, 32).half().requires_grad_()
    k = torch.randn(1, 2, 50, 32).half().requires_grad_()
    v = torch.randn(1, 2, 50, 32).half().requires_grad_()
    _, ref = check_flash_attn(q, k, v, True, scale)
    torch.library.opcheck(tlops.flash_attn_fwd, (q, k, v, True, scale))
    # packed: the same two sequences as one batch of two
    qp, kp, vp = (x.detach()[0].transpose(0, 1).repeat(2, 1, 1) for x in (q, k, v))
    cu = torch.tensor([0, 50, 100], dtype=torch.int32)
    op = tlops.flash_attn_varlen(qp, kp, vp, cu, 50, True, scale)
    for seq in (op[:50], op[50:]):
        assert rel(seq, ref[0].transpose(0, 1)) < 1e-2
    qd, kc, vc, lens, table = fd.make_inputs(2, 4, 2, 64, [70, 9], page_size=16)
    od = tlops.flash_decode(qd, kc, vc, lens, table, scale)
    ref = fd.reference(qd, kc, vc, lens, table, scale)
    for b in range(2):
        assert rel(od[b], ref[b]) < 1e-2, b
    key = tlops._attn_key("flash_attn", q, k, v, True, 1 / math.sqrt(32))
    assert key == tlops._attn_key("flash_attn", q, k, v, True)
    assert key != tlops._attn_key("flash_attn", q, k, v, True, scale)


def test_rms_norm_and_silu_mul_gradients():
    """Their backward kernels (through the ops' autograd formulas) against
    autograd through the float64 formulas; opcheck of the backward ops."""
    x = torch.randn(6, 64).half().requires_grad_()
    w = torch.randn(64).half().requires_grad_()
    dy = torch.randn(6, 64).half()
    got = torch.autograd.grad(tlops.rms_norm(x, w, 1e-5), (x, w), dy)
    xd, wd = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-5) * wd
    want = torch.autograd.grad(ref, (xd, wd), dy.double())
    for g, r in zip(got, want):
        assert rel(g, r) < 1e-2
    g, u = torch.randn(5, 32).half().requires_grad_(), torch.randn(5, 32).half().requires_grad_()
    got = torch.autograd.grad(tlops.silu_mul(g, u), (g, u), dy[:5, :32])
    gd, ud = g.detach().double().requires_grad_(), u.detach().double().requires_grad_()
    want = torch.autograd.grad(F.silu(gd) * ud, (gd, ud), dy[:5, :32].double())
    for a, b in zip(got, want):
        assert rel(a, b) < 1e-2
    torch.library.opcheck(tlops.rms_norm, (x, w, 1e-5))
    torch.library.opcheck(tlops.silu_mul, (g, u))
    torch.library.opcheck(tlops.rms_norm_bwd, (x.detach(), w.detach(), dy, 1e-5))
    torch.library.opcheck(tlops.silu_mul_bwd, (g.detach(), u.detach(), dy[:5, :32]))


def test_strided_inputs():
    """Transposed (strided) inputs, as attention sees them inside a model:
    the results are contiguous, and the fake results say so (opcheck
    compares their strides)."""
    x = torch.randn(64, 6).half().t()  # (6, 64), strided
    w = torch.randn(64).half()
    y = tlops.rms_norm(x, w, 1e-6)
    assert y.is_contiguous()
    torch.library.opcheck(tlops.rms_norm, (x, w, 1e-6))
    q = torch.randn(1, 64, 2, 32).half().transpose(1, 2)  # (B, H, S, D) view of (B, S, H, D)
    torch.library.opcheck(tlops.flash_attn_fwd, (q, q, q, True))


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attn_varlen_forward_and_backward(causal):
    """Packed sequences (a tail into the next sequence, one of length 1),
    GQA; O against the per-sequence reference, the gradients through the
    op's autograd formula (our varlen backward) against float64 autograd;
    opcheck with gradients; one compile serves a second total."""
    from tilelang_mlir.kernels.attention import flash_attn_varlen as fav
    from tilelang_mlir.kernels.attention import flash_attn_varlen_bwd as fvb

    for lens in ([70, 1, 33], [5, 90, 40]):
        q, k, v, cu = fav.make_inputs(lens, 4, 32, groups=2)
        q, k, v = (x.requires_grad_() for x in (q, k, v))
        o = tlops.flash_attn_varlen(q, k, v, cu, 90, causal)
        o_ref, _ = fav.reference(q.detach(), k.detach(), v.detach(), cu, causal)
        assert rel(o, o_ref) < 1e-2
        do = torch.randn(q.shape).half()
        grads = torch.autograd.grad(o, (q, k, v), do)
        refs = fvb.reference(q.detach(), k.detach(), v.detach(), do, cu, causal)
        for name, g, r in zip("qkv", grads, refs):
            assert rel(g, r) < 1e-2, name
    torch.library.opcheck(tlops.flash_attn_varlen_fwd, (q, k, v, cu, 90, causal))


def test_flash_attn_varlen_errors():
    q = torch.randn(10, 2, 32).half()
    cu = torch.tensor([0, 4, 10], dtype=torch.int32)
    with pytest.raises(TileLangError, match="cu_seqlens must be int32"):
        tlops.flash_attn_varlen(q, q, q, cu.long(), 6)
    with pytest.raises(TileLangError, match=r"\(total_tokens, heads, dim\)"):
        tlops.flash_attn_varlen(q[None], q, q, cu, 6)
    with pytest.raises(TileLangError, match="max_seqlen 0"):
        tlops.flash_attn_varlen(q, q, q, cu, 0)


# --- decoding over paged caches, int4 weights, tuned configs ----------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_flash_decode(dtype):
    """A paged cache with a shuffled block table (pages of 64 tokens),
    GQA (4 query heads per KV head), ragged lengths (several pages and a
    tail, shorter than a page, one token) against the float64 reference;
    opcheck."""
    from tilelang_mlir.kernels.attention import flash_decode as fd

    q, k, v, lens, table = fd.make_inputs(3, 8, 2, 64, [200, 31, 1], page_size=64, dtype=dtype)
    o = tlops.flash_decode(q, k, v, lens, table)
    assert o.dtype == dtype and o.shape == q.shape
    assert rel(o, fd.reference(q, k, v, lens, table)) < TOL[dtype]
    torch.library.opcheck(tlops.flash_decode, (q, k, v, lens, table))


def test_flash_decode_config():
    """The GPU's split kernel: 3 stages by cp.async; two warps with reused
    slots only for multi-head decoding of 1024 blocks or more with
    64-token tiles; the CPU keeps the program's defaults."""
    from tilelang_mlir.kernels.attention import flash_decode as fd

    plain = tlops._decode_config(16, 32, 32, 64, "cuda")
    assert plain == dict(block_N=64, num_stages=3, pass_configs=fd.CP_ASYNC)
    few = tlops._decode_config(64, 32, 32, 64, "cuda")
    assert few["threads"] == 64 and few["pass_configs"]["tl.pipeline_reuse_slots"]
    assert "threads" not in tlops._decode_config(128, 32, 8, 64, "cuda")  # GQA
    assert "threads" not in tlops._decode_config(64, 32, 32, 32, "cuda")  # small pages
    assert tlops._decode_config(64, 32, 32, 64, "cpu") == dict(block_N=64)


def test_flash_decode_small_pages_and_head_dim_32():
    """Pages of 16 tokens (16-token KV tiles), head dim 32, plain MHA."""
    from tilelang_mlir.kernels.attention import flash_decode as fd

    q, k, v, lens, table = fd.make_inputs(2, 2, 2, 32, [40, 7], page_size=16)
    assert rel(tlops.flash_decode(q, k, v, lens, table), fd.reference(q, k, v, lens, table)) \
        < 1e-2


def test_flash_decode_errors():
    from tilelang_mlir.kernels.attention import flash_decode as fd

    q, k, v, lens, table = fd.make_inputs(2, 4, 2, 64, [70, 10], page_size=64)
    with pytest.raises(TileLangError, match="k_cache is torch.bfloat16, the first input"):
        tlops.flash_decode(q, k.bfloat16(), v, lens, table)
    with pytest.raises(TileLangError, match=r"q \(batch, heads, dim\)"):
        tlops.flash_decode(q[None], k, v, lens, table)
    with pytest.raises(TileLangError, match="KV heads dividing"):
        tlops.flash_decode(torch.randn(2, 3, 64).half(), k, v, lens, table)
    with pytest.raises(TileLangError, match="head dim 48 is not supported"):
        tlops.flash_decode(q[..., :48], k[..., :48], v[..., :48], lens, table)
    with pytest.raises(TileLangError, match=r"cache_seqlens must be int32 \(batch,\)"):
        tlops.flash_decode(q, k, v, lens.long(), table)
    with pytest.raises(TileLangError, match=r"block_table must be int32 \(batch, max_pages\)"):
        tlops.flash_decode(q, k, v, lens, table[:1])
    with pytest.raises(TileLangError, match="page_size 24 is not supported"):
        tlops.flash_decode(q, k[:, :, :24], v[:, :, :24], lens, table)
    with pytest.raises(TileLangError, match="128 query heads per KV head"):
        tlops.flash_decode(torch.randn(2, 128, 64).half(), k[:, :1], v[:, :1], lens, table)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mla_decode(dtype):
    """Ragged lengths (a page and a bit, several pages, one token) over a
    shuffled block table, against the float64 reference; opcheck."""
    from tilelang_mlir.kernels.attention import mla_decode as mla

    inputs = mla.make_inputs(3, 64, [100, 200, 1], dtype=dtype)
    o = tlops.mla_decode(*inputs)
    assert o.dtype == dtype and tuple(o.shape) == (3, 64, mla.DV)
    assert rel(o, mla.reference(*inputs)) < TOL[dtype]
    torch.library.opcheck(tlops.mla_decode, inputs)


def test_mla_decode_scale():
    """DeepSeek's own softmax scale, against the reference with it."""
    from tilelang_mlir.kernels.attention import mla_decode as mla

    q, q_pe, kv, table, lens = mla.make_inputs(2, 64, [90, 7])
    scale = 0.1
    o = tlops.mla_decode(q, q_pe, kv, table, lens, scale)
    ref = mla.reference(q, q_pe, kv, table, lens, scale)
    for b in range(2):
        assert rel(o[b], ref[b]) < 1e-2, b
    key = tlops._mla_decode_key(q, q_pe, kv, table, lens, 576 ** -0.5)
    assert key == tlops._mla_decode_key(q, q_pe, kv, table, lens)


def test_mla_decode_errors():
    from tilelang_mlir.kernels.attention import mla_decode as mla

    q, q_pe, kv, table, lens = mla.make_inputs(2, 64, [70, 10])
    with pytest.raises(TileLangError, match=r"q is \(2, 64, 256\); \(batch, heads, 512\)"):
        tlops.mla_decode(q[..., :256], q_pe, kv, table, lens)
    with pytest.raises(TileLangError, match="q_pe is"):
        tlops.mla_decode(q, q_pe[:, :32], kv, table, lens)
    with pytest.raises(TileLangError, match="32 heads are not supported"):
        tlops.mla_decode(q[:, :32], q_pe[:, :32], kv, table, lens)
    with pytest.raises(TileLangError, match=r"kv is \(4, 64, 512\)"):
        tlops.mla_decode(q, q_pe, kv[..., :512], table, lens)
    with pytest.raises(TileLangError, match="page_size 32 is not supported"):
        tlops.mla_decode(q, q_pe, kv[:, :32], table, lens)
    with pytest.raises(TileLangError, match="kv is torch.bfloat16"):
        tlops.mla_decode(q, q_pe, kv.bfloat16(), table, lens)
    with pytest.raises(TileLangError, match="block_table must be int32"):
        tlops.mla_decode(q, q_pe, kv, table.long(), lens)


@pytest.mark.parametrize("dtype,group,lead", [
    (torch.float16, 128, (1,)),        # M = 1: the GEMV
    (torch.bfloat16, 64, (1, 1)),      # M = 1 through two leading dims
    (torch.float16, 128, (2, 3)),      # M = 6: the decode GEMM
    (torch.bfloat16, 128, (40,)),      # M = 40: the prefill GEMM
])
def test_w4a16_linear(dtype, group, lead):
    """pack_w4a16 then w4a16_linear against the dequant reference (x @
    dequant(W)^T in float64) on a random weight, for each regime of M; the
    dequantized weight is the original to int4 precision; opcheck."""
    from tilelang_mlir.kernels import dequant as dq

    N, K = 72, 512
    w = (torch.randn(N, K) * 0.05).to(dtype)
    wp, s = tlops.pack_w4a16(w, group)
    assert wp.dtype == torch.uint8 and tuple(wp.shape) == (N, K // 2)
    assert s.dtype == dtype and tuple(s.shape) == (N, K // group)
    assert rel(dq.dequantize(wp, s, 4, group), w) < 0.15  # int4: 7 levels a side
    x = torch.randn(*lead, K).to(dtype)
    y = tlops.w4a16_linear(x, wp, s)
    assert y.dtype == dtype and y.shape == lead + (N,)
    ref = dq.reference(x.reshape(-1, K), wp, s, 4, group).reshape(lead + (N,))
    assert rel(y, ref) < 1e-2
    torch.library.opcheck(tlops.w4a16_linear, (x, wp, s))


def test_w4a16_linear_errors():
    w = torch.randn(16, 256).half()
    wp, s = tlops.pack_w4a16(w)
    x = torch.randn(3, 256).half()
    with pytest.raises(TileLangError, match="x is torch.float32"):
        tlops.w4a16_linear(x.float(), wp, s)
    with pytest.raises(TileLangError, match="scales is torch.bfloat16, the first input"):
        tlops.w4a16_linear(x, wp, s.bfloat16())
    with pytest.raises(TileLangError, match=r"w_packed must be uint8 \(N, K/2\) = \(N, 128\)"):
        tlops.w4a16_linear(x, wp.view(torch.int8), s)
    with pytest.raises(TileLangError, match=r"w_packed must be uint8"):
        tlops.w4a16_linear(x[:, :128], wp, s)
    with pytest.raises(TileLangError, match=r"scales has shape \(16, 3\)"):
        tlops.w4a16_linear(x, wp, torch.ones(16, 3).half())
    with pytest.raises(TileLangError, match="group size 16 is not supported"):
        tlops.w4a16_linear(x, wp, torch.ones(16, 16).half())
    with pytest.raises(TileLangError, match="K = 256 is not a multiple of 2 x the group size"):
        tlops.pack_w4a16(w, group=256)
    with pytest.raises(TileLangError, match="weight has shape"):
        tlops.pack_w4a16(w[0])
    with pytest.raises(TileLangError, match="scales' dtype torch.float32"):
        tlops.pack_w4a16(w.float())
    assert tlops.pack_w4a16(w.float(), dtype=torch.bfloat16)[1].dtype == torch.bfloat16


def test_decode_step_compiles_without_graph_break():
    """flash_decode then an int4 output projection in one compiled
    function: one graph, the eager result."""
    from tilelang_mlir.kernels.attention import flash_decode as fd

    q, k, v, lens, table = fd.make_inputs(2, 4, 2, 64, [90, 17], page_size=64)
    wp, s = tlops.pack_w4a16((torch.randn(96, 256) * 0.05).half())

    def step(q, k, v, lens, table):
        o = tlops.flash_decode(q, k, v, lens, table)
        return tlops.w4a16_linear(o.reshape(o.shape[0], -1), wp, s)

    explained = torch._dynamo.explain(step)(q, k, v, lens, table)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(q, k, v, lens, table), step(q, k, v, lens, table))


@pytest.fixture
def tune_cache(tmp_path, monkeypatch):
    """An empty kernel cache (and autotune cache) for one test."""
    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILELANG_MLIR_AUTOTUNE_QUIET", "1")
    from tilelang_mlir import autotuner

    monkeypatch.setattr(autotuner.cache, "_MEMORY", {})
    return tmp_path


def test_gemm_uses_the_tuned_config(tune_cache):
    """Without a cache entry the op compiles the default tile; after a real
    (tiny, CPU) `kernels.gemm.autotune` run of the same problem, a shape
    compiled afterwards gets the cached winner, read without tuning."""
    import tilelang_mlir as tl
    from tilelang_mlir.kernels import gemm

    M, N, K = 48, 40, 32  # (a shape no other test compiles: the op keeps kernels)
    assert tlops._gemm_config(M, N, K, "float16", "float16", "cpu") == gemm.DEFAULT
    best, _, _ = gemm.autotune(M, N, K, target="cpu", warmup=0, rep=1, log=lambda line: None)
    assert len(list(tune_cache.glob("autotune/*.json"))) == 1
    assert tlops._gemm_config(M, N, K, "float16", "float16", "cpu") == best
    # (another problem)
    assert tlops._gemm_config(M, N, K + 16, "float16", "float16", "cpu") == gemm.DEFAULT
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    assert rel(tlops.gemm(a, b), a.float() @ b.float()) < 1e-2
    kernel = tlops._compiled(("gemm", M, N, K, "float16", "float16", "cpu"))
    tuned = tl.compile(gemm.matmul(M, N, K, dtype="float16", **best), out_idx=[2], target="cpu")
    assert kernel.get_source() == tuned.get_source()
    if best != gemm.DEFAULT:  # (the timings decide; the default tile may win)
        default = tl.compile(gemm.matmul(M, N, K, dtype="float16", **gemm.DEFAULT), out_idx=[2],
                             target="cpu")
        assert kernel.get_source() != default.get_source()


def test_w4a16_uses_the_tuned_config(tune_cache):
    """tune_w4a16_linear (a real sweep on the CPU, M = 2: the decode
    configs that read pack_w4a16's format) writes the winner w4a16_linear
    then compiles; the op's result is still right."""
    from tilelang_mlir.kernels import dequant as dq

    M, N, K = 2, 40, 256
    assert tlops._w4a16_config(M, N, K, 128, "float16", "cpu") == tlops._w4a16_configs(M)[0]
    result = tlops.tune_w4a16_linear(M, N, K, target="cpu", warmup=0, rep=1)
    assert not result.cache_hit and result.timings
    best = result.best_config["config"]
    assert tlops._w4a16_config(M, N, K, 128, "float16", "cpu") == best
    wp, s = tlops.pack_w4a16((torch.randn(N, K) * 0.05).half())
    x = torch.randn(M, K).half()
    assert rel(tlops.w4a16_linear(x, wp, s), dq.reference(x, wp, s)) < 1e-2
    assert tlops._compiled(("w4a16", M, N, K, 128, "float16", "cpu"))[0] == best
