"""
PyTorch custom operators and torch.compile
==========================================

Two layers, both ``torch.library`` custom operators (the full account is
the PyTorch page of this site):

- ``tilelang_mlir.ops``: the kernel library as operators
  (``torch.ops.tilelang.*``): RMS norm, SiLU gate, GEMM (float8 too),
  FlashAttention (differentiable), variable-length attention, paged flash
  decoding, MLA decode, int4 weight-only linear. Each has a fake
  implementation, so ``torch.compile(fullgraph=True)`` traces through it.
- ``tl.library.custom_op(name, kernel)``: any compiled kernel as an
  operator, its schema and fake implementation from the kernel's signature.

``tilelang_mlir.models.use_tilelang(model)`` routes a ``transformers``
Llama's attention, RMS norm and gated MLP to these operators.

The operators take CPU tensors (the CPU target) and CUDA tensors (launched
on torch's current stream). This page runs on the CPU; on a GPU::

    TUTORIAL_TARGET=cuda python docs/tutorials/t08_pytorch.py
"""

import os

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
import tilelang_mlir.ops as tlops

DEVICE = "cuda" if os.environ.get("TUTORIAL_TARGET", "cpu").startswith("cuda") else "cpu"
torch.manual_seed(0)

# %%
# The library's operators
# -----------------------

x = torch.randn(4, 256, dtype=torch.float16, device=DEVICE)
w = torch.randn(256, dtype=torch.float16, device=DEVICE)
y = tlops.rms_norm(x, w, 1e-6)
ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
torch.testing.assert_close(y.float(), ref, rtol=1e-2, atol=1e-2)
print(torch.ops.tilelang.rms_norm)

# %%
# FlashAttention is differentiable: autograd calls our backward kernels.

q, k, v = (torch.randn(1, 2, 64, 64, dtype=torch.float16, device=DEVICE, requires_grad=True)
           for _ in range(3))
o = tlops.flash_attn(q, k, v, causal=True)
o.float().sum().backward()
o_ref = torch.nn.functional.scaled_dot_product_attention(
    q.detach().float(), k.detach().float(), v.detach().float(), is_causal=True)
torch.testing.assert_close(o.float(), o_ref, rtol=2e-3, atol=2e-3)
print("dQ:", tuple(q.grad.shape), q.grad.dtype)

# %%
# torch.compile
# -------------
#
# A function that calls the operators compiles with no graph break: the
# fake implementations give the output shapes without running a kernel.
# (``backend="aot_eager"`` keeps this page fast; the default Inductor
# backend works the same way.)


def block(x, w, gate, up):
    return tlops.rms_norm(tlops.silu_mul(gate, up) + x, w, 1e-6)


compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
gate, up = torch.randn_like(x), torch.randn_like(x)
torch.testing.assert_close(compiled(x, w, gate, up), block(x, w, gate, up))
print("torch.compile(fullgraph=True) traced through rms_norm and silu_mul")

# %%
# Your own kernel as an operator
# ------------------------------
#
# With a ``T.dynamic`` size, one kernel serves every length and the fake
# implementation reads the size off the input.

N = T.dynamic("N")


@T.prim_func
def scale(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), s: T.float32):
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < N:
                Y[bx * 128 + i] = X[bx * 128 + i] * s


kernel = tl.compile(scale, out_idx=[1], target="cpu" if DEVICE == "cpu" else "cuda")
op = tl.library.custom_op("tutorial::scale", kernel)
print(torch.ops.tutorial.scale.default._schema)
t = torch.randn(1000, device=DEVICE)
torch.testing.assert_close(op(t, 3.0), 3.0 * t)
torch.testing.assert_close(torch.compile(lambda t: op(t, 0.5) + 1, fullgraph=True,
                                         backend="aot_eager")(t), 0.5 * t + 1)
print("torch.ops.tutorial.scale works eagerly and under torch.compile")
