"""`transformers` models on our kernels, through transformers' own extension
points (the optional extra `tilelang-mlir[models]`).

    from tilelang_mlir.models import PagedCache, use_tilelang
    model = use_tilelang(LlamaForCausalLM(config))
    cache = PagedCache(model.config, batch_size=8, max_cache_len=4096)
    out = model.generate(ids, past_key_values=cache, max_new_tokens=128)

`CUDAGraphDecoder(model, cache)` runs the decode steps as replays of one
CUDA graph (below).

`use_tilelang` registers our attention under transformers' attention
registry as "tilelang" and selects it, with a mask function of the same
name in transformers' mask registry. It also swaps the RMSNorm modules for
ones on `ops.rms_norm` and the gated MLPs for ones on `ops.silu_mul`,
keeping the model's own weights. The model then runs, is differentiated
and `torch.compile`s through our operators.

The attention has two paths, chosen by what the cache handed it:

- prefill (as many keys as queries: no cache, or an empty one) runs
  `ops.flash_attn` (causal, GQA), differentiable;
- a decode step (one query row per sequence against a `PagedCache`) runs
  `ops.flash_decode` on the cache's pages, reading them through its block
  table and per-sequence lengths.

`PagedCache` is a transformers `Cache` whose layers keep K and V in pages
(num_pages, kv_heads, page_size, dim), handed out to the sequences as they
grow (one block table and free list for all layers). Its `update` writes
the new tokens into their pages; for a prefill it returns the new K/V (for
`flash_attn`), for a decode step the page pools (for `flash_decode`).
Everything else is refused with an error that says what: a padding mask
that masks something (all-ones masks, as `generate` passes, are accepted),
other mask functions (sliding windows, packed sequences), several query
rows against a non-empty cache (chunked prefill, speculative decoding),
decoding against another cache (DynamicCache would recompile the decode
kernel at every length), beam search's cache reordering, dropout.
"""

from __future__ import annotations

import math
import weakref

import torch

from . import ops
from ..base.errors import TileLangError

ATTENTION = "tilelang"

try:  # the optional extra
    from transformers.cache_utils import Cache, CacheLayerMixin
except ImportError:  # PagedCache needs transformers; the module still imports without it
    Cache = CacheLayerMixin = object


# --- the attention ---------------------------------------------------------------


def _is_compiling() -> bool:
    return torch.compiler.is_compiling()


def _masks_nothing(mask: torch.Tensor, q_len: int, kv_len: int) -> bool:
    """Whether a 4D mask (bool: True attends; float: added to the scores)
    allows exactly the causal pattern of q_len queries ending at the last of
    kv_len keys (reads the mask back: eager only)."""
    if _is_compiling():
        raise TileLangError("tilelang attention: an explicit 4D attention mask cannot be checked "
                            "inside torch.compile; pass none (the causal mask is implied)")
    if mask.dim() != 4 or tuple(mask.shape[-2:]) != (q_len, kv_len):
        return False
    rows = torch.arange(q_len, device=mask.device).view(-1, 1) + (kv_len - q_len)
    causal = torch.arange(kv_len, device=mask.device).view(1, -1) <= rows
    if mask.dtype == torch.bool:
        return bool((mask == causal).all())
    blocked = (mask == float("-inf")) | (mask <= torch.finfo(mask.dtype).min)
    return bool(((mask == 0) == causal).all() and (blocked == ~causal).all())


def _cells(fn) -> dict:
    """A function's closure variables by name."""
    return dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))


def _packed_sequence_ids(mask_function, causal_mask_function):
    """The sequence ids of transformers' and_masks(causal_mask_function,
    packed_sequence_mask_function(ids)), else None. transformers builds that
    mask for a forward without a cache under torch.compile, where it cannot
    look at the position ids to see that they are one sequence per row."""
    if getattr(mask_function, "__qualname__", "") != "and_masks.<locals>.and_mask":
        return None
    parts = _cells(mask_function).get("mask_functions", ())
    if len(parts) != 2 or parts[0] is not causal_mask_function or getattr(
            parts[1], "__qualname__", "") != "packed_sequence_mask_function.<locals>.inner_mask":
        return None
    return _cells(parts[1]).get("packed_sequence_mask")


