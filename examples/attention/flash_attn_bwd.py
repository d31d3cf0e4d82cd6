"""FlashAttention backward: dQ, dK, dV of O = softmax(Q K^T / sqrt(D)) V
from Q, K, V, O, dO and the natural-log LSE that the forward pass returns.

Three tile programs, FlashAttention-2 style (python/tilelang_mlir/kernels/
attention/flash_attn_bwd.py): `preprocess` (Delta = rowsum(O * dO), the
float32 dQ accumulator cleared), `flash_attn_bwd` (a block owns KV rows and
walks the query blocks: dK and dV in registers, dQ added atomically) and
`postprocess` (dQ scaled and cast to the input dtype); `FlashAttnBwd`
chains them.
This script checks the gradients against torch autograd and prints the time.

    python examples/attention/flash_attn_bwd.py [--target cpu|cuda] [--batch B --heads H
        --seq S --dim D --groups G --causal --dtype float16|bfloat16]
"""

import argparse

import torch

from tilelang_mlir.kernels.attention.flash_attn_bwd import (BLOCKS, FlashAttnBwd, flash_attn_bwd,
                                                            forward, postprocess, preprocess,
                                                            reference)
from tilelang_mlir.testing import relative_error, to_device


def programs(batch=8, heads=32, seq_len=4096):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    return [("bwd_preprocess_d128", preprocess(batch, heads, seq_len, 128), [2, 3]),
            ("fa_bwd_d128", flash_attn_bwd(batch, heads, seq_len, 128, **BLOCKS[128]), [7, 8]),
            ("fa_bwd_d128_causal", flash_attn_bwd(batch, heads, seq_len, 128, is_causal=True,
                                                  **BLOCKS[128]), [7, 8]),
            ("fa_bwd_d64_causal_gqa_bf16",
             flash_attn_bwd(batch, heads, seq_len, 64, is_causal=True, groups=4, dtype="bfloat16",
                            **BLOCKS[64]), [7, 8]),
            ("bwd_postprocess_d128", postprocess(batch, heads, seq_len, 128), [1])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--groups", type=int, default=1, help="query heads per KV head")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args(argv)
    B, H, S, D = args.batch, args.heads, args.seq, args.dim
    bwd = FlashAttnBwd(B, H, S, D, args.causal, args.groups, args.dtype, target=args.target)
    torch_dtype = getattr(torch, args.dtype)
    q = torch.randn(B, H, S, D).to(torch_dtype)
    k = torch.randn(B, H // args.groups, S, D).to(torch_dtype)
    v = torch.randn(B, H // args.groups, S, D).to(torch_dtype)
    do = torch.randn(B, H, S, D).to(torch_dtype)
    q, k, v, do = (to_device(x, bwd.device) for x in (q, k, v, do))
    torch.backends.cuda.matmul.allow_tf32 = False
    o, lse = forward(q, k, v, args.causal)
    grads = bwd(q, k, v, o, do, lse)  # (without a GPU, a CUDA kernel stops here)
    errors = [relative_error(g, r) for g, r in zip(grads, reference(q, k, v, do, args.causal))]
    seconds = sum(kernel.time(*inputs) for kernel, inputs in (
        (bwd.pre, (o, do)), (bwd.post, (torch.zeros_like(q, dtype=torch.float32),)),
        (bwd.main, (q, k, v, do, lse, *bwd.pre(o, do)))))
    flop = 2.5 * 4 * B * H * S * S * D / (2 if args.causal else 1)  # 2.5x the forward's
    what = f"{'causal ' if args.causal else ''}{args.dtype} B={B} H={H} S={S} D={D}"
    if args.groups > 1:
        what += f" groups={args.groups}"
    print(f"target {bwd.target}: flash attention backward {what}, relative error dQ "
          f"{errors[0]:.1e} dK {errors[1]:.1e} dV {errors[2]:.1e}, {seconds * 1e3:.3f} ms "
          f"({flop / seconds / 1e12:.1f} TFLOP/s, counted as 2.5x the forward's FLOPs)")
    tol = 2e-2 if args.dtype == "float16" else 4e-2
    if not max(errors) < tol:
        raise SystemExit(f"FAILED: relative errors {errors}")
    return errors


if __name__ == "__main__":
    main()
