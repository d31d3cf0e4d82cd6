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


def attention_reference(q, k, v, causal):
    g = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                          is_causal=causal)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attn_forward_and_backward(causal):
    """GQA (4 query heads on 2 KV heads), a sequence that is not a multiple
    of the tiles; the gradients through the op's autograd formula (our
    backward kernels) against float64 autograd."""
    q = torch.randn(1, 4, 80, 32).half().requires_grad_()
    k = torch.randn(1, 2, 80, 32).half().requires_grad_()
    v = torch.randn(1, 2, 80, 32).half().requires_grad_()
    do = torch.randn(1, 4, 80, 32).half()
    o = tlops.flash_attn(q, k, v, causal=causal)
    wide = [x.detach().double().requires_grad_() for x in (q, k, v)]
    o_ref = attention_reference(*wide, causal)
    assert rel(o, o_ref) < 1e-2
    grads = torch.autograd.grad(o, (q, k, v), do)
    refs = torch.autograd.grad(o_ref, wide, do.double())
    for name, g, r in zip("qkv", grads, refs):
        assert rel(g, r) < 1e-2, name


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
    with pytest.raises(TileLangError, match="scale 0.5 is not supported"):
        tlops.flash_attn(q, q, q, scale=0.5)
    with pytest.raises(TileLangError, match="KV heads dividing"):
        tlops.flash_attn(torch.randn(1, 3, 16, 32).half(), q, q)
    with pytest.raises(TileLangError, match="head dim 24"):
        x = torch.randn(1, 2, 16, 24).half()
        tlops.flash_attn(x, x, x)
    assert math.isclose(1 / math.sqrt(32), 1 / math.sqrt(32))  # (scale=1/sqrt(d) is accepted:)
    tlops.flash_attn(q, q, q, scale=1 / math.sqrt(32))


def test_rms_norm_and_silu_mul_gradients():
    """Their autograd formulas (in PyTorch) against autograd through the
    float64 formulas."""
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
