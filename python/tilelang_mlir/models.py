"""`transformers` models on our kernels, through transformers' own extension
points (the optional extra `tilelang-mlir[models]`).

    from tilelang_mlir.models import use_tilelang
    model = use_tilelang(LlamaForCausalLM(config))

`use_tilelang` registers our attention under transformers' attention
registry as "tilelang" (tilelang_mlir.ops.flash_attn: causal prefill,
GQA) and selects it. It also swaps the RMSNorm modules for ones on
`ops.rms_norm` and the gated MLPs for ones on `ops.silu_mul`, keeping the
model's own weights. The model then runs, is differentiated and
`torch.compile`s through our operators. Decoding with a KV cache (one
query row against a longer key sequence) needs the decode operators, which
are not routed yet: the attention says so instead of computing something
else.
"""

from __future__ import annotations

import torch

from . import ops
from .base.errors import TileLangError

ATTENTION = "tilelang"


def tilelang_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                       is_causal=None, **kwargs):
    """transformers' attention interface: (B, H, Sq, D) query, (B, KVH, Sk,
    D) key and value -> ((B, Sq, H, D) output, no weights)."""
    if dropout:
        raise TileLangError("tilelang attention: dropout is not supported (use model.eval() or "
                            "attention_dropout=0)")
    if attention_mask is not None:
        raise TileLangError("tilelang attention: an explicit attention mask (padding) is not "
                            "supported; batches of equal lengths run with the causal mask")
    if query.shape[2] != key.shape[2]:
        raise TileLangError(f"tilelang attention: {query.shape[2]} query rows against "
                            f"{key.shape[2]} keys (decoding with a KV cache) is not routed to "
                            "our kernels yet")
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = ops.flash_attn(query, key, value, causal=bool(causal) and query.shape[2] > 1,
                         scale=scaling)
    return out.transpose(1, 2).contiguous(), None


class RMSNorm(torch.nn.Module):
    """An RMSNorm module on ops.rms_norm, with the replaced module's weight."""

    def __init__(self, weight: torch.nn.Parameter, eps: float):
        super().__init__()
        self.weight, self.eps = weight, eps

    def forward(self, x):
        return ops.rms_norm(x, self.weight, self.eps)


class GatedMLP(torch.nn.Module):
    """down(silu(gate(x)) * up(x)) with the fused gate on ops.silu_mul."""

    def __init__(self, mlp):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = mlp.gate_proj, mlp.up_proj, mlp.down_proj

    def forward(self, x):
        return self.down_proj(ops.silu_mul(self.gate_proj(x), self.up_proj(x)))


_registered = False


def use_tilelang(model):
    """Routes `model`'s attention, RMSNorms and gated MLPs to our kernels
    (in place); returns the model."""
    global _registered
    from transformers import AttentionInterface

    if not _registered:
        AttentionInterface.register(ATTENTION, tilelang_attention)
        _registered = True
    model.set_attn_implementation(ATTENTION)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            kind = type(child).__name__
            if kind.endswith("RMSNorm"):
                eps = getattr(child, "variance_epsilon", getattr(child, "eps", 1e-6))
                setattr(parent, name, RMSNorm(child.weight, eps))
            elif kind.endswith("MLP") and all(hasattr(child, p) for p in
                                              ("gate_proj", "up_proj", "down_proj")):
                act = getattr(getattr(child, "config", None), "hidden_act", "silu")
                if act != "silu":
                    raise TileLangError(f"use_tilelang: {kind} uses {act!r}; only SiLU-gated "
                                        "MLPs are routed")
                setattr(parent, name, GatedMLP(child))
    return model
