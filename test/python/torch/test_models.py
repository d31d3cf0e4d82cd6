"""A small `transformers` Llama (2 layers, GQA, random weights, no
download) on our kernels through tilelang_mlir.models.use_tilelang, on the
CPU target: its logits match the eager model (SDPA, PyTorch RMSNorm and
MLP), a training step's gradients match eager's, the routed model
compiles with torch.compile, and greedy decoding with a PagedCache
(prefill on flash_attn, decode steps on flash_decode over the pages)
follows eager decoding with transformers' DynamicCache step by step, with
the same K/V in the pages; what is not routed says so. On a GPU (marked
`gpu`): the same in float16 there, the decode steps replayed from a CUDA
graph (CUDAGraphDecoder)."""

import copy

import pytest
import torch
import transformers  # requirements/test.txt (the extra tilelang-mlir[models])

import tilelang_mlir.ops as ops
from tilelang_mlir.base.errors import TileLangError
from tilelang_mlir.models import CUDAGraphDecoder, PagedCache, use_tilelang


SHARPEN = 8.0


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=256)
    cfg._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(cfg)
    # Random weights give near-uniform attention (every key about 1/S), under
    # which a wrong query or key position hardly moves the logits: sharpened
    # queries and keys put about 0.6 of a row's weight on one key.
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(SHARPEN)
            layer.self_attn.k_proj.weight.mul_(SHARPEN)
    return model.to(torch.float16).eval()


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


def test_llama_logits_match_eager():
    eager = tiny_llama()
    ours = use_tilelang(copy.deepcopy(eager))
    assert type(ours.model.norm).__name__ == "RMSNorm"
    assert type(ours.model.layers[0].mlp).__name__ == "GatedMLP"
    ids = torch.randint(0, 256, (2, 40))
    with torch.no_grad():
        ref, out = eager(ids).logits, ours(ids).logits
    assert torch.isfinite(out).all() and rel(out, ref) < 1e-2


def test_llama_training_step_gradients_match_eager():
    eager = tiny_llama(1)
    ours = use_tilelang(copy.deepcopy(eager))
    ids = torch.randint(0, 256, (1, 48))
    grads = []
    for model in (eager, ours):
        model.zero_grad()
        loss = model(ids, labels=ids).loss
        loss.backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()
                      if n.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight",
                                     "input_layernorm.weight", "up_proj.weight"))})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) == 10
    for name in grads[0]:
        assert rel(grads[1][name], grads[0][name]) < 3e-2, name


