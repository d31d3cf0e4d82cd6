"""
FlashAttention
==============

The kernel library (``tilelang_mlir.kernels``) holds tuned tile programs;
``tilelang_mlir.kernels.attention.flash_attn`` is FlashAttention's forward
pass: each block owns ``block_M`` query rows, walks the keys ``block_N`` at a
time, computes S = Q K^T with one gemm, keeps a running (online) softmax of
each row, and accumulates O += P V with a second gemm. The whole program is
about 80 lines of the same ``T.*`` operations as the first GEMM.

Here it runs on the CPU at a small size and is checked against PyTorch. On
an H100 or H200, the example script runs it at the benchmark's size and
times it (``benchmarks/flash_attn.py`` compares it with cuDNN and Triton;
see the performance pages)::

    python examples/attention/flash_attn.py --target cuda
"""

import inspect
import os

import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention import flash_attn as fa

TARGET = os.environ.get("TUTORIAL_TARGET", "cpu")

# %%
# The program
# -----------
#
# The heart of it, the loop over key tiles (printed from the library's
# source):

source = inspect.getsource(fa.flash_attn)
start = source.index("for k in T.Pipelined")
end = source.index("\n", source.index("softmax_finish", start))
print(source[start:end])

# %%
# Compile and check
# -----------------
#
# ``flash_attn(batch, heads, seq_len, dim, is_causal, ...)`` returns the
# program; its arguments are Q, K, V, O and the log-sum-exp of each row
# (for the backward pass). ``reference`` computes both in float64.

B, H, S, D = 1, 2, 128, 64
device = "cpu" if TARGET == "cpu" else "cuda"
program = fa.flash_attn(B, H, S, D, is_causal=True, block_M=64, block_N=64, threads=128)
kernel = tl.compile(program, out_idx=[3, 4], target=TARGET)

torch.manual_seed(0)
q, k, v = (torch.randn(B, H, S, D, dtype=torch.float16, device=device) for _ in range(3))
o, lse = kernel(q, k, v)
o_ref, lse_ref = fa.reference(q, k, v, is_causal=True)
print("O error:", float((o.double() - o_ref.double()).abs().max()))
torch.testing.assert_close(o.double(), o_ref.double(), rtol=2e-3, atol=2e-3)
torch.testing.assert_close(lse.double(), lse_ref.double(), rtol=1e-4, atol=1e-4)

# %%
# On Hopper
# ---------
#
# For sm_90a the same program becomes a warp-specialized kernel: a TMA
# producer warpgroup loads K and V tiles into shared-memory rings, the
# consumer warpgroups run wgmma. The library's schedule adds two pass
# configs (``fa.PASS_CONFIGS``): the rotated loop (the next tile's Q K^T in
# flight during this tile's softmax) and ping-pong turns between the
# consumer warpgroups.

print(fa.PASS_CONFIGS)
hopper = tl.compile(fa.flash_attn(8, 32, 4096, 128, block_M=128, block_N=128, threads=256),
                    out_idx=[3, 4], target="cuda:sm_90a", pass_configs=fa.PASS_CONFIGS)
ptx = hopper.get_source()
for what in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait", "setmaxnreg"):
    print(f"{what:24s}", sum(what in line for line in ptx.splitlines()), "lines")
print(hopper.ptxas_info.splitlines()[-2])
