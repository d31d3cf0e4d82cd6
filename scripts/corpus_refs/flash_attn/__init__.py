"""A stand-in for the `flash_attn` package, for scripts/tilelang_corpus.py
only: some of TileLang's examples check their kernels against flash_attn,
which has no wheel on PyPI. These are plain torch references (float32 math)
of the two functions they call, with flash_attn's argument conventions. The
corpus puts this folder on the path only where the real package is missing,
and docs/compat.md marks the examples that ran against it."""

import math

import torch

__version__ = "reference-stand-in"
STAND_IN = True


def _attend(q, k, v, scale, causal):
    """q (sq, h, d), k/v (sk, hk, d): softmax(q k^T * scale) v per head;
    GQA heads share k/v; causal aligned bottom-right, as flash_attn >= 2.1."""
    sq, h, _ = q.shape
    sk, hk, _ = k.shape
    if h % hk:
        raise ValueError(f"{h} query heads are not a multiple of {hk} key heads")
    k = k.repeat_interleave(h // hk, dim=1)
    v = v.repeat_interleave(h // hk, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.float(), k.float()) * scale
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + (sk - sq), float("-inf"))
    p = torch.softmax(s, dim=-1)
    p = torch.nan_to_num(p)  # rows with no key
    return torch.einsum("hqk,khd->qhd", p, v.float())


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None,
                           max_seqlen_k=None, dropout_p=0.0, softmax_scale=None, causal=False,
                           **unused):
    if dropout_p:
        raise NotImplementedError("the flash_attn stand-in has no dropout")
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    out = torch.empty(q.shape[0], q.shape[1], v.shape[-1], dtype=q.dtype, device=q.device)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        out[cq[b]:cq[b + 1]] = _attend(q[cq[b]:cq[b + 1]], k[ck[b]:ck[b + 1]],
                                       v[ck[b]:ck[b + 1]], scale, causal).to(q.dtype)
    return out


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, cache_seqlens=None,
                            block_table=None, softmax_scale=None, causal=False, **unused):
    if k is not None or v is not None:
        raise NotImplementedError("the flash_attn stand-in does not append to the cache")
    batch, sq = q.shape[0], q.shape[1]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    out = torch.empty(batch, sq, q.shape[2], v_cache.shape[-1], dtype=q.dtype, device=q.device)
    for b in range(batch):
        if block_table is not None:  # paged: (blocks, page, hk, d)
            kb = k_cache[block_table[b]].flatten(0, 1)
            vb = v_cache[block_table[b]].flatten(0, 1)
        else:
            kb, vb = k_cache[b], v_cache[b]
        n = int(cache_seqlens[b]) if cache_seqlens is not None else kb.shape[0]
        out[b] = _attend(q[b], kb[:n], vb[:n], scale, causal).to(q.dtype)
    return out