@torch.compiler.disable
def _check_packed_is_causal(mask_function, causal_mask_function):
    """Accepts transformers' and_masks(causal, packed sequences) when the
    sequence ids say one sequence per row (it builds that mask for a forward
    without a cache under torch.compile, where it cannot look at the
    position ids); refuses every other mask. Outside the compiled graph
    (torch.compile cannot look into the closures): one graph break, for a
    forward without a cache under torch.compile only."""
    packed = _packed_sequence_ids(mask_function, causal_mask_function)
    if packed is None:
        raise TileLangError("tilelang attention: only the causal mask is supported (no sliding "
                            "window, chunked or packed-sequence masks)")
    if not bool((packed[:, -1] == 0).all()):  # every position in the first sequence
        raise TileLangError("tilelang attention: the position ids pack several sequences into "
                            "a row, which is not supported (flash_attn_varlen takes packed "
                            "sequences)")


def tilelang_mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None,
                  attention_mask=None, **kwargs):
    """transformers' mask interface for "tilelang": None (our kernels apply
    the causal mask themselves) when the model's mask is the causal one and
    the 2D padding mask, if any, masks nothing; an error otherwise. (Without
    an entry in the mask registry, transformers would drop a padding mask
    silently.)"""
    from transformers.masking_utils import causal_mask_function

    if mask_function is not causal_mask_function:
        _check_packed_is_causal(mask_function, causal_mask_function)
    if attention_mask is None:
        return None
    if _is_compiling():
        raise TileLangError("tilelang attention: a padding mask cannot be checked inside "
                            "torch.compile; pass attention_mask=None (batches of equal lengths)")
    if attention_mask.dim() == 2:
        attention_mask = attention_mask[:, kv_offset:kv_offset + kv_length]
    if not bool(attention_mask.bool().all()):
        raise TileLangError("tilelang attention: a padding mask that masks tokens is not "
                            "supported; batches of equal lengths run with the causal mask")
    return None


