"""tilelang_mlir.ops on CUDA tensors (the GPU paths; test_ops.py covers the
CPU target): every operator against PyTorch on fresh random inputs and
through `torch.library.opcheck`; launches on torch's current stream; the
operators inside a captured CUDA graph and under
torch.compile(mode="reduce-overhead") (CUDA graphs of Inductor), replayed
on new inputs; a tensor on a second GPU (where there is one)."""

import pytest
import torch
import torch.nn.functional as F

import tilelang_mlir.ops as tlops
from test_ops import TOL, attention_reference, check_flash_attn, check_gemm_float8, rel

# (Skipped in AOT-prepare mode too: these run torch's CUDA tensors.)
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(),
                                                  reason="needs a CUDA GPU")]

DEV = "cuda"


def randn(*shape, dtype=torch.float16):
    return torch.randn(*shape, device=DEV).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rms_norm_silu_mul_gemm(dtype):
    x, w = randn(3, 50, 256, dtype=dtype), randn(256, dtype=dtype)
    ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()
    assert rel(tlops.rms_norm(x, w, 1e-5), ref) < TOL[dtype]
    torch.library.opcheck(tlops.rms_norm, (x.requires_grad_(), w.requires_grad_(), 1e-5))
    g, u = randn(70, 512, dtype=dtype), randn(70, 512, dtype=dtype)
    assert rel(tlops.silu_mul(g, u), F.silu(g.float()) * u.float()) < TOL[dtype]
    torch.library.opcheck(tlops.silu_mul, (g.requires_grad_(), u.requires_grad_()))
    for M, N, K in ((256, 512, 256), (100, 72, 96)):  # the Hopper tile; ragged, the small one
        a, b = randn(M, K, dtype=dtype), randn(K, N, dtype=dtype)
        assert rel(tlops.gemm(a, b), a.float() @ b.float()) < TOL[dtype]
    torch.library.opcheck(tlops.gemm, (a, b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rms_norm_and_silu_mul_backward(dtype):
    """The backward kernels at a model's sizes (hidden 4096, a ragged row
    count) against float32 autograd; opcheck of the backward ops."""
    x = randn(300, 4096, dtype=dtype).requires_grad_()
    w = (1 + 0.1 * randn(4096, dtype=torch.float32)).to(dtype).requires_grad_()
    dy = randn(300, 4096, dtype=dtype)
    got = torch.autograd.grad(tlops.rms_norm(x, w, 1e-5), (x, w), dy)
    xf, wf = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * wf
    for name, g, r in zip(("dx", "dw"), got, torch.autograd.grad(ref, (xf, wf), dy.float())):
        assert rel(g, r) < TOL[dtype], name
    torch.library.opcheck(tlops.rms_norm_bwd, (x.detach(), w.detach(), dy, 1e-5))
    g, u = randn(300, 1000, dtype=dtype).requires_grad_(), randn(300, 1000, dtype=dtype)
    u.requires_grad_()
    d = randn(300, 1000, dtype=dtype)
    got = torch.autograd.grad(tlops.silu_mul(g, u), (g, u), d)
    gf, uf = g.detach().float().requires_grad_(), u.detach().float().requires_grad_()
    refs = torch.autograd.grad(F.silu(gf) * uf, (gf, uf), d.float())
    for name, a, b in zip(("dgate", "dup"), got, refs):
        assert rel(a, b) < TOL[dtype], name
    torch.library.opcheck(tlops.silu_mul_bwd, (g.detach(), u.detach(), d))


@pytest.mark.parametrize("out_dtype", [None, torch.float16, torch.float32])
def test_gemm_float8_with_scales(out_dtype):
    """test_ops.py's float8 check at the Hopper tile on the GPU, and the
    same numbers as PyTorch's scaled matmul."""
    a, b, sa, sb, c = check_gemm_float8(256, 512, 384, out_dtype, DEV)
    theirs = torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype or torch.bfloat16)
    assert rel(c, theirs.float()) < 1e-2


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128])
def test_flash_attn_forward_and_backward(causal, D):
    """GQA, a sequence that is not a multiple of the tiles; gradients of our
    backward against float32 autograd; opcheck of both halves."""
    q = randn(2, 8, 300, D).requires_grad_()
    k = randn(2, 2, 300, D).requires_grad_()
    v = randn(2, 2, 300, D).requires_grad_()
    do, _ = check_flash_attn(q, k, v, causal, wide=torch.float32)
    torch.library.opcheck(tlops.flash_attn_fwd, (q, k, v, causal))
    o, lse = tlops.flash_attn_fwd(q.detach(), k.detach(), v.detach(), causal)
    torch.library.opcheck(tlops.flash_attn_bwd, (q.detach(), k.detach(), v.detach(), o, do, lse,
                                                 causal))


