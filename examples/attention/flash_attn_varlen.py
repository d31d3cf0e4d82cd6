"""Variable-length FlashAttention forward (like flash_attn_varlen_func):
sequences of different lengths packed without padding, one kernel compiled
once for any total number of tokens.

The program, `flash_attn_varlen` in python/tilelang_mlir/kernels/attention/
flash_attn_varlen.py, takes Q (total_tokens, heads, dim), K and V
(total_tokens, heads / groups, dim) with a dynamic total and the sequence
offsets cu_seqlens (int32, batch + 1); inside a sequence it is flash_attn's
program with keys masked at the sequence's end. This script checks O and
the LSE against PyTorch, one sequence at a time, and prints the time.

    python examples/attention/flash_attn_varlen.py [--target cpu|cuda] [--lens 100,37,...
        --heads H --dim D --groups G --causal --dtype float16|bfloat16]
"""

import argparse

import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels.attention.flash_attn_varlen import (flash_attn_varlen, make_inputs,
                                                               reference)
from tilelang_mlir.testing import relative_error, to_device


def programs(batch=8, heads=32, max_seqlen=4096):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    return [("fa_varlen_d128", flash_attn_varlen(batch, heads, max_seqlen, 128), [4, 5]),
            ("fa_varlen_d64_causal_gqa_bf16",
             flash_attn_varlen(batch, heads, max_seqlen, 64, is_causal=True, groups=4,
                               dtype="bfloat16"), [4, 5])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--lens", default="1000,37,2048,513,1,777",
                        help="sequence lengths, comma-separated")
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--groups", type=int, default=1, help="query heads per KV head")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    parser.add_argument("--block", type=int, nargs=2, default=None, metavar=("M", "N"),
                        help="block_M block_N (default 128 128)")
    args = parser.parse_args(argv)
    lens = [int(n) for n in args.lens.split(",")]
    H, D = args.heads, args.dim
    blocks = dict(zip(("block_M", "block_N"), args.block)) if args.block else {}
    program = flash_attn_varlen(len(lens), H, max(lens), D, args.causal, args.groups,
                                dtype=args.dtype, **blocks)
    kernel = tl.compile(program, out_idx=[4, 5], target=args.target)
    inputs = make_inputs(lens, H, D, args.groups, dtype=getattr(torch, args.dtype))
    dev = [to_device(x, kernel.device) for x in inputs]
    o, lse = kernel(*dev)  # (without a GPU, a CUDA kernel stops here)
    torch.backends.cuda.matmul.allow_tf32 = False
    o_ref, lse_ref = reference(*dev, is_causal=args.causal)
    err, lse_err = relative_error(o, o_ref), relative_error(lse, lse_ref)
    seconds = kernel.time(*dev)
    flop = sum(4 * H * n * n * D / (2 if args.causal else 1) for n in lens)
    what = f"{'causal ' if args.causal else ''}{args.dtype} lens={args.lens} H={H} D={D}"
    if args.groups > 1:
        what += f" groups={args.groups}"
    print(f"target {kernel.target}: varlen flash attention {what}, relative error {err:.1e} "
          f"(LSE {lse_err:.1e}), {seconds * 1e3:.3f} ms ({flop / seconds / 1e12:.1f} TFLOP/s)")
    if not (err < 1e-2 and lse_err < 1e-3):
        raise SystemExit(f"FAILED: relative error {err:.1e}, LSE {lse_err:.1e}")
    return err


if __name__ == "__main__":
    main()