def tilelang_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                       is_causal=None, **kwargs):
    """transformers' attention interface: (B, H, Sq, D) query, (B, KVH, Sk,
    D) key and value -> ((B, Sq, H, D) output, no weights). A decode step
    gets the PagedCache's page pools as key and value instead."""
    if dropout:
        raise TileLangError("tilelang attention: dropout is not supported (use model.eval() or "
                            "attention_dropout=0)")
    q_len, k_len = query.shape[2], key.shape[2]
    if q_len != k_len:
        layer = PagedLayer.owning(key)
        if layer is None:
            raise TileLangError(f"tilelang attention: {q_len} query rows against {k_len} keys "
                                "(decoding with a KV cache) runs only with "
                                "tilelang_mlir.models.PagedCache (past_key_values=PagedCache(...))")
        return _decode(layer, query, attention_mask, scaling)
    if attention_mask is not None and not _masks_nothing(attention_mask, q_len, k_len):
        raise TileLangError("tilelang attention: an attention mask other than the causal one "
                            "(padding) is not supported; batches of equal lengths run with the "
                            "causal mask")
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = ops.flash_attn(query, key, value, causal=bool(causal) and q_len > 1, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


def _decode(layer, query, attention_mask, scaling):
    """One query row per sequence against the layer's pages: ops.flash_decode."""
    q_len = query.shape[2]
    if q_len != 1:  # (PagedLayer.update refuses this first)
        raise TileLangError(f"tilelang attention: {q_len} query rows against a cache of "
                            f"{layer.length} tokens; a decode step has one")
    if attention_mask is not None and not _masks_nothing(attention_mask, 1, layer.length):
        raise TileLangError("tilelang attention: a decode step's attention mask masks cached "
                            "tokens (padding), which is not supported")
    cache = layer.cache
    out = ops.flash_decode(query[:, :, 0].contiguous(), layer.keys, layer.values,
                           layer.cache_seqlens, cache.block_table, scaling)
    return out.unsqueeze(1), None  # (B, 1, H, D)


# --- the paged KV cache ------------------------------------------------------------


class PagedLayer(CacheLayerMixin):
    """One layer's K and V pages: `keys` and `values` (num_pages, kv_heads,
    page_size, dim), allocated at the first update (dtype, device and heads
    from the first K/V), `length` tokens per sequence and `cache_seqlens`
    (int32, on the device) for the decode kernel. The block table is the
    cache's, shared by all layers."""

    is_compileable = False
    is_croppable = False
    is_sliding = False
    # The page pools handed to the attention, by id -> their layer: the
    # attention recognizes a decode step's key by identity.
    _pools = weakref.WeakValueDictionary()

    def __init__(self, cache: "PagedCache"):
        super().__init__()
        self.cache = cache
        self.batch_size = cache.batch
        self.length = 0
        self.cache_seqlens = None

    @classmethod
    def owning(cls, key: torch.Tensor):
        """The layer whose key pages `key` is, or None."""
        layer = cls._pools.get(id(key))
        return layer if layer is not None and layer.keys is key else None

    def lazy_initialization(self, key_states, value_states):
        B, kv_heads, _, dim = key_states.shape
        if B != self.cache.batch:
            raise TileLangError(f"PagedCache: a batch of {B} sequences in a cache made for "
                                f"{self.cache.batch}")
        self.allocate(kv_heads, dim, key_states.dtype, key_states.device)

    def allocate(self, kv_heads, dim, dtype, device):
        self.dtype, self.device = dtype, torch.device(device)
        shape = (self.cache.num_pages, kv_heads, self.cache.page_size, dim)
        self.keys = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.values = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.cache_seqlens = torch.zeros(self.batch_size, dtype=torch.int32, device=self.device)
        # The length on the device too: a decode step's positions are computed
        # from it there, so that a captured step (CUDAGraphDecoder) writes
        # each replay's tokens where they belong.
        self.cumulative_length = torch.zeros((), dtype=torch.int64, device=self.device)
        self.cache._place(self.device)
        PagedLayer._pools[id(self.keys)] = self
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        """Writes the new tokens (B, kv_heads, S, dim) into their pages.
        Returns them (a prefill: the attention runs flash_attn on them) or,
        after the first one, the page pools (a decode step: flash_decode)."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        S, start = key_states.shape[2], self.length
        if start and S != 1:
            raise TileLangError(f"PagedCache: {S} new tokens against a cache of {start} "
                                "(chunked prefill, speculative decoding) are not supported; a "
                                "prefill starts from an empty cache, a decode step adds one")
        cache = self.cache
        cache.reserve(start + S)
        # Positions, pages and lengths on the device only (no host values
        # baked into a captured step).
        pos = torch.arange(S, device=self.device) + self.cumulative_length
        pages = cache.block_table[:, pos // cache.page_size]  # (B, S) physical pages
        offsets = pos % cache.page_size                       # (S,)
        self.keys[pages, :, offsets] = key_states.transpose(1, 2)  # (B, S, kv_heads, dim)
        self.values[pages, :, offsets] = value_states.transpose(1, 2)
        self.cumulative_length.add_(S)
        self.cache_seqlens.copy_(self.cumulative_length.expand(self.batch_size))
        self.length = start + S
        if start == 0:
            return key_states, value_states
        return self.keys, self.values

    def get_mask_sizes(self, query_length: int):
        return self.length + query_length, 0

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return self.cache.max_pages * self.cache.page_size

    def gather(self, b: int):
        """Sequence b's cached K and V, (kv_heads, length, dim) each, read
        through the block table (for checking and debugging)."""
        n = math.ceil(self.length / self.cache.page_size)
        pages = self.cache.block_table[b, :n].long()

        def read(pool):
            return pool[pages].transpose(0, 1).reshape(pool.shape[1], -1, pool.shape[3])[
                :, :self.length]
        return read(self.keys), read(self.values)

    def reset(self):
        if self.is_initialized:
            self.keys.zero_()
            self.values.zero_()
            self.cache_seqlens.zero_()
            self.cumulative_length.zero_()
        self.length = 0

    def _refuse(self, what):
        raise TileLangError(f"PagedCache: {what} is not supported (pages are not shared or "
                            "copied between sequences)")

    def reorder_cache(self, beam_idx):
        self._refuse("reordering the cache (beam search)")

    def crop(self, tokens_to_remove):
        self._refuse("cropping the cache")

    def batch_repeat_interleave(self, repeats):
        self._refuse("repeating sequences (num_return_sequences, beam search)")

    def batch_select_indices(self, indices):
        self._refuse("selecting sequences")


class PagedCache(Cache):
    """A transformers `Cache` that keeps K/V in pages for the "tilelang"
    attention's decode kernel: `batch_size` sequences of up to
    `max_cache_len` tokens, pages of `page_size` tokens (a multiple of 16;
    the default 128 holds two of the decode kernel's 64-token KV tiles on
    a GPU), `num_pages`
    per layer (default: enough for every sequence at full length). Pages
    are handed out as the sequences grow, one page per sequence at a time
    from a free list shared by all layers; `block_table` (int32, batch x
    max_pages) maps a sequence's logical pages to physical ones."""

    def __init__(self, config, batch_size: int, max_cache_len: int, page_size: int = 128,
                 num_pages: int | None = None):
        if Cache is object:
            raise TileLangError("PagedCache needs transformers (pip install tilelang-mlir[models])")
        impl = getattr(config, "_attn_implementation", None)
        if impl != ATTENTION:
            raise TileLangError(f"PagedCache: the model's attention is {impl!r}; its pages are "
                                f"read only by {ATTENTION!r} (call use_tilelang(model) first)")
        if page_size < 16 or page_size % 16:
            raise TileLangError(f"PagedCache: page_size {page_size} must be a multiple of 16")
        self.batch, self.page_size = batch_size, page_size
        self.max_pages = math.ceil(max_cache_len / page_size)
        self.num_pages = num_pages if num_pages is not None else batch_size * self.max_pages
        self.block_table = torch.zeros(batch_size, self.max_pages, dtype=torch.int32)
        self._free = list(range(self.num_pages))
        self._pages = 0  # pages each sequence holds
        decoder = config.get_text_config(decoder=True)
        super().__init__(layers=[PagedLayer(self) for _ in range(decoder.num_hidden_layers)])

    def _place(self, device):
        if self.block_table.device != torch.device(device):
            self.block_table = self.block_table.to(device)

    def early_initialization(self, kv_heads: int, head_dim: int, dtype: torch.dtype, device):
        """Allocates every layer's pages now rather than at the first update
        (as StaticCache.early_initialization): with the pages of a prompt
        reserved too, a prefill under torch.compile traces no allocation
        and no host bookkeeping."""
        for layer in self.layers:
            if not layer.is_initialized:
                layer.allocate(kv_heads, head_dim, dtype, device)

    def reserve(self, tokens: int):
        """Gives every sequence pages for `tokens` tokens (new pages from the
        free list, one sequence after the other). The updates call it as the
        sequences grow; call it ahead where an update cannot (a captured
        decode step, a compiled prefill)."""
        need = math.ceil(tokens / self.page_size)
        if need > self.max_pages:
            raise TileLangError(f"PagedCache: {tokens} tokens exceed max_cache_len "
                                f"({self.max_pages} pages of {self.page_size})")
        if need <= self._pages:
            return
        count = (need - self._pages) * self.batch
        if count > len(self._free):
            raise TileLangError(f"PagedCache: out of pages ({len(self._free)} free, {count} "
                                "needed)")
        taken, self._free = self._free[:count], self._free[count:]
        new = torch.tensor(taken, dtype=torch.int32).view(need - self._pages, self.batch).t()
        self.block_table[:, self._pages:need] = new.to(self.block_table.device)
        self._pages = need

    def reset(self):
        super().reset()
        self.block_table.zero_()
        self._free = list(range(self.num_pages))
        self._pages = 0


# --- decode steps as CUDA-graph replays ---------------------------------------------


class CUDAGraphDecoder:
    """Decode steps of `model` over `cache` (a PagedCache) replayed from a
    CUDA graph, so that a step costs one graph launch instead of the host
    work of issuing every kernel of every layer:

        step = CUDAGraphDecoder(model, cache)
        logits = model(prompt_ids, past_key_values=cache).logits   # prefill, eager
        for _ in range(n):
            token = step(token)[:, -1].argmax(-1, keepdim=True)      # (batch, 1)

    `step(tokens)` takes the next token of each sequence, (batch, 1), and
    returns the logits (batch, 1, vocab) in a static tensor that the next
    step overwrites (clone it to keep it). The first call runs eagerly on a
    side stream (it compiles the kernels and warms torch's libraries up),
    the second captures the step into a CUDA graph, every call from then on
    replays it: the cache's tensors stay where they are (reset() zeroes
    them in place), the new token's position and page come from the
    cache's lengths on the device, and the host keeps its count of tokens
    after each replay. The pages a step will need are handed out on the
    host before it (PagedCache.reserve), outside the graph. One decoder
    serves one cache; a cache reset and filled by a new prefill is decoded
    by the same graph."""

    def __init__(self, model, cache: "PagedCache"):
        if not isinstance(cache, PagedCache):
            raise TileLangError("CUDAGraphDecoder: the cache must be a "
                                "tilelang_mlir.models.PagedCache")
        self.model, self.cache = model, cache
        self.graph = None
        self._warm = False

    def _run(self, tokens, position_ids):
        return self.model(tokens, position_ids=position_ids, past_key_values=self.cache,
                          use_cache=True).logits

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:
        cache = self.cache
        layers = list(cache.layers)
        length = layers[0].length if layers[0].is_initialized else 0
        if length == 0:
            raise TileLangError("CUDAGraphDecoder: the cache is empty; run the prefill first "
                                "(model(prompt_ids, past_key_values=cache))")
        if tokens.dim() != 2 or tokens.shape != (cache.batch, 1) or tokens.device.type != "cuda":
            raise TileLangError(f"CUDAGraphDecoder: tokens must be ({cache.batch}, 1) on a "
                                f"GPU, got {tuple(tokens.shape)} on {tokens.device}")
        cache.reserve(length + 1)
        if not self._warm:  # eager, on a side stream: compiles, allocates, warms up
            side = torch.cuda.Stream(tokens.device)
            side.wait_stream(torch.cuda.current_stream(tokens.device))
            with torch.cuda.stream(side):
                pos = torch.full((1, 1), length, dtype=torch.long, device=tokens.device)
                logits = self._run(tokens, pos)
            torch.cuda.current_stream(tokens.device).wait_stream(side)
            self._warm = True
            return logits
        if self.graph is None:
            self.tokens = tokens.clone()
            self.position = torch.full((1, 1), length, dtype=torch.long, device=tokens.device)
            lengths = [layer.length for layer in layers]
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.logits = self._run(self.tokens, self.position)
            for layer, n in zip(layers, lengths):  # (the capture ran no kernel)
                layer.length = n
            self.graph = graph
        else:
            self.tokens.copy_(tokens)
            self.position.fill_(length)
        self.graph.replay()
        for layer in layers:
            layer.length += 1
        return self.logits


# --- routing a model ---------------------------------------------------------------


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
    from transformers.masking_utils import AttentionMaskInterface

    if not _registered:
        AttentionInterface.register(ATTENTION, tilelang_attention)
        AttentionMaskInterface.register(ATTENTION, tilelang_mask)
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