def test_softmax_scale():
    """A scale other than 1/sqrt(head dim): forward, backward and decoding
    against PyTorch with the same scale."""
    from tilelang_mlir.kernels.attention import flash_decode as fd

    scale = 0.05
    q, k, v = (randn(2, h, 384, 128).requires_grad_() for h in (8, 2, 2))
    check_flash_attn(q, k, v, True, scale, wide=torch.float32)
    qd, kc, vc, lens, table = fd.make_inputs(2, 32, 8, 128, [700, 3], page_size=128, device=DEV)
    od = tlops.flash_decode(qd, kc, vc, lens, table, scale)
    ref = fd.reference(qd, kc, vc, lens, table, scale)
    for b in range(2):
        assert rel(od[b], ref[b]) < 1e-2, b


def test_flash_attn_varlen():
    from tilelang_mlir.kernels.attention import flash_attn_varlen as fav
    from tilelang_mlir.kernels.attention import flash_attn_varlen_bwd as fvb

    q, k, v, cu = fav.make_inputs([200, 1, 77], 8, 64, groups=2, device=DEV)
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    o = tlops.flash_attn_varlen(q, k, v, cu, 200, True)
    assert rel(o, fav.reference(q.detach(), k.detach(), v.detach(), cu, True)[0]) < 1e-2
    do = torch.randn_like(q)
    grads = torch.autograd.grad(o, (q, k, v), do)
    refs = fvb.reference(q.detach(), k.detach(), v.detach(), do, cu, True)
    for name, g, r in zip("qkv", grads, refs):
        assert rel(g, r) < 1e-2, name
    torch.library.opcheck(tlops.flash_attn_varlen_fwd, (q, k, v, cu, 200, True))
    o, lse = tlops.flash_attn_varlen_fwd(q.detach(), k.detach(), v.detach(), cu, 200, True)
    torch.library.opcheck(tlops.flash_attn_varlen_bwd, (q.detach(), k.detach(), v.detach(), o,
                                                        do, lse, cu, 200, True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("D,page_size", [(128, 128), (64, 64), (32, 16)])
def test_flash_decode(dtype, D, page_size):
    from tilelang_mlir.kernels.attention import flash_decode as fd

    q, k, v, lens, table = fd.make_inputs(4, 32, 8, D, [1000, 1, 257, 64], page_size=page_size,
                                          dtype=dtype, device=DEV)
    o = tlops.flash_decode(q, k, v, lens, table)
    assert o.dtype == dtype and o.shape == q.shape
    assert rel(o, fd.reference(q, k, v, lens, table)) < TOL[dtype]
    torch.library.opcheck(tlops.flash_decode, (q, k, v, lens, table))


def test_flash_decode_many_heads_on_two_warps():
    """Multi-head decoding of 1024 (sequence, KV head) blocks: the split
    kernel on two warps with reused slots; ragged lengths, a shuffled
    block table."""
    from tilelang_mlir.kernels.attention import flash_decode as fd

    lens = [300, 1, 64, 129] * 8
    q, k, v, lens, table = fd.make_inputs(32, 32, 32, 128, lens, page_size=64, device=DEV)
    assert "threads" in tlops._decode_config(32, 32, 32, 64, "cuda")
    o = tlops.flash_decode(q, k, v, lens, table)
    assert rel(o, fd.reference(q, k, v, lens, table)) < TOL[torch.float16]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mla_decode(dtype):
    from tilelang_mlir.kernels.attention import mla_decode as mla

    inputs = mla.make_inputs(3, 128, [700, 64, 1], dtype=dtype, device=DEV)
    o = tlops.mla_decode(*inputs)
    assert o.dtype == dtype and tuple(o.shape) == (3, 128, mla.DV)
    assert rel(o, mla.reference(*inputs)) < TOL[dtype]
    torch.library.opcheck(tlops.mla_decode, inputs)


@pytest.mark.parametrize("dtype,lead", [(torch.float16, (1,)), (torch.bfloat16, (1, 1)),
                                        (torch.float16, (2, 8)), (torch.bfloat16, (300,))])
def test_w4a16_linear(dtype, lead):
    from tilelang_mlir.kernels import dequant as dq

    N, K = 512, 1024
    wp, s = tlops.pack_w4a16((torch.randn(N, K, device=DEV) * 0.05).to(dtype))
    assert wp.is_cuda and s.is_cuda
    x = randn(*lead, K, dtype=dtype)
    y = tlops.w4a16_linear(x, wp, s)
    assert y.dtype == dtype and y.shape == lead + (N,)
    ref = dq.reference(x.reshape(-1, K), wp, s).reshape(lead + (N,))
    assert rel(y.cpu(), ref) < 1e-2
    torch.library.opcheck(tlops.w4a16_linear, (x, wp, s))


def test_launches_on_the_current_stream():
    """On a side stream, the input is written after a long sleep and the
    op follows: had the op launched on another stream it would read the
    old input."""
    x, w = randn(64, 1024), randn(1024)
    fresh = randn(64, 1024)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # (about 0.1 s)
        x.copy_(fresh)
        y = tlops.rms_norm(x, w, 1e-6)
        z = tlops.gemm(y, randn(1024, 256))
    side.synchronize()
    ref = fresh.float() * torch.rsqrt(fresh.float().pow(2).mean(-1, keepdim=True) + 1e-6) \
        * w.float()
    assert rel(y, ref) < 1e-2 and z.shape == (64, 256)


def block(x, w_norm, w_up, q, k, v, cache):
    """A transformer-like step on five of the ops."""
    h = tlops.rms_norm(x, w_norm, 1e-6)
    u = tlops.gemm(h, w_up)
    m = tlops.silu_mul(u[:, :256].contiguous(), u[:, 256:].contiguous())
    o = tlops.flash_attn(q, k, v, causal=True)
    d = tlops.flash_decode(*cache)
    return m, o, d


def block_inputs():
    from tilelang_mlir.kernels.attention import flash_decode as fd

    return (randn(128, 512), randn(512), randn(512, 512), randn(1, 4, 256, 64),
            randn(1, 4, 256, 64), randn(1, 4, 256, 64),
            fd.make_inputs(2, 8, 2, 64, [300, 40], page_size=64, device=DEV))


def refill(inputs):
    """New random values in place (the cache lengths and table kept)."""
    for t in inputs[:6]:
        t.copy_(torch.randn_like(t))
    for t in inputs[6][:3]:
        t.copy_(torch.randn_like(t))


def test_ops_in_a_captured_cuda_graph():
    """Captured once (after a warm-up on a side stream, as torch wants),
    replayed on new inputs written in place: the results follow the new
    inputs and equal eager calls."""
    inputs = block_inputs()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        block(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = block(*inputs)
    for _ in range(2):
        refill(inputs)
        graph.replay()
        want = block(*inputs)
        for got, ref in zip(outs, want):
            torch.testing.assert_close(got, ref)


def test_reduce_overhead_compile():
    """torch.compile(mode="reduce-overhead") (Inductor with CUDA graphs)
    over the ops: no graph break, the eager results on several new
    inputs."""
    inputs = block_inputs()
    explained = torch._dynamo.explain(block)(*inputs)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(block, mode="reduce-overhead", fullgraph=True)
    for _ in range(4):
        refill(inputs)
        got = [t.clone() for t in compiled(*inputs)]
        for g, ref in zip(got, block(*inputs)):
            torch.testing.assert_close(g, ref)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_the_second_gpu():
    """Inputs on cuda:1 while cuda:0 is current: the kernels run there and
    the results live there."""
    with torch.cuda.device(0):
        x = torch.randn(16, 256, device="cuda:1").half()
        w = torch.randn(256, device="cuda:1").half()
        y = tlops.rms_norm(x, w, 1e-6)
        q = torch.randn(1, 2, 128, 64, device="cuda:1").half()
        o = tlops.flash_attn(q, q, q)
    assert y.device == x.device and o.device == q.device
    ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    assert rel(y, ref) < 1e-2
    assert rel(o, attention_reference(q.float(), q.float(), q.float(), False)) < 1e-2
