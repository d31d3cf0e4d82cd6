"""PyTorch operators on the kernel library: what a model calls.

    import tilelang_mlir.ops as tlops
    y = tlops.rms_norm(x, weight, eps)
    o = tlops.flash_attn(q, k, v, causal=True)      # differentiable

Each is a `torch.library` custom op (namespace `tilelang`) with a fake
implementation, so `torch.compile` traces through it, on CPU tensors (the
CPU target) and CUDA tensors (the GPU of the tensors, on torch's current
stream). A kernel is compiled once per shape, dtype and device type and
kept (`functools.lru_cache`). Shapes and dtypes a kernel does not take are
refused with an error naming the argument.

- `rms_norm(x, weight, eps)`: x (..., N), weight (N,), float16/bfloat16.
- `silu_mul(gate, up)`: silu(gate) * up, same shapes, float16/bfloat16.
  (Both differentiable; their backward runs in PyTorch, in float32.)
- `gemm(a, b)`: a (M, K) @ b (K, N), float16/bfloat16.
- `flash_attn_varlen(q, k, v, cu_seqlens, max_seqlen, causal=False)`:
  packed sequences, (total_tokens, heads, dim), differentiable.
- `flash_attn(q, k, v, causal=False, scale=None)`: (batch, heads, seq,
  dim) as `scaled_dot_product_attention`, K/V heads dividing the query
  heads (GQA), float16/bfloat16, head dim 32-256; the scale is
  1/sqrt(dim). Autograd: the forward keeps the LSE, the backward is
  kernels/attention/flash_attn_bwd.py.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Tuple

import torch

from .base.errors import TileLangError

_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _target(op: str, *tensors) -> str:
    devices = {t.device for t in tensors}
    if len(devices) != 1:
        raise TileLangError(f"tilelang.{op}: the tensors are on different devices "
                            f"({', '.join(sorted(map(str, devices)))})")
    kind = tensors[0].device.type
    if kind not in ("cpu", "cuda"):
        raise TileLangError(f"tilelang.{op}: no kernels for {kind} tensors (cpu or cuda)")
    return kind


def _dtype(op: str, name: str, t: torch.Tensor, like: torch.Tensor = None) -> str:
    if t.dtype not in _DTYPES:
        raise TileLangError(f"tilelang.{op}: {name} is {t.dtype}; float16 or bfloat16 expected")
    if like is not None and t.dtype != like.dtype:
        raise TileLangError(f"tilelang.{op}: {name} is {t.dtype}, the first input {like.dtype}")
    return _DTYPES[t.dtype]


def _device(t: torch.Tensor):
    """Launch (and allocate the results) on the tensors' GPU."""
    return torch.cuda.device(t.device) if t.device.type == "cuda" else contextlib.nullcontext()


# The forward attention kernels' tiles: the programs' defaults on a GPU,
# small tiles on the CPU (quicker to compile, same results).
_ATTN_BLOCKS = {"cuda": {}, "cpu": dict(block_M=64, block_N=64, threads=128)}


@functools.lru_cache(maxsize=256)
def _compiled(key: tuple):
    import tilelang_mlir as tl

    kind, target = key[0], key[-1]
    if kind == "rms_norm":
        from .kernels.rms_norm import rms_norm
        _, M, N, eps, dtype, _ = key
        return tl.compile(rms_norm(M, N, eps, dtype=dtype), out_idx=[2], target=target)
    if kind == "silu_mul":
        from .kernels.silu_mul import silu_mul
        _, M, N, dtype, _ = key
        return tl.compile(silu_mul(M, N, dtype=dtype), out_idx=[2], target=target)
    if kind == "gemm":
        from .kernels import gemm
        _, M, N, K, dtype, _ = key
        big = target == "cuda" and M % 128 == 0 and N % 256 == 0 and K % 64 == 0
        config = gemm.CONFIGS[0] if big else gemm.DEFAULT
        return tl.compile(gemm.matmul(M, N, K, dtype=dtype, **config), out_idx=[2], target=target)
    if kind == "flash_attn":
        from .kernels.attention import flash_attn
        _, B, H, S, D, causal, groups, dtype, _ = key
        return tl.compile(flash_attn.flash_attn(B, H, S, D, causal, groups, dtype=dtype,
                                                **_ATTN_BLOCKS[target]),
                          out_idx=[3, 4], target=target)
    if kind == "flash_attn_bwd":
        from .kernels.attention.flash_attn_bwd import FlashAttnBwd
        _, B, H, S, D, causal, groups, dtype, _ = key
        return FlashAttnBwd(B, H, S, D, causal, groups, dtype=dtype, target=target)
    if kind == "flash_attn_varlen":
        from .kernels.attention import flash_attn_varlen as fav
        _, B, H, S, D, causal, groups, dtype, _ = key
        return tl.compile(fav.flash_attn_varlen(B, H, S, D, causal, groups, dtype=dtype,
                                                **_ATTN_BLOCKS[target]),
                          out_idx=[4, 5], target=target)
    if kind == "flash_attn_varlen_bwd":
        from .kernels.attention.flash_attn_varlen_bwd import FlashAttnVarlenBwd
        _, B, H, S, D, causal, groups, dtype, _ = key
        return FlashAttnVarlenBwd(B, H, S, D, causal, groups, dtype=dtype, target=target)
    raise KeyError(kind)