def test_llama_compiles():
    eager = tiny_llama(2)
    ours = use_tilelang(copy.deepcopy(eager))
    ids = torch.randint(0, 256, (1, 32))
    compiled = torch.compile(ours, fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        assert rel(compiled(ids).logits, eager(ids).logits) < 1e-2


def test_llama_training_step_compiles():
    """A training step (no cache) under torch.compile: transformers then
    combines the causal mask with a packed-sequence mask it cannot check
    while tracing; the attention accepts it when the positions are one
    sequence per row (the gradients are eager's) and refuses packed
    positions, compiled or not."""
    eager = tiny_llama(8)
    ours = use_tilelang(copy.deepcopy(eager))
    ids = torch.randint(0, 256, (2, 48))
    compiled = torch.compile(ours, backend="aot_eager")
    compiled(ids, labels=ids, use_cache=False).loss.backward()
    eager(ids, labels=ids, use_cache=False).loss.backward()
    theirs = dict(eager.named_parameters())
    for name, p in ours.named_parameters():
        assert rel(p.grad, theirs[name].grad) < 3e-2, name
    packed = torch.cat([torch.arange(24), torch.arange(24)]).expand(2, -1)
    for model in (ours, compiled):
        with pytest.raises(TileLangError, match="pack several sequences"):
            model(ids, position_ids=packed, use_cache=False)


# --- decoding with a paged KV cache --------------------------------------------------

# Two sequences of a 12-token prompt and 8 generated tokens in pages of 16:
# each sequence crosses into a second page, handed out after the other
# sequence's first (the block table is not the identity).
BATCH, PROMPT, STEPS, PAGE = 2, 12, 8, 16


@pytest.fixture
def decode_calls(monkeypatch):
    """Counts the calls of ops.flash_decode (the decode steps must run it)."""
    calls = []
    real = ops.flash_decode

    def counted(*args):
        calls.append(args[0].shape)
        return real(*args)

    monkeypatch.setattr(ops, "flash_decode", counted)
    return calls


def greedy(model, ids, cache, steps, forced=None):
    """A greedy loop through model.forward with `cache`: the logits of each
    step (the prefill's last row, then each decode step's) and the tokens
    chosen; with `forced`, those tokens are fed instead (teacher forcing)."""
    logits, tokens = [], []
    with torch.no_grad():
        out = model(ids, past_key_values=cache, use_cache=True)
        for i in range(steps):
            logits.append(out.logits[:, -1].float())
            tokens.append(logits[-1].argmax(-1))
            feed = tokens[-1] if forced is None else forced[i]
            if i + 1 < steps:
                out = model(feed.view(-1, 1), past_key_values=cache, use_cache=True)
    return logits, torch.stack(tokens, 1)


def test_llama_paged_decoding_matches_eager(decode_calls):
    eager = tiny_llama(4)
    ours = use_tilelang(copy.deepcopy(eager))
    ids = torch.randint(0, 256, (BATCH, PROMPT))
    ref_cache = transformers.DynamicCache(config=eager.config)
    ref_logits, ref_tokens = greedy(eager, ids, ref_cache, STEPS)
    cache = PagedCache(ours.config, BATCH, PROMPT + STEPS, page_size=PAGE)
    logits, tokens = greedy(ours, ids, cache, STEPS, forced=ref_tokens.t())
    assert decode_calls == [(BATCH, 4, 32)] * (2 * (STEPS - 1))  # every decode step, each layer
    for step, (out, ref) in enumerate(zip(logits, ref_logits)):
        assert torch.isfinite(out).all() and rel(out, ref) < 1e-2, step
        # The same greedy choice wherever eager's is not a near-tie.
        top2 = ref.topk(2, dim=-1).values
        clear = top2[:, 0] - top2[:, 1] > 1e-2
        assert (tokens[clear, step] == ref_tokens[clear, step]).all(), step
    # The pages hold what eager's DynamicCache holds, read through the
    # block table; every sequence owns its own pages.
    length = PROMPT + STEPS - 1
    for layer, ref_layer in zip(cache.layers, ref_cache.layers):
        assert layer.length == length and (layer.cache_seqlens == length).all()
        assert layer.keys.shape == (BATCH * 2, 2, PAGE, 32)
        for b in range(BATCH):
            k, v = layer.gather(b)
            assert rel(k, ref_layer.keys[b]) < 1e-2 and rel(v, ref_layer.values[b]) < 1e-2
    table = cache.block_table
    assert table.dtype == torch.int32 and table.shape == (BATCH, 2)
    assert sorted(table.flatten().tolist()) == list(range(BATCH * 2))
    assert table[:, 0].tolist() == list(range(BATCH))  # first pages first


def test_attention_is_far_from_uniform_and_a_wrong_decode_position_fails(decode_calls):
    """The tiny model's attention picks keys (so the decoding test above can
    fail): its rows put most weight on few keys, and decode steps fed the
    wrong positions (one off) give logits the comparison rejects."""
    eager = tiny_llama(4)
    ids = torch.randint(0, 256, (BATCH, PROMPT))
    probe = copy.deepcopy(eager).float()
    probe.config._attn_implementation = "eager"
    with torch.no_grad():
        attn = probe(ids, output_attentions=True).attentions
    peak = torch.stack([a[:, :, -1].max(-1).values.mean() for a in attn]).mean()
    assert peak > 0.3, f"attention is near uniform (mean row peak {peak:.3f}, 1/S = {1 / PROMPT:.3f})"
    ours = use_tilelang(copy.deepcopy(eager))
    ref_logits, ref_tokens = greedy(eager, ids, transformers.DynamicCache(config=eager.config),
                                    STEPS)
    cache = PagedCache(ours.config, BATCH, PROMPT + STEPS, page_size=PAGE)
    worst = 0.0
    with torch.no_grad():
        out = ours(ids, past_key_values=cache, use_cache=True)
        for i in range(1, STEPS):
            wrong = torch.full((BATCH, 1), PROMPT + i - 1 + 1)  # one position ahead
            out = ours(ref_tokens[:, i - 1].view(-1, 1), past_key_values=cache, use_cache=True,
                       position_ids=wrong)
            worst = max(worst, rel(out.logits[:, -1].float(), ref_logits[i]))
    assert decode_calls, "the decode steps did not run flash_decode"
    assert worst > 5e-2, f"a wrong decode position went unnoticed (rel {worst:.4f})"


def test_generate_with_paged_cache():
    """model.generate with past_key_values=PagedCache (and the all-ones
    attention mask generate passes) gives the manual greedy loop's tokens."""
    ours = use_tilelang(tiny_llama(5))
    ids = torch.randint(0, 256, (BATCH, PROMPT))
    _, tokens = greedy(ours, ids, PagedCache(ours.config, BATCH, PROMPT + STEPS, PAGE), STEPS)
    cache = PagedCache(ours.config, BATCH, PROMPT + STEPS, page_size=PAGE)
    with torch.no_grad():
        out = ours.generate(ids, attention_mask=torch.ones_like(ids), past_key_values=cache,
                            max_new_tokens=STEPS, do_sample=False, pad_token_id=0)
    assert torch.equal(out[:, PROMPT:], tokens)


def test_decoding_refusals():
    ours = use_tilelang(tiny_llama(3))
    ids = torch.randint(0, 256, (BATCH, PROMPT))
    with torch.no_grad():
        # transformers' default DynamicCache: the decode step is refused.
        with pytest.raises(TileLangError, match="runs only with tilelang_mlir.models.PagedCache"):
            ours.generate(ids[:1], max_new_tokens=2, do_sample=False)
        # A padding mask that masks a token.
        mask = torch.ones_like(ids)
        mask[0, 0] = 0
        with pytest.raises(TileLangError, match="padding mask that masks tokens"):
            ours(ids, attention_mask=mask)
        # Several new tokens against a non-empty cache (chunked prefill).
        cache = PagedCache(ours.config, BATCH, 32, page_size=PAGE)
        ours(ids, past_key_values=cache, use_cache=True)
        with pytest.raises(TileLangError, match="chunked prefill"):
            ours(ids[:, :3], past_key_values=cache, use_cache=True)
        # Past the cache's length.
        cache = PagedCache(ours.config, BATCH, PAGE, page_size=PAGE)
        with pytest.raises(TileLangError, match="exceed max_cache_len"):
            ours(torch.randint(0, 256, (BATCH, PAGE + 1)), past_key_values=cache, use_cache=True)
    # Pages only the "tilelang" attention reads.
    with pytest.raises(TileLangError, match="use_tilelang"):
        PagedCache(tiny_llama().config, BATCH, 32)


def test_explicit_4d_masks():
    """A 4D mask that is the causal one (bool, or additive with -inf) runs;
    one that masks more is refused."""
    eager = tiny_llama(6)
    ours = use_tilelang(copy.deepcopy(eager))
    ids = torch.randint(0, 256, (BATCH, PROMPT))
    causal = torch.ones(PROMPT, PROMPT, dtype=torch.bool).tril().expand(BATCH, 1, -1, -1)
    additive = torch.zeros(causal.shape, dtype=torch.float16).masked_fill(~causal, float("-inf"))
    with torch.no_grad():
        ref = eager(ids).logits
        for mask in (causal, additive):
            assert rel(ours(ids, attention_mask=mask).logits, ref) < 1e-2
        padded = causal.clone()
        padded[0, :, :, 0] = False
        with pytest.raises(TileLangError, match="other than the causal one"):
            ours(ids, attention_mask=padded)


# --- on the GPU ----------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (also in AOT prepare)")
def test_llama_on_the_gpu():
    """The tiny model on the GPU: prefill logits and a training step's
    gradients match eager's; decoding through CUDAGraphDecoder (the first
    step eager, the second captured, the rest replays; teacher-forced with
    eager's tokens) gives eager's logits at every step, and again after the
    cache is reset and refilled by a new prefill (the same graph)."""
    eager = tiny_llama(7).cuda()
    ours = use_tilelang(copy.deepcopy(eager))
    ids = torch.randint(0, 256, (BATCH, 64), device="cuda")
    with torch.no_grad():
        assert rel(ours(ids).logits, eager(ids).logits) < 1e-2
    grads = []
    for model in (eager, ours):
        model.zero_grad()
        model(ids, labels=ids).loss.backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()
                      if n.endswith(("q_proj.weight", "v_proj.weight", "input_layernorm.weight"))})
        model.zero_grad(set_to_none=True)
    for name in grads[0]:
        assert rel(grads[1][name], grads[0][name]) < 3e-2, name

    cache = PagedCache(ours.config, BATCH, PROMPT + STEPS, page_size=PAGE)
    step = CUDAGraphDecoder(ours, cache)
    for round_ in range(2):
        prompt = torch.randint(0, 256, (BATCH, PROMPT), device="cuda")
        ref_logits, ref_tokens = greedy(eager, prompt, transformers.DynamicCache(
            config=eager.config), STEPS)
        cache.reset()
        with torch.no_grad():
            logits = [ours(prompt, past_key_values=cache, use_cache=True).logits[:, -1].float()]
            for i in range(STEPS - 1):
                logits.append(step(ref_tokens[:, i].view(-1, 1))[:, -1].float().clone())
        assert (step.graph is not None) and cache.layers[0].length == PROMPT + STEPS - 1
        assert (cache.layers[1].cache_seqlens == PROMPT + STEPS - 1).all()
        for i, (out, ref) in enumerate(zip(logits, ref_logits)):
            assert torch.isfinite(out).all() and rel(out, ref) < 1e-2, (round_, i)
    with pytest.raises(TileLangError, match="tokens must be"):
        step(ref_tokens[:, :2])
    cache.reset()
    with pytest.raises(TileLangError, match="run the prefill first"):
        step(ref_tokens[:, :1])
