"""A small `transformers` Llama (2 layers, GQA, random weights, no
download) on our kernels through tilelang_mlir.models.use_tilelang, on the
CPU target: its logits match the eager model (SDPA, PyTorch RMSNorm and
MLP), a training step's gradients match eager's, and the routed model
compiles with torch.compile; what is not routed says so."""

import copy

import pytest
import torch
import transformers  # requirements/test.txt (the extra tilelang-mlir[models])

from tilelang_mlir.base.errors import TileLangError
from tilelang_mlir.models import use_tilelang


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=256)
    cfg._attn_implementation = "sdpa"
    return transformers.LlamaForCausalLM(cfg).to(torch.float16).eval()


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


def test_decoding_is_not_routed_yet():
    ours = use_tilelang(tiny_llama(3))
    with torch.no_grad(), pytest.raises(TileLangError, match="decoding with a KV cache"):
        ours.generate(torch.randint(0, 256, (1, 16)), max_new_tokens=2, do_sample=False)