# --- rms_norm ----------------------------------------------------------------


@torch.library.custom_op("tilelang::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    target = _target("rms_norm", x, weight)
    dtype = _dtype("rms_norm", "x", x)
    _dtype("rms_norm", "weight", weight, x)
    N = x.shape[-1]
    if weight.shape != (N,):
        raise TileLangError(f"tilelang.rms_norm: weight has shape {tuple(weight.shape)}; "
                            f"({N},) expected (the last dimension of x)")
    M = x.numel() // N
    with _device(x):
        y = _compiled(("rms_norm", M, N, float(eps), dtype, target))(
            x.reshape(M, N).contiguous(), weight.contiguous())
    return y.reshape(x.shape)


def _new(x, shape=None, dtype=None):
    """A contiguous result, as the kernels return (torch.empty_like would
    keep a strided input's strides, which the real results do not have)."""
    return torch.empty(x.shape if shape is None else shape, dtype=dtype or x.dtype,
                       device=x.device)


@rms_norm.register_fake
def _(x, weight, eps=1e-6):
    return _new(x)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_backward(ctx, dy):
    # In PyTorch, float32: dx = r (dy w) - x r^3 mean(dy w x), dw = sum(dy x r).
    x, weight = ctx.saved_tensors
    xf, wf, dyf = x.float(), weight.float(), dy.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + ctx.eps)
    g = dyf * wf
    dx = r * g - xf * r.pow(3) * (g * xf).mean(-1, keepdim=True)
    dw = (dyf * xf * r).reshape(-1, x.shape[-1]).sum(0)
    return dx.to(x.dtype), dw.to(weight.dtype), None


rms_norm.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


# --- silu_mul ----------------------------------------------------------------


@torch.library.custom_op("tilelang::silu_mul", mutates_args=())
def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    target = _target("silu_mul", gate, up)
    dtype = _dtype("silu_mul", "gate", gate)
    _dtype("silu_mul", "up", up, gate)
    if gate.shape != up.shape:
        raise TileLangError(f"tilelang.silu_mul: gate {tuple(gate.shape)} and up "
                            f"{tuple(up.shape)} differ in shape")
    N = gate.shape[-1]
    M = gate.numel() // N
    with _device(gate):
        out = _compiled(("silu_mul", M, N, dtype, target))(
            gate.reshape(M, N).contiguous(), up.reshape(M, N).contiguous())
    return out.reshape(gate.shape)


@silu_mul.register_fake
def _(gate, up):
    return _new(gate)


def _silu_mul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _silu_mul_backward(ctx, dy):
    # In PyTorch, float32: d up = dy silu(g), d gate = dy up s (1 + g (1 - s)).
    gate, up = ctx.saved_tensors
    g, u, d = gate.float(), up.float(), dy.float()
    s = torch.sigmoid(g)
    return (d * u * s * (1 + g * (1 - s))).to(gate.dtype), (d * g * s).to(up.dtype)


silu_mul.register_autograd(_silu_mul_backward, setup_context=_silu_mul_setup)


# --- gemm ----------------------------------------------------------------------


