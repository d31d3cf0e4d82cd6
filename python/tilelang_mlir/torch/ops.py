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
  (Both differentiable; their backward is one kernel each, operators
  `rms_norm_bwd` and `silu_mul_bwd`.)
- `gemm(a, b, scale_a=None, scale_b=None, out_dtype=None)`: a (M, K) @ b
  (K, N), float16/bfloat16; float8 e4m3 with per-tensor float32 scales as
  torch._scaled_mm (result bfloat16 by default).
- `flash_attn_varlen(q, k, v, cu_seqlens, max_seqlen, causal=False)`:
  packed sequences, (total_tokens, heads, dim), differentiable.
- `flash_attn(q, k, v, causal=False, scale=None)`: (batch, heads, seq,
  dim) as `scaled_dot_product_attention`, K/V heads dividing the query
  heads (GQA), float16/bfloat16, head dim 32-256; scale None is
  1/sqrt(dim), another scale compiles its own kernels (also for
  flash_attn_varlen, flash_decode and mla_decode). Autograd: the forward keeps the LSE, the backward is
  kernels/attention/flash_attn_bwd.py.
- `flash_decode(q, k_cache, v_cache, cache_seqlens, block_table)`: one
  query token per sequence against a paged KV cache, q (batch, heads,
  dim), the caches (num_pages, kv_heads, page_size, dim), int32 lengths
  (batch,) and block table (batch, max_pages); GQA, head dim 32/64/128,
  pages of a multiple of 16 tokens.
- `mla_decode(q, q_pe, kv, block_table, cache_seqlens)`: DeepSeek MLA
  decoding, q (batch, heads, 512), q_pe (batch, heads, 64), the latent
  cache kv (num_pages, page_size, 576); heads and pages multiples of 64.
- `w4a16_linear(x, w_packed, scales)`: x (..., K) @ dequant(W)^T with W an
  int4 (N, K) weight packed once by `pack_w4a16(weight, group=128)`; the
  GEMV for one row, the dequant GEMM for more.

Where the library has a tuning space for a kernel (`gemm`, `w4a16_linear`:
`tune_w4a16_linear`), the operator takes the autotuner's cached winner
for the exact problem when there is one, else the default; it never
tunes (see "configs" below).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from typing import Optional, Tuple

import torch

from ..base.errors import TileLangError
from .library import one_device

_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _one_device(op: str, tensors: dict):
    return one_device(f"tilelang.{op}", tensors)


def _target(op: str, **tensors) -> str:
    """"cpu" or "cuda": the device type of the tensors (named by their
    arguments), which must share one device."""
    kind = _one_device(op, tensors).type
    if kind not in ("cpu", "cuda"):
        raise TileLangError(f"tilelang.{op}: no kernels for {kind} tensors (cpu or cuda)")
    return kind


