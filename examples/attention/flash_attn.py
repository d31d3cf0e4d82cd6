"""FlashAttention forward: O = softmax(Q K^T / sqrt(D)) V, with the
log-sum-exp of every row (what a backward pass needs).

The program, `flash_attn` in python/tilelang_mlir/kernels/attention/
flash_attn.py: a block owns `block_M` query rows of one (batch, head) and
walks the KV sequence in `block_N` tiles with the online softmax (S = Q K^T
on the tensor cores, the running row maximum and sum, O rescaled, then O +=
P V); causal attention stops at the diagonal. This script compiles it with
the Hopper schedule (PASS_CONFIGS), checks O and the LSE against PyTorch and
prints the time.

    python examples/attention/flash_attn.py [--target cpu|cuda] [--batch B --heads H
        --seq S --dim D --groups G --causal --dtype float16|bfloat16]
"""

import argparse

import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention.flash_attn import PASS_CONFIGS, flash_attn, reference
from tilelang_mlir.testing import relative_error, to_device


def programs(batch=8, heads=32, seq_len=4096):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    return [("fa_d128", flash_attn(batch, heads, seq_len, 128), [3, 4]),
            ("fa_d128_causal", flash_attn(batch, heads, seq_len, 128, is_causal=True), [3, 4]),
            ("fa_d64", flash_attn(batch, heads, seq_len, 64), [3, 4]),
            ("fa_d64_causal_gqa_bf16", flash_attn(batch, heads, seq_len, 64, is_causal=True,
                                                  groups=4, dtype="bfloat16"), [3, 4])]


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
    parser.add_argument("--block", type=int, nargs=2, default=None, metavar=("M", "N"),
                        help="block_M block_N (default 128 128)")
    args = parser.parse_args(argv)
    B, H, S, D = args.batch, args.heads, args.seq, args.dim
    blocks = dict(zip(("block_M", "block_N"), args.block)) if args.block else {}
    program = flash_attn(B, H, S, D, args.causal, args.groups, dtype=args.dtype, **blocks)
    kernel = tl.compile(program, out_idx=[3, 4], target=args.target, pass_configs=PASS_CONFIGS)
    torch_dtype = getattr(torch, args.dtype)
    q = torch.randn(B, H, S, D).to(torch_dtype)
    k = torch.randn(B, H // args.groups, S, D).to(torch_dtype)
    v = torch.randn(B, H // args.groups, S, D).to(torch_dtype)
    dq, dk, dv = (to_device(x, kernel.device) for x in (q, k, v))
    o, lse = kernel(dq, dk, dv)  # (without a GPU, a CUDA kernel stops here)
    torch.backends.cuda.matmul.allow_tf32 = False
    o_ref, lse_ref = reference(dq, dk, dv, args.causal)
    err, lse_err = relative_error(o, o_ref), relative_error(lse, lse_ref)
    seconds = kernel.time(dq, dk, dv)
    flop = 4 * B * H * S * S * D / (2 if args.causal else 1)
    what = f"{'causal ' if args.causal else ''}{args.dtype} B={B} H={H} S={S} D={D}"
    if args.groups > 1:
        what += f" groups={args.groups}"
    print(f"target {kernel.target}: flash attention {what}, relative error {err:.1e} "
          f"(LSE {lse_err:.1e}), {seconds * 1e3:.3f} ms ({flop / seconds / 1e12:.1f} TFLOP/s)")
    if not (err < 1e-2 and lse_err < 1e-3):
        raise SystemExit(f"FAILED: relative error {err:.1e}, LSE {lse_err:.1e}")
    return err


if __name__ == "__main__":
    main()