@torch.library.custom_op("tilelang::gemm", mutates_args=())
def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    target = _target("gemm", a, b)
    dtype = _dtype("gemm", "a", a)
    _dtype("gemm", "b", b, a)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise TileLangError(f"tilelang.gemm: a {tuple(a.shape)} @ b {tuple(b.shape)}: "
                            "(M, K) @ (K, N) expected")
    (M, K), N = a.shape, b.shape[1]
    with _device(a):
        return _compiled(("gemm", M, N, K, dtype, target))(a.contiguous(), b.contiguous())


@gemm.register_fake
def _(a, b):
    return _new(a, (a.shape[0], b.shape[1]))


# --- flash_attn ------------------------------------------------------------------


def _qkv_dtype(op, q, k, v):
    dtype = _dtype(op, "q", q)
    _dtype(op, "k", k, q)
    _dtype(op, "v", v, q)
    return dtype


def _check_head_dim(op, D):
    if D % 16 or not 32 <= D <= 256:
        raise TileLangError(f"tilelang.{op}: head dim {D} is not supported (a multiple of 16, "
                            "32 to 256)")


def _attn_key(op, q, k, v, causal):
    target = _target(op, q, k, v)
    dtype = _qkv_dtype(op, q, k, v)
    if q.dim() != 4 or k.shape != v.shape or k.dim() != 4:
        raise TileLangError(f"tilelang.{op}: q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                            f"{tuple(v.shape)}: (batch, heads, seq, dim) each, k and v alike")
    B, H, S, D = q.shape
    if k.shape[0] != B or k.shape[2] != S or k.shape[3] != D or H % k.shape[1]:
        raise TileLangError(f"tilelang.{op}: k/v {tuple(k.shape)} do not fit q {tuple(q.shape)} "
                            "(same batch, sequence and head dim; KV heads dividing the heads)")
    _check_head_dim(op, D)
    return (B, H, S, D, bool(causal), H // k.shape[1], dtype, target)


@torch.library.custom_op("tilelang::flash_attn_fwd", mutates_args=())
def flash_attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   causal: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    key = _attn_key("flash_attn", q, k, v, causal)
    with _device(q):
        o, lse = _compiled(("flash_attn",) + key)(q.contiguous(), k.contiguous(), v.contiguous())
    return o, lse


@flash_attn_fwd.register_fake
def _(q, k, v, causal):
    return _new(q), _new(q, q.shape[:3], torch.float32)


@torch.library.custom_op("tilelang::flash_attn_bwd", mutates_args=())
def flash_attn_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                   do: torch.Tensor, lse: torch.Tensor,
                   causal: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    key = _attn_key("flash_attn_bwd", q, k, v, causal)
    with _device(q):
        dq, dk, dv = _compiled(("flash_attn_bwd",) + key)(
            q.contiguous(), k.contiguous(), v.contiguous(), o.contiguous(), do.contiguous(),
            lse.contiguous())
    return dq, dk, dv


@flash_attn_bwd.register_fake
def _(q, k, v, o, do, lse, causal):
    return _new(q), _new(k), _new(v)


def _attn_setup(ctx, inputs, output):
    q, k, v, causal = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal = causal


def _attn_backward(ctx, grad_o, grad_lse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = flash_attn_bwd(q, k, v, o, grad_o, lse, ctx.causal)
    return dq, dk, dv, None


flash_attn_fwd.register_autograd(_attn_backward, setup_context=_attn_setup)


def flash_attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
               scale: float = None) -> torch.Tensor:
    """softmax(q k^T * scale [+ causal mask]) v, as
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    with K/V heads repeated for GQA; differentiable in q, k and v."""
    d = q.shape[-1]
    if scale is not None and not math.isclose(scale, 1 / math.sqrt(d), rel_tol=1e-6):
        raise TileLangError(f"tilelang.flash_attn: scale {scale} is not supported (only "
                            f"1/sqrt(head dim) = {1 / math.sqrt(d):.6g})")
    return flash_attn_fwd(q, k, v, causal)[0]


# --- flash_attn_varlen -------------------------------------------------------------


def _varlen_key(op, q, k, v, cu_seqlens, max_seqlen, causal):
    target = _target(op, q, k, v, cu_seqlens)
    dtype = _qkv_dtype(op, q, k, v)
    if q.dim() != 3 or k.dim() != 3 or k.shape != v.shape:
        raise TileLangError(f"tilelang.{op}: q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                            f"{tuple(v.shape)}: (total_tokens, heads, dim) each, k and v alike")
    T_, H, D = q.shape
    if k.shape[0] != T_ or k.shape[2] != D or H % k.shape[1]:
        raise TileLangError(f"tilelang.{op}: k/v {tuple(k.shape)} do not fit q {tuple(q.shape)} "
                            "(same tokens and head dim; KV heads dividing the heads)")
    if cu_seqlens.dtype != torch.int32 or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        raise TileLangError(f"tilelang.{op}: cu_seqlens must be int32 offsets (batch + 1,), got "
                            f"{cu_seqlens.dtype} {tuple(cu_seqlens.shape)}")
    _check_head_dim(op, D)
    if max_seqlen < 1:
        raise TileLangError(f"tilelang.{op}: max_seqlen {max_seqlen} must be at least 1")
    return (cu_seqlens.numel() - 1, H, int(max_seqlen), D, bool(causal), H // k.shape[1], dtype,
            target)


@torch.library.custom_op("tilelang::flash_attn_varlen_fwd", mutates_args=())
def flash_attn_varlen_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          cu_seqlens: torch.Tensor, max_seqlen: int,
                          causal: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    key = _varlen_key("flash_attn_varlen", q, k, v, cu_seqlens, max_seqlen, causal)
    with _device(q):
        o, lse = _compiled(("flash_attn_varlen",) + key)(q.contiguous(), k.contiguous(),
                                                           v.contiguous(), cu_seqlens.contiguous())
    return o, lse


@flash_attn_varlen_fwd.register_fake
def _(q, k, v, cu_seqlens, max_seqlen, causal):
    return _new(q), _new(q, (q.shape[1], q.shape[0]), torch.float32)


@torch.library.custom_op("tilelang::flash_attn_varlen_bwd", mutates_args=())
def flash_attn_varlen_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                          do: torch.Tensor, lse: torch.Tensor, cu_seqlens: torch.Tensor,
                          max_seqlen: int,
                          causal: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    key = _varlen_key("flash_attn_varlen_bwd", q, k, v, cu_seqlens, max_seqlen, causal)
    with _device(q):
        return _compiled(("flash_attn_varlen_bwd",) + key)(
            q.contiguous(), k.contiguous(), v.contiguous(), o.contiguous(), do.contiguous(),
            lse.contiguous(), cu_seqlens.contiguous())


@flash_attn_varlen_bwd.register_fake
def _(q, k, v, o, do, lse, cu_seqlens, max_seqlen, causal):
    return _new(q), _new(k), _new(v)


def _varlen_setup(ctx, inputs, output):
    q, k, v, cu_seqlens, max_seqlen, causal = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, cu_seqlens)
    ctx.max_seqlen, ctx.causal = max_seqlen, causal


def _varlen_backward(ctx, grad_o, grad_lse):
    q, k, v, o, lse, cu_seqlens = ctx.saved_tensors
    dq, dk, dv = flash_attn_varlen_bwd(q, k, v, o, grad_o, lse, cu_seqlens, ctx.max_seqlen,
                                       ctx.causal)
    return dq, dk, dv, None, None, None


flash_attn_varlen_fwd.register_autograd(_varlen_backward, setup_context=_varlen_setup)


def flash_attn_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      cu_seqlens: torch.Tensor, max_seqlen: int,
                      causal: bool = False) -> torch.Tensor:
    """Attention of packed sequences (flash_attn_varlen_func with the same
    offsets for queries and keys): q (total, heads, dim), k and v (total,
    kv_heads, dim), cu_seqlens int32 (batch + 1,), max_seqlen the longest
    sequence. One compiled kernel serves any total; differentiable in q, k
    and v (kernels/attention/flash_attn_varlen_bwd.py). A sequence longer
    than max_seqlen is not checked for (that would read cu_seqlens back
    from the GPU): its rows past max_seqlen are not computed."""
    return flash_attn_varlen_fwd(q, k, v, cu_seqlens, max_seqlen, causal)[0]