def _fake(custom, op: str):
    """Registers the decorated function as `custom`'s fake implementation,
    after the same device check as the kernels': torch dispatches a call
    with one meta tensor among CPU or CUDA ones to the fake implementation,
    which would return an uninitialized result on the first input's device.
    With all tensors on one device the results are allocated there (meta
    for meta tensors, the fake device under torch.compile)."""
    def register(fn):
        names = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            _one_device(op, dict(zip(names, args), **kwargs))
            return fn(*args, **kwargs)

        custom.register_fake(checked)
        return checked

    return register


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
        from ..kernels.rms_norm import rms_norm
        _, M, N, eps, dtype, _ = key
        return tl.compile(rms_norm(M, N, eps, dtype=dtype), out_idx=[2], target=target)
    if kind == "rms_norm_bwd":
        from ..kernels.rms_norm import rms_norm_bwd
        _, M, N, eps, dtype, _ = key
        return tl.compile(rms_norm_bwd(M, N, eps, dtype=dtype), out_idx=[3, 4], target=target)
    if kind == "silu_mul":
        from ..kernels.silu_mul import silu_mul
        _, M, N, dtype, _ = key
        return tl.compile(silu_mul(M, N, dtype=dtype), out_idx=[2], target=target)
    if kind == "silu_mul_bwd":
        from ..kernels.silu_mul import silu_mul_bwd
        _, M, N, dtype, _ = key
        return tl.compile(silu_mul_bwd(M, N, dtype=dtype), out_idx=[3, 4], target=target)
    if kind == "gemm":
        from ..kernels import gemm
        _, M, N, K, dtype, out_dtype, _ = key
        config = _gemm_config(M, N, K, dtype, out_dtype, target)
        if dtype.startswith("float8"):
            return tl.compile(gemm.matmul_nt_scaled(M, N, K, dtype=dtype, out_dtype=out_dtype,
                                                    **config), out_idx=[4], target=target)
        return tl.compile(gemm.matmul(M, N, K, dtype=dtype, **config), out_idx=[2], target=target)
    if kind == "flash_attn":
        from ..kernels.attention import flash_attn
        _, B, H, S, D, causal, groups, scale, dtype, _ = key
        # The library's Hopper schedule, per card (targets without wgmma
        # ignore it).
        if target == "cuda":
            import torch

            blocks, passes = flash_attn.default_config(D, causal, torch.cuda.get_device_name())
        else:
            blocks, passes = _ATTN_BLOCKS[target], None
        return tl.compile(flash_attn.flash_attn(B, H, S, D, causal, groups, dtype=dtype,
                                                sm_scale=scale, **blocks),
                          out_idx=[3, 4], target=target, pass_configs=passes)
    if kind == "flash_attn_bwd":
        from ..kernels.attention.flash_attn_bwd import FlashAttnBwd
        _, B, H, S, D, causal, groups, scale, dtype, _ = key
        return FlashAttnBwd(B, H, S, D, causal, groups, dtype=dtype, target=target,
                            sm_scale=scale)
    if kind == "check_offsets":
        from ..kernels.attention import index_checks
        _, B, S, _ = key
        return tl.compile(index_checks.check_offsets(B, S), target=target)
    if kind == "check_pages":
        from ..kernels.attention import index_checks
        _, B, max_pages, pages, page_size, _ = key
        return tl.compile(index_checks.check_pages(B, max_pages, pages, page_size),
                          target=target)
    if kind == "flash_attn_varlen":
        from ..kernels.attention import flash_attn_varlen as fav
        _, B, H, S, D, causal, groups, scale, dtype, _ = key
        return tl.compile(fav.flash_attn_varlen(B, H, S, D, causal, groups, dtype=dtype,
                                                sm_scale=scale, **_ATTN_BLOCKS[target]),
                          out_idx=[4, 5], target=target)
    if kind == "flash_attn_varlen_bwd":
        from ..kernels.attention.flash_attn_varlen_bwd import FlashAttnVarlenBwd
        _, B, H, S, D, causal, groups, scale, dtype, _ = key
        return FlashAttnVarlenBwd(B, H, S, D, causal, groups, dtype=dtype, target=target,
                                  sm_scale=scale)
    if kind == "flash_decode":
        from ..kernels.attention import flash_decode as fd
        _, B, H, KVH, D, pages, page_size, max_pages, scale, dtype, _ = key
        block_N = _decode_block_N(page_size, max_pages, target)
        config = _decode_config(B, H, KVH, block_N, target)
        splits = fd.default_splits(B, KVH, page_size * max_pages, block_N,
                                   waves=2 if target == "cuda" else 1)
        return fd.FlashDecode(B, H, KVH, D, page_size=page_size, num_pages=pages,
                              max_pages=max_pages, target=target, dtype=dtype,
                              num_splits=splits, sm_scale=scale, **config)
    if kind == "mla_decode":
        from ..kernels.attention import flash_decode as fd
        from ..kernels.attention import mla_decode as mla
        _, B, H, pages, page_size, max_pages, scale, dtype, _ = key
        config = dict(_mla_config(target), page_size=page_size, sm_scale=scale)
        # Splits as flash decoding chooses them, the blocks of 64 heads in
        # the place of the KV heads.
        splits = fd.default_splits(B, H // 64, page_size * max_pages, config["block_N"], waves=2)
        return mla.MlaDecode(B, H, pages, max_pages, splits, target=target, dtype=dtype,
                             **config)
    if kind == "w4a16":
        from ..kernels import dequant as dq
        _, M, N, K, group, dtype, _ = key
        config = _w4a16_config(M, N, K, group, dtype, target)
        return config, tl.compile(dq.program(M, N, K, 4, group, dtype, config=config),
                                  out_idx=[3], target=target)
    raise KeyError(kind)


# --- configs: tuned (from the autotuner's cache) or the defaults --------------------
#
# An operator never tunes. Where the library has a tuning space for a
# kernel (kernels/gemm.py's CONFIGS and `autotune`; the dequant configs,
# tuned by `tune_w4a16_linear` below), the operator rebuilds the same
# `tl.autotune` tuner and asks the cache for the winner of this exact
# problem (`autotuner.cached_config`: the key is made from the factory's
# source, the arguments, the configs and the target; nothing is compiled to
# make it). A winner is taken when the shape is first compiled in this
# process (the kernel is then kept); without one, the default. The
# attention kernels have no tuning space in the library (their benchmarks
# sweep their own), so they use their defaults.


def _gemm_tuner(target, fp8=False):
    """The tuner `kernels.gemm.autotune(M, N, K, dtype, target)` runs (its
    key does not depend on the reference, the check or the timing counts);
    for float8, the one over `matmul_nt` and FP8_CONFIGS that
    benchmarks/gemm.py runs (the scaled kernel has the same tiles: the
    scales cost one multiply in the epilogue)."""
    import tilelang_mlir as tl
    from ..kernels import gemm
    if fp8:
        return tl.autotune(configs=list(gemm.FP8_CONFIGS), out_idx=[2],
                           target=target)(gemm.matmul_nt)
    return tl.autotune(configs=list(gemm.CONFIGS), out_idx=[2], target=target)(gemm.matmul)


def _gemm_config(M, N, K, dtype, out_dtype, target):
    """The cached winner of `kernels.gemm.autotune` for this problem, else
    the Hopper tile for large aligned shapes on a GPU, else the small tile
    (block_K doubled for float8)."""
    from ..autotuner import cached_config
    from ..kernels import gemm
    fp8 = dtype.startswith("float8")
    tuned_out = None if out_dtype == ("bfloat16" if fp8 else dtype) else out_dtype
    tuned = cached_config(_gemm_tuner(target, fp8), M, N, K, dtype=dtype, out_dtype=tuned_out)
    if tuned is not None:
        return tuned
    big = target == "cuda" and M % 128 == 0 and N % 256 == 0 and K % 64 == 0
    if fp8:
        return gemm.FP8_CONFIGS[0] if big else dict(gemm.DEFAULT, block_K=64)
    return gemm.CONFIGS[0] if big else gemm.DEFAULT


# --- rms_norm ----------------------------------------------------------------


@torch.library.custom_op("tilelang::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    target = _target("rms_norm", x=x, weight=weight)
    dtype = _dtype("rms_norm", "x", x)
    _dtype("rms_norm", "weight", weight, x)
    N = x.shape[-1]
    if weight.shape != (N,):
        raise TileLangError(f"tilelang.rms_norm: weight has shape {tuple(weight.shape)}; "
                            f"({N},) expected (the last dimension of x)")
    if x.numel() == 0:  # as torch: an empty result
        return _new(x)
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


@_fake(rms_norm, "rms_norm")
def _(x, weight, eps=1e-6):
    return _new(x)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


@torch.library.custom_op("tilelang::rms_norm_bwd", mutates_args=())
def rms_norm_bwd(x: torch.Tensor, weight: torch.Tensor, dy: torch.Tensor,
                 eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """(dx, dw) of rms_norm in one pass (kernels/rms_norm.py's
    rms_norm_bwd: dx = r (dy w) - x r^3 mean(dy w x) per row, float32
    partial sums of dw = sum(dy x r) per block, added up here)."""
    target = _target("rms_norm_bwd", x=x, weight=weight, dy=dy)
    dtype = _dtype("rms_norm_bwd", "x", x)
    _dtype("rms_norm_bwd", "weight", weight, x)
    _dtype("rms_norm_bwd", "dy", dy, x)
    N = x.shape[-1]
    if weight.shape != (N,) or dy.shape != x.shape:
        raise TileLangError(f"tilelang.rms_norm_bwd: x {tuple(x.shape)}, weight "
                            f"{tuple(weight.shape)}, dy {tuple(dy.shape)} do not fit")
    if x.numel() == 0:  # no rows: nothing flows back to the weight
        return _new(x), torch.zeros_like(weight)
    M = x.numel() // N
    with _device(x):
        dx, dw = _compiled(("rms_norm_bwd", M, N, float(eps), dtype, target))(
            x.reshape(M, N).contiguous(), weight.contiguous(), dy.reshape(M, N).contiguous())
    return dx.reshape(x.shape), dw.sum(0).to(weight.dtype)


@_fake(rms_norm_bwd, "rms_norm_bwd")
def _(x, weight, dy, eps):
    return _new(x), _new(weight)


def _rms_norm_backward(ctx, dy):
    x, weight = ctx.saved_tensors
    dx, dw = rms_norm_bwd(x, weight, dy, ctx.eps)
    return dx, dw, None


rms_norm.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


# --- silu_mul ----------------------------------------------------------------


@torch.library.custom_op("tilelang::silu_mul", mutates_args=())
def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    target = _target("silu_mul", gate=gate, up=up)
    dtype = _dtype("silu_mul", "gate", gate)
    _dtype("silu_mul", "up", up, gate)
    if gate.shape != up.shape:
        raise TileLangError(f"tilelang.silu_mul: gate {tuple(gate.shape)} and up "
                            f"{tuple(up.shape)} differ in shape")
    if gate.numel() == 0:
        return _new(gate)
    N = gate.shape[-1]
    M = gate.numel() // N
    with _device(gate):
        out = _compiled(("silu_mul", M, N, dtype, target))(
            gate.reshape(M, N).contiguous(), up.reshape(M, N).contiguous())
    return out.reshape(gate.shape)


@_fake(silu_mul, "silu_mul")
def _(gate, up):
    return _new(gate)


def _silu_mul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


@torch.library.custom_op("tilelang::silu_mul_bwd", mutates_args=())
def silu_mul_bwd(gate: torch.Tensor, up: torch.Tensor,
                 dy: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(d gate, d up) of silu_mul in one pass (kernels/silu_mul.py's
    silu_mul_bwd: d gate = dy up s (1 + gate (1 - s)), d up = dy silu(gate),
    s = sigmoid(gate), in float32)."""
    target = _target("silu_mul_bwd", gate=gate, up=up, dy=dy)
    dtype = _dtype("silu_mul_bwd", "gate", gate)
    _dtype("silu_mul_bwd", "up", up, gate)
    _dtype("silu_mul_bwd", "dy", dy, gate)
    if gate.shape != up.shape or dy.shape != gate.shape:
        raise TileLangError(f"tilelang.silu_mul_bwd: gate {tuple(gate.shape)}, up "
                            f"{tuple(up.shape)}, dy {tuple(dy.shape)} differ in shape")
    if gate.numel() == 0:
        return _new(gate), _new(up)
    N = gate.shape[-1]
    M = gate.numel() // N
    with _device(gate):
        dg, du = _compiled(("silu_mul_bwd", M, N, dtype, target))(
            gate.reshape(M, N).contiguous(), up.reshape(M, N).contiguous(),
            dy.reshape(M, N).contiguous())
    return dg.reshape(gate.shape), du.reshape(gate.shape)


@_fake(silu_mul_bwd, "silu_mul_bwd")
def _(gate, up, dy):
    return _new(gate), _new(up)


def _silu_mul_backward(ctx, dy):
    gate, up = ctx.saved_tensors
    return silu_mul_bwd(gate, up, dy)


silu_mul.register_autograd(_silu_mul_backward, setup_context=_silu_mul_setup)


# --- gemm ----------------------------------------------------------------------

_FP8 = {torch.float8_e4m3fn: "float8_e4m3"}
_OUT_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}
_TORCH_OUT = {name: t for t, name in _OUT_DTYPES.items()}


def _gemm_key(a, b, scale_a, scale_b, out_dtype):
    op = "gemm"
    target = _target(op, a=a, b=b, scale_a=scale_a, scale_b=scale_b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise TileLangError(f"tilelang.gemm: a {tuple(a.shape)} @ b {tuple(b.shape)}: "
                            "(M, K) @ (K, N) expected")
    if a.dtype in _FP8:
        if b.dtype != a.dtype:
            raise TileLangError(f"tilelang.gemm: b is {b.dtype}, a {a.dtype}")
        for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
            if s is None:
                raise TileLangError(f"tilelang.gemm: float8 inputs need {name} (a float32 "
                                    "tensor of one element, as torch._scaled_mm)")
            if s.dtype != torch.float32 or s.numel() != 1:
                raise TileLangError(f"tilelang.gemm: {name} must be a float32 tensor of one "
                                    f"element (per-tensor scaling), got {s.dtype} "
                                    f"{tuple(s.shape)}")
        out = torch.bfloat16 if out_dtype is None else out_dtype
        if out not in _OUT_DTYPES:
            raise TileLangError(f"tilelang.gemm: out_dtype {out} is not supported (float16, "
                                "bfloat16 or float32)")
        dtype = _FP8[a.dtype]
    else:
        if a.dtype not in _DTYPES:
            raise TileLangError(f"tilelang.gemm: a is {a.dtype}; float16, bfloat16 or "
                                "float8_e4m3fn expected")
        dtype = _dtype("gemm", "b", b, a)
        if scale_a is not None or scale_b is not None:
            raise TileLangError("tilelang.gemm: scale_a and scale_b are for float8 inputs; "
                                f"a is {a.dtype}")
        if out_dtype is not None and out_dtype != a.dtype:
            raise TileLangError(f"tilelang.gemm: out_dtype {out_dtype} differs from the "
                                f"inputs' {a.dtype} (only float8 inputs take out_dtype)")
        out = a.dtype
    (M, K), N = a.shape, b.shape[1]
    return ("gemm", M, N, K, dtype, _OUT_DTYPES[out], target)


@torch.library.custom_op("tilelang::gemm", mutates_args=())
def gemm(a: torch.Tensor, b: torch.Tensor, scale_a: Optional[torch.Tensor] = None,
         scale_b: Optional[torch.Tensor] = None,
         out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """a (M, K) @ b (K, N). float16/bfloat16: the result in the inputs'
    dtype. float8 (e4m3fn), as torch._scaled_mm with per-tensor scales:
    (a * scale_a) @ (b * scale_b), scale_a and scale_b float32 tensors of
    one element, the result in `out_dtype` (default bfloat16; float16 and
    float32 too). The float8 kernel reads b K-major (as Hopper's float8
    tensor cores do): pass b as the transpose of a contiguous (N, K) tensor
    (as torch._scaled_mm wants) and it is used in place; any other b is
    copied."""
    key = _gemm_key(a, b, scale_a, scale_b, out_dtype)
    M, N, K = key[1:4]
    if M * N * K == 0:  # as torch: empty, or zeros for K = 0
        return torch.zeros((M, N), dtype=_TORCH_OUT[key[5]], device=a.device)
    with _device(a):
        kernel = _compiled(key)
        if key[4] in _FP8.values():
            return kernel(a.contiguous(), b.t().contiguous(), scale_a.reshape(1),
                          scale_b.reshape(1))
        return kernel(a.contiguous(), b.contiguous())


@_fake(gemm, "gemm")
def _(a, b, scale_a=None, scale_b=None, out_dtype=None):
    if a.dtype in _FP8:
        return _new(a, (a.shape[0], b.shape[1]), out_dtype or torch.bfloat16)
    return _new(a, (a.shape[0], b.shape[1]))


# --- flash_attn ------------------------------------------------------------------


def _divides(kv_heads, heads):
    """Whether `kv_heads` KV heads serve `heads` query heads (GQA; none
    serve none)."""
    return heads % kv_heads == 0 if kv_heads else heads == 0


def _qkv_dtype(op, q, k, v):
    dtype = _dtype(op, "q", q)
    _dtype(op, "k", k, q)
    _dtype(op, "v", v, q)
    return dtype


def _check_head_dim(op, D):
    if D % 16 or not 32 <= D <= 256:
        raise TileLangError(f"tilelang.{op}: head dim {D} is not supported (a multiple of 16, "
                            "32 to 256)")


def _scale(op, scale, D):
    """The softmax scale a kernel is compiled with: None for the default
    1/sqrt(D) (and anything within 1e-6 of it, so that those calls share
    the default kernels), else the float."""
    if scale is None or math.isclose(scale, 1 / math.sqrt(D), rel_tol=1e-6):
        return None
    if not (math.isfinite(scale) and scale > 0):
        raise TileLangError(f"tilelang.{op}: scale {scale} must be a positive finite number")
    return float(scale)


def _attn_key(op, q, k, v, causal, scale=None, **others):
    """The kernel key of q, k, v; `others`: further tensors of the call
    (the backward's o, do, lse), checked to be on their device."""
    target = _target(op, q=q, k=k, v=v, **others)
    dtype = _qkv_dtype(op, q, k, v)
    if q.dim() != 4 or k.shape != v.shape or k.dim() != 4:
        raise TileLangError(f"tilelang.{op}: q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                            f"{tuple(v.shape)}: (batch, heads, seq, dim) each, k and v alike")
    B, H, S, D = q.shape
    if k.shape[0] != B or k.shape[2] != S or k.shape[3] != D or not _divides(k.shape[1], H):
        raise TileLangError(f"tilelang.{op}: k/v {tuple(k.shape)} do not fit q {tuple(q.shape)} "
                            "(same batch, sequence and head dim; KV heads dividing the heads)")
    _check_head_dim(op, D)
    return (B, H, S, D, bool(causal), H // max(k.shape[1], 1), _scale(op, scale, D), dtype,
            target)


@torch.library.custom_op("tilelang::flash_attn_fwd", mutates_args=())
def flash_attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                   scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    key = _attn_key("flash_attn", q, k, v, causal, scale)
    if q.numel() == 0:  # no batch, head or token: empty results
        return _new(q), _new(q, q.shape[:3], torch.float32)
    with _device(q):
        o, lse = _compiled(("flash_attn",) + key)(q.contiguous(), k.contiguous(), v.contiguous())
    return o, lse


@_fake(flash_attn_fwd, "flash_attn")
def _(q, k, v, causal, scale=None):
    return _new(q), _new(q, q.shape[:3], torch.float32)


@torch.library.custom_op("tilelang::flash_attn_bwd", mutates_args=())
def flash_attn_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                   do: torch.Tensor, lse: torch.Tensor, causal: bool,
                   scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor,
                                                           torch.Tensor]:
    key = _attn_key("flash_attn_bwd", q, k, v, causal, scale, o=o, do=do, lse=lse)
    if q.numel() == 0:  # no query: no gradient
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    with _device(q):
        dq, dk, dv = _compiled(("flash_attn_bwd",) + key)(
            q.contiguous(), k.contiguous(), v.contiguous(), o.contiguous(), do.contiguous(),
            lse.contiguous())
    return dq, dk, dv


@_fake(flash_attn_bwd, "flash_attn_bwd")
def _(q, k, v, o, do, lse, causal, scale=None):
    return _new(q), _new(k), _new(v)


def _attn_setup(ctx, inputs, output):
    q, k, v, causal, scale = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal, ctx.scale = causal, scale


def _attn_backward(ctx, grad_o, grad_lse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = flash_attn_bwd(q, k, v, o, grad_o, lse, ctx.causal, ctx.scale)
    return dq, dk, dv, None, None


flash_attn_fwd.register_autograd(_attn_backward, setup_context=_attn_setup)


def flash_attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
               scale: float = None) -> torch.Tensor:
    """softmax(q k^T * scale [+ causal mask]) v, as
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
    scale=scale) with K/V heads repeated for GQA (scale None: 1/sqrt(head
    dim); another scale compiles its own kernels); differentiable in q, k
    and v."""
    return flash_attn_fwd(q, k, v, causal, scale)[0]


# --- flash_attn_varlen -------------------------------------------------------------


def _varlen_key(op, q, k, v, cu_seqlens, max_seqlen, causal, scale=None, **others):
    target = _target(op, q=q, k=k, v=v, cu_seqlens=cu_seqlens, **others)
    dtype = _qkv_dtype(op, q, k, v)
    if q.dim() != 3 or k.dim() != 3 or k.shape != v.shape:
        raise TileLangError(f"tilelang.{op}: q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                            f"{tuple(v.shape)}: (total_tokens, heads, dim) each, k and v alike")
    T_, H, D = q.shape
    if k.shape[0] != T_ or k.shape[2] != D or not _divides(k.shape[1], H):
        raise TileLangError(f"tilelang.{op}: k/v {tuple(k.shape)} do not fit q {tuple(q.shape)} "
                            "(same tokens and head dim; KV heads dividing the heads)")
    if cu_seqlens.dtype != torch.int32 or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        raise TileLangError(f"tilelang.{op}: cu_seqlens must be int32 offsets (batch + 1,), got "
                            f"{cu_seqlens.dtype} {tuple(cu_seqlens.shape)}")
    _check_head_dim(op, D)
    if max_seqlen < 1:
        raise TileLangError(f"tilelang.{op}: max_seqlen {max_seqlen} must be at least 1")
    if cu_seqlens.device.type == "cpu":
        _check_offsets(op, cu_seqlens, T_, max_seqlen)
    elif cu_seqlens.numel() > 1:
        # On a GPU: a kernel of device assertions (index_checks.check_offsets),
        # not read back; a bad offset fails the stream.
        with _device(cu_seqlens):
            _compiled(("check_offsets", cu_seqlens.numel() - 1, int(max_seqlen), target))(
                cu_seqlens.contiguous(), int(T_))
    return (cu_seqlens.numel() - 1, H, int(max_seqlen), D, bool(causal), H // max(k.shape[1], 1),
            _scale(op, scale, D), dtype, target)


def _check_offsets(op, cu_seqlens, total, max_seqlen):
    """Offsets on the host (a CPU tensor; on a GPU a kernel of device
    assertions checks the same, kernels/attention/index_checks.py): from 0,
    not decreasing, to the number of tokens, no sequence longer than
    max_seqlen."""
    cu = cu_seqlens.tolist()
    lens = [b - a for a, b in zip(cu, cu[1:])]
    if cu[0] != 0:
        raise TileLangError(f"tilelang.{op}: cu_seqlens[0] is {cu[0]}; the offsets start at 0")
    if min(lens) < 0:
        i = next(i for i, n in enumerate(lens) if n < 0)
        raise TileLangError(f"tilelang.{op}: cu_seqlens decreases from {cu[i]} to {cu[i + 1]} "
                            f"at index {i + 1}; the offsets must not decrease")
    if cu[-1] != total:
        raise TileLangError(f"tilelang.{op}: cu_seqlens ends at {cu[-1]}, but q has {total} "
                            "tokens; the last offset is the number of tokens")
    if max(lens) > max_seqlen:
        raise TileLangError(f"tilelang.{op}: a sequence of cu_seqlens has {max(lens)} tokens, "
                            f"more than max_seqlen = {max_seqlen}")


@torch.library.custom_op("tilelang::flash_attn_varlen_fwd", mutates_args=())
def flash_attn_varlen_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          cu_seqlens: torch.Tensor, max_seqlen: int, causal: bool,
                          scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    key = _varlen_key("flash_attn_varlen", q, k, v, cu_seqlens, max_seqlen, causal, scale)
    if q.numel() == 0:  # no token or head: empty results
        return _new(q), _new(q, (q.shape[1], q.shape[0]), torch.float32)
    with _device(q):
        o, lse = _compiled(("flash_attn_varlen",) + key)(q.contiguous(), k.contiguous(),
                                                           v.contiguous(), cu_seqlens.contiguous())
    return o, lse


@_fake(flash_attn_varlen_fwd, "flash_attn_varlen")
def _(q, k, v, cu_seqlens, max_seqlen, causal, scale=None):
    return _new(q), _new(q, (q.shape[1], q.shape[0]), torch.float32)


@torch.library.custom_op("tilelang::flash_attn_varlen_bwd", mutates_args=())
def flash_attn_varlen_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                          do: torch.Tensor, lse: torch.Tensor, cu_seqlens: torch.Tensor,
                          max_seqlen: int, causal: bool, scale: Optional[float] = None
                          ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    key = _varlen_key("flash_attn_varlen_bwd", q, k, v, cu_seqlens, max_seqlen, causal, scale,
                      o=o, do=do, lse=lse)
    if q.numel() == 0:  # no query: no gradient
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    with _device(q):
        return _compiled(("flash_attn_varlen_bwd",) + key)(
            q.contiguous(), k.contiguous(), v.contiguous(), o.contiguous(), do.contiguous(),
            lse.contiguous(), cu_seqlens.contiguous())


@_fake(flash_attn_varlen_bwd, "flash_attn_varlen_bwd")
def _(q, k, v, o, do, lse, cu_seqlens, max_seqlen, causal, scale=None):
    return _new(q), _new(k), _new(v)


def _varlen_setup(ctx, inputs, output):
    q, k, v, cu_seqlens, max_seqlen, causal, scale = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, cu_seqlens)
    ctx.max_seqlen, ctx.causal, ctx.scale = max_seqlen, causal, scale


def _varlen_backward(ctx, grad_o, grad_lse):
    q, k, v, o, lse, cu_seqlens = ctx.saved_tensors
    dq, dk, dv = flash_attn_varlen_bwd(q, k, v, o, grad_o, lse, cu_seqlens, ctx.max_seqlen,
                                       ctx.causal, ctx.scale)
    return dq, dk, dv, None, None, None, None


flash_attn_varlen_fwd.register_autograd(_varlen_backward, setup_context=_varlen_setup)


def flash_attn_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      cu_seqlens: torch.Tensor, max_seqlen: int, causal: bool = False,
                      scale: float = None) -> torch.Tensor:
    """Attention of packed sequences (flash_attn_varlen_func with the same
    offsets for queries and keys): q (total, heads, dim), k and v (total,
    kv_heads, dim), cu_seqlens int32 (batch + 1,), max_seqlen the longest
    sequence. One compiled kernel serves any total; differentiable in q, k
    and v (kernels/attention/flash_attn_varlen_bwd.py). cu_seqlens is
    checked (from 0, not decreasing, to the number of tokens, no sequence
    longer than max_seqlen): on the host when it is a CPU tensor, by a small
    kernel of device assertions before the attention kernel when it is on a
    GPU (kernels/attention/index_checks.py; it is not read back)."""
    return flash_attn_varlen_fwd(q, k, v, cu_seqlens, max_seqlen, causal, scale)[0]


# --- flash_decode --------------------------------------------------------------------


# The decode kernels' largest KV tile: 64 tokens on a GPU (flash_decode's
# RESIDENT2, two blocks a multiprocessor) and on the CPU (quicker to compile
# than the program's default of 128, same results).
_DECODE_MAX_BLOCK_N = {"cuda": 64, "cpu": 64}
_DECODE_HEAD_DIMS = (32, 64, 128)


def _decode_block_N(page_size, max_pages, target):
    """The KV tile: the largest power of two up to the target's that
    divides the page (a tile lies within one page; 16 at least). With one
    page per sequence the tiles walk one page and the last one is masked."""
    block_N = _DECODE_MAX_BLOCK_N[target]
    if max_pages == 1:
        return block_N
    while page_size % block_N:
        block_N //= 2
    return block_N


# Multi-head decoding (one query head per KV head) with at least this many
# (sequence, KV head) blocks runs its split kernel on two warps (64
# threads, `tl.pipeline_reuse_slots`): the score tile has one real row of
# 16, and on fewer warps its row reductions and P's staging cross fewer
# warps. In A/B rounds on the H200 (BENCHMARKS.md 2026-12-04, later, run
# AP) it took 2-5% off B64 H32/32 (2048 blocks) and was 1-8% slower at
# B16 H32/32 (512 blocks) and with 8 KV heads.
_DECODE_FEW_WARP_BLOCKS = 1024


def _decode_config(B, H, KVH, block_N, target):
    """The decode split kernel's tiles and pass configs on `target`: on a
    GPU fd.RESIDENT2's 3 stages loaded with cp.async (two blocks a
    multiprocessor), on two warps with reused slots for multi-head
    decoding of many blocks."""
    from ..kernels.attention import flash_decode as fd
    config = dict(block_N=block_N)
    if target != "cuda":
        return config
    config.update(num_stages=fd.RESIDENT2["num_stages"], pass_configs=dict(fd.CP_ASYNC))
    if H == KVH and block_N == 64 and B * KVH >= _DECODE_FEW_WARP_BLOCKS:
        config.update(threads=64, pass_configs=dict(fd.CP_ASYNC_REUSE))
    return config


def _index(op, name, t, shape_text, shape):
    if t.dtype != torch.int32 or tuple(t.shape) != shape:
        raise TileLangError(f"tilelang.{op}: {name} must be int32 {shape_text} = {shape}, got "
                            f"{t.dtype} {tuple(t.shape)}")


def _block_table(op, block_table, B):
    """max_pages of an int32 (batch, max_pages) block table."""
    if block_table.dim() != 2:
        raise TileLangError(f"tilelang.{op}: block_table must be int32 (batch, max_pages), got "
                            f"{block_table.dtype} {tuple(block_table.shape)}")
    max_pages = block_table.shape[1]
    _index(op, "block_table", block_table, "(batch, max_pages)", (B, max_pages))
    return max_pages


def _check_pages(op, cache_seqlens, block_table, num_pages, page_size):
    """Lengths and the pages they use on the host (CPU tensors; on a GPU a
    kernel of device assertions checks the same, kernels/attention/
    index_checks.py, `_check_pages_on_gpu`): every length in [0, max_pages * page_size],
    every page a sequence's tokens lie on in [0, num_pages). Entries of the
    table past a sequence's end are not read and not checked."""
    max_len = block_table.shape[1] * page_size
    bad = (cache_seqlens < 0) | (cache_seqlens > max_len)
    if bad.any():
        b = int(bad.nonzero()[0, 0])
        raise TileLangError(f"tilelang.{op}: cache_seqlens[{b}] = {int(cache_seqlens[b])} is "
                            f"outside [0, {max_len}] (max_pages * page_size)")
    used = torch.arange(block_table.shape[1]) < ((cache_seqlens + page_size - 1)
                                                 // page_size)[:, None]
    bad = used & ((block_table < 0) | (block_table >= num_pages))
    if bad.any():
        b, i = (int(x) for x in bad.nonzero()[0])
        raise TileLangError(f"tilelang.{op}: block_table[{b}, {i}] = {int(block_table[b, i])} "
                            f"is not a page of the cache [0, {num_pages})")


def _check_pages_on_gpu(cache_seqlens, block_table, num_pages, page_size, target):
    """The check of `_check_pages` as device assertions (a kernel of its own:
    in the attention kernel they would serialize its wgmma); not read back,
    a bad entry fails the stream."""
    B, max_pages = block_table.shape
    if B == 0 or max_pages == 0:
        return
    with _device(cache_seqlens):
        _compiled(("check_pages", B, max_pages, num_pages, page_size, target))(
            cache_seqlens.contiguous(), block_table.contiguous())


def _flash_decode_key(q, k_cache, v_cache, cache_seqlens, block_table, scale=None):
    op = "flash_decode"
    target = _target(op, q=q, k_cache=k_cache, v_cache=v_cache, cache_seqlens=cache_seqlens,
                     block_table=block_table)
    dtype = _dtype(op, "q", q)
    _dtype(op, "k_cache", k_cache, q)
    _dtype(op, "v_cache", v_cache, q)
    if q.dim() != 3 or k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        raise TileLangError(f"tilelang.{op}: q {tuple(q.shape)}, k_cache "
                            f"{tuple(k_cache.shape)}, v_cache {tuple(v_cache.shape)}: q (batch, "
                            "heads, dim), the caches (num_pages, kv_heads, page_size, dim) alike")
    B, H, D = q.shape
    pages, KVH, page_size, Dk = k_cache.shape
    if Dk != D or not _divides(KVH, H):
        raise TileLangError(f"tilelang.{op}: k_cache/v_cache {tuple(k_cache.shape)} do not fit q "
                            f"{tuple(q.shape)} (same head dim; KV heads dividing the heads)")
    if KVH and H // KVH > 64:
        raise TileLangError(f"tilelang.{op}: {H // KVH} query heads per KV head; at most 64 "
                            "(the rows of the kernel's score gemm)")
    if D not in _DECODE_HEAD_DIMS:
        raise TileLangError(f"tilelang.{op}: head dim {D} is not supported (32, 64 or 128)")
    _index(op, "cache_seqlens", cache_seqlens, "(batch,)", (B,))
    max_pages = _block_table(op, block_table, B)
    if max_pages > 1 and page_size % 16:
        raise TileLangError(f"tilelang.{op}: page_size {page_size} is not supported (a multiple "
                            "of 16, or one page per sequence)")
    if target == "cpu":
        _check_pages(op, cache_seqlens, block_table, pages, page_size)
    else:
        _check_pages_on_gpu(cache_seqlens, block_table, pages, page_size, target)
    return ("flash_decode", B, H, KVH, D, pages, page_size, max_pages, _scale(op, scale, D), dtype,
            target)


@torch.library.custom_op("tilelang::flash_decode", mutates_args=())
def flash_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                 cache_seqlens: torch.Tensor, block_table: torch.Tensor,
                 scale: Optional[float] = None) -> torch.Tensor:
    """Decoding attention over a paged KV cache (kernels/attention/
    flash_decode.py, split-KV then combine): one query token per sequence,
    O[b, h] = softmax(q[b, h] K_b^T scale) V_b over the first
    cache_seqlens[b] tokens of sequence b, K/V heads dividing the query
    heads (GQA: query head h reads KV head h // (heads / kv_heads)).

    q (batch, heads, dim); k_cache, v_cache (num_pages, kv_heads,
    page_size, dim); cache_seqlens int32 (batch,); block_table int32
    (batch, max_pages), logical page i of sequence b is physical page
    block_table[b, i]; scale (None: 1/sqrt(dim)). Returns (batch, heads,
    dim) in q's dtype.
    float16/bfloat16, head dim 32, 64 or 128, page_size a multiple of 16
    (any with max_pages = 1), at most 64 query heads per KV head. Every
    length must be in [0, max_pages * page_size] and every page a
    sequence's tokens lie on in [0, num_pages): checked on the host for CPU
    tensors, by a kernel of device assertions before the attention kernel on
    a GPU (kernels/attention/index_checks.py; nothing is read back)."""
    key = _flash_decode_key(q, k_cache, v_cache, cache_seqlens, block_table, scale)
    if q.numel() == 0:  # no sequence or head: an empty result
        return _new(q)
    with _device(q):
        return _compiled(key)(q.contiguous(), k_cache.contiguous(), v_cache.contiguous(),
                              cache_seqlens.contiguous(), block_table.contiguous())


@_fake(flash_decode, "flash_decode")
def _(q, k_cache, v_cache, cache_seqlens, block_table, scale=None):
    return _new(q)


# --- mla_decode ------------------------------------------------------------------------


def _mla_config(target):
    """The split kernel's tiles: HOPPER (64-token tiles, 2 stages: 226 KB of
    shared memory) on sm_90 and the CPU, AMPERE (32-token tiles) on older
    GPUs."""
    from ..kernels.attention import mla_decode as mla
    if target == "cuda" and torch.cuda.get_device_capability()[0] < 9:
        return dict(mla.AMPERE)
    return dict(mla.HOPPER)


def _mla_decode_key(q, q_pe, kv, block_table, cache_seqlens, scale=None):
    from ..kernels.attention.mla_decode import DPE, DV
    op = "mla_decode"
    target = _target(op, q=q, q_pe=q_pe, kv=kv, block_table=block_table,
                     cache_seqlens=cache_seqlens)
    dtype = _dtype(op, "q", q)
    _dtype(op, "q_pe", q_pe, q)
    _dtype(op, "kv", kv, q)
    if q.dim() != 3 or q.shape[2] != DV:
        raise TileLangError(f"tilelang.{op}: q is {tuple(q.shape)}; (batch, heads, {DV}) "
                            "expected")
    B, H, _ = q.shape
    if tuple(q_pe.shape) != (B, H, DPE):
        raise TileLangError(f"tilelang.{op}: q_pe is {tuple(q_pe.shape)}; {(B, H, DPE)} "
                            "expected (batch, heads, rope dim)")
    if kv.dim() != 3 or kv.shape[2] != DV + DPE:
        raise TileLangError(f"tilelang.{op}: kv is {tuple(kv.shape)}; (num_pages, page_size, "
                            f"{DV + DPE}) expected")
    if H % 64:
        raise TileLangError(f"tilelang.{op}: {H} heads are not supported (a multiple of 64, "
                            "the kernel's block of heads)")
    pages, page_size, _ = kv.shape
    if page_size % 64:
        raise TileLangError(f"tilelang.{op}: page_size {page_size} is not supported (a "
                            "multiple of 64)")
    max_pages = _block_table(op, block_table, B)
    _index(op, "cache_seqlens", cache_seqlens, "(batch,)", (B,))
    if target == "cpu":
        _check_pages(op, cache_seqlens, block_table, pages, page_size)
    else:
        _check_pages_on_gpu(cache_seqlens, block_table, pages, page_size, target)
    return ("mla_decode", B, H, pages, page_size, max_pages, _scale(op, scale, DV + DPE), dtype,
            target)


@torch.library.custom_op("tilelang::mla_decode", mutates_args=())
def mla_decode(q: torch.Tensor, q_pe: torch.Tensor, kv: torch.Tensor,
               block_table: torch.Tensor, cache_seqlens: torch.Tensor,
               scale: Optional[float] = None) -> torch.Tensor:
    """DeepSeek MLA decoding over a paged latent cache (kernels/attention/
    mla_decode.py; its argument order): every query head attends to the one
    latent KV head. The score of head h and token t is q[b, h] . c_kv[t] +
    q_pe[b, h] . k_pe[t], scaled by `scale` (None: 1/sqrt(576); DeepSeek
    passes its softmax_scale); O is the softmax-weighted
    sum of c_kv.

    q (batch, heads, 512) (q_nope, already absorbed into the latent
    space); q_pe (batch, heads, 64); kv (num_pages, page_size, 576): per
    token c_kv (512, also the value) then k_pe (64); block_table int32
    (batch, max_pages); cache_seqlens int32 (batch,). Returns (batch,
    heads, 512) in q's dtype. float16/bfloat16, heads a multiple of 64,
    page_size a multiple of 64. The lengths and pages are checked as
    flash_decode's are."""
    key = _mla_decode_key(q, q_pe, kv, block_table, cache_seqlens, scale)
    if q.numel() == 0:  # no sequence or head: an empty result
        return _new(q)
    with _device(q):
        return _compiled(key)(q.contiguous(), q_pe.contiguous(), kv.contiguous(),
                              block_table.contiguous(), cache_seqlens.contiguous())


@_fake(mla_decode, "mla_decode")
def _(q, q_pe, kv, block_table, cache_seqlens, scale=None):
    return _new(q)


# --- w4a16_linear ------------------------------------------------------------------------
#
# One packing for every M: the dequant kernels' base int4 format
# (`kernels.dequant.quantize`: w_packed (N, K/2) uint8, byte b of a row
# holding k = b in its low nibble and k = b + K/2 in its high one, each as
# q + 8; scales (N, K/group) in the activations' dtype). The configs the
# operator runs (and tunes over) are those of `dequant.configs_for(M)` that
# read it as it is: the chunked GEMV (M = 1; it reads a free int32 view of
# the same bytes), the register-A decode GEMM (`tn`) and the shared-memory
# GEMM. The word- and pair-packed kernels (the fastest float16 decode ones
# on the H200) read a repacking that depends on their tiles; they are left
# out so that one tensor serves every M without repacking per call.


def _w4a16_configs(M):
    from ..kernels import dequant as dq
    return [c for c in dq.configs_for(M)
            if not c.get("pairs") and "word" not in c and not c.get("elementwise")]


def _w4a16_tuner(M, target, **settings):
    """The tuner over `_w4a16_configs(M)`, as `dequant.program(M, N, K, 4,
    group, dtype, config=...)` takes them (`tune_w4a16_linear` runs it, the
    operator reads its cached winner)."""
    import tilelang_mlir as tl
    from ..kernels import dequant as dq
    return tl.autotune(configs=[dict(config=c) for c in _w4a16_configs(M)], out_idx=[3],
                       target=target, **settings)(dq.program)


def _w4a16_config(M, N, K, group, dtype, target):
    """The cached winner of `tune_w4a16_linear` for this problem, else the
    first of the regime's configs (as `dequant.default_config` picks)."""
    from ..autotuner import cached_config
    tuned = cached_config(_w4a16_tuner(M, target), M, N, K, 4, group, dtype)
    return tuned["config"] if tuned is not None else _w4a16_configs(M)[0]


def tune_w4a16_linear(M: int, N: int, K: int, group: int = 128, dtype=torch.float16,
                      target: str = "auto", warmup: int = 10, rep: int = 50):
    """Tunes the w4a16_linear kernel of one problem (M rows of x, an (N, K)
    weight) over its configs, checking each against the float64 reference,
    and caches the winner on disk (`tl.autotune`), where `w4a16_linear`
    finds it the first time it compiles that shape. Returns the
    AutotuneResult. Run it ahead of time: the operator itself never tunes."""
    from ..kernels import dequant as dq

    def reference(A, Wq, S):
        Wq = Wq.view(torch.uint8) if Wq.dtype == torch.int32 else Wq  # (the GEMV's view)
        return dq.reference(A, Wq, S, 4, group).to(A.device)

    def check(out, ref):
        err = ((out.double() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise AssertionError(f"relative error {err:.2e}")
        return err

    name = _DTYPES.get(dtype, dtype)
    tuner = _w4a16_tuner(M, target, warmup=warmup, rep=rep, ref_prog=reference,
                         manual_check_prog=check)
    return tuner(M, N, K, 4, group, name).autotune_result


def pack_w4a16(weight: torch.Tensor, group: int = 128,
               dtype: torch.dtype = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(w_packed, scales) of a float (N, K) weight (nn.Linear's layout) for
    `w4a16_linear`: symmetric int4 with one scale per `group` consecutive
    elements of a row (`kernels.dequant.quantize`; the format is described
    above `_w4a16_configs` and in kernels/dequant/__init__.py). w_packed is
    (N, K/2) uint8, scales (N, K/group) in `dtype` (the activations'; by
    default the weight's, then float16 or bfloat16). One packing serves
    every M. K must be a multiple of 2 * group, group a multiple of 32."""
    from ..kernels import dequant as dq
    if dtype is None:
        dtype = weight.dtype
    if dtype not in _DTYPES:
        raise TileLangError(f"tilelang.pack_w4a16: the scales' dtype {dtype} is not float16 or "
                            "bfloat16 (give dtype=, the activations' dtype)")
    if weight.dim() != 2:
        raise TileLangError(f"tilelang.pack_w4a16: weight has shape {tuple(weight.shape)}; "
                            "(N, K) expected")
    _check_group("pack_w4a16", weight.shape[1], group)
    return dq.quantize(weight.to(dtype), 4, group)


def _check_group(op, K, group):
    if group < 32 or group % 32:
        raise TileLangError(f"tilelang.{op}: group size {group} is not supported (a multiple "
                            "of 32)")
    if K % (2 * group):
        raise TileLangError(f"tilelang.{op}: K = {K} is not a multiple of 2 x the group size "
                            f"{group} (each half of a row is whole groups)")


def _w4a16_key(x, w_packed, scales):
    op = "w4a16_linear"
    target = _target(op, x=x, w_packed=w_packed, scales=scales)
    dtype = _dtype(op, "x", x)
    _dtype(op, "scales", scales, x)
    if x.dim() < 1:
        raise TileLangError(f"tilelang.{op}: x is a scalar; (..., K) expected")
    K = x.shape[-1]
    if w_packed.dtype != torch.uint8 or w_packed.dim() != 2 or 2 * w_packed.shape[1] != K:
        raise TileLangError(f"tilelang.{op}: w_packed must be uint8 (N, K/2) = (N, {K // 2}) "
                            f"(pack_w4a16), got {w_packed.dtype} {tuple(w_packed.shape)}")
    N = w_packed.shape[0]
    if scales.dim() != 2 or scales.shape[0] != N or not scales.shape[1] or K % scales.shape[1]:
        raise TileLangError(f"tilelang.{op}: scales has shape {tuple(scales.shape)}; (N, K / "
                            f"group) = ({N}, {K} / group) expected")
    group = K // scales.shape[1]
    _check_group(op, K, group)
    return ("w4a16", x.numel() // K, N, K, group, dtype, target)


@torch.library.custom_op("tilelang::w4a16_linear", mutates_args=())
def w4a16_linear(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """y = x @ dequant(W)^T with W an int4 (N, K) weight packed by
    `pack_w4a16` (w_packed (N, K/2) uint8, scales (N, K/group)): x (..., K)
    float16/bfloat16, the leading dims flattened to M rows; y (..., N) in
    x's dtype. M = 1 runs the GEMV kernel, larger M the dequant GEMM
    (kernels/dequant, configs.py's regimes); a config tuned by
    `tune_w4a16_linear` for the exact problem is used when the autotuner's
    cache has one."""
    key = _w4a16_key(x, w_packed, scales)
    M, N, K = key[1:4]
    if M * N == 0:  # as torch: an empty result
        return _new(x, x.shape[:-1] + (N,))
    from ..kernels import dequant as dq
    with _device(x):
        config, kernel = _compiled(key)
        y = kernel(*dq.inputs_for(config, x.reshape(M, K).contiguous(), w_packed.contiguous(),
                                  scales.contiguous()))
    return y.reshape(x.shape[:-1] + (N,))


@_fake(w4a16_linear, "w4a16_linear")
def _(x, w_packed, scales):
    return _new(x, x.shape[:-1] + (w_packed.shape[0],))
