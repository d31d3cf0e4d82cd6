"""Flash decoding: one query token per sequence attending to a long KV
cache, split along the cache (split-KV) so that a small batch still fills
the GPU, then a combine kernel.

The programs are in python/tilelang_mlir/kernels/attention/: the split
kernel `flash_decode_split` (flash_decode.py: one KV head of one sequence
and one share of its KV tiles, the query heads of the group as the rows of
the score gemm, a contiguous or paged cache) and the combine kernel
`splitkv_combine` (online_softmax.py); `FlashDecode` chains them. This
script checks O against PyTorch and prints the time and cache bandwidth.

    python examples/attention/flash_decode.py [--target cpu|cuda] [--batch B --heads H
        --kv-heads G --dim D --cache N --splits S --page-size P --dtype float16|bfloat16]
"""

import argparse

import torch

from tilelang_mlir.kernels.attention.flash_decode import (FlashDecode, flash_decode_split,
                                                          make_inputs, reference)
from tilelang_mlir.kernels.attention.online_softmax import splitkv_combine
from tilelang_mlir.testing import relative_error, to_device


def programs(batch=16, heads=32, kv_heads=8, cache=8192, num_splits=4):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    pages = cache // 64
    return [("decode_d128_gqa", flash_decode_split(batch, heads, kv_heads, 128, batch, cache, 1,
                                                   num_splits), [5, 6]),
            ("decode_d64_mha_paged_bf16", flash_decode_split(
                batch, heads, heads, 64, batch * pages, 64, pages, num_splits, block_N=64,
                dtype="bfloat16"), [5, 6]),
            ("decode_combine", splitkv_combine(batch, heads, num_splits, 128), [2])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--cache", type=int, default=8192, help="longest cache length")
    parser.add_argument("--splits", type=int, default=None, help="default: two waves of blocks")
    parser.add_argument("--page-size", type=int, default=None, help="paged cache (default: not)")
    parser.add_argument("--block-n", type=int, default=128, help="KV tokens per step")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args(argv)
    B, H, G, D = args.batch, args.heads, args.kv_heads, args.dim
    # Cache lengths up to --cache, not multiples of the tile.
    lens = [max(1, args.cache - 37 * b) for b in range(B)]
    torch_dtype = getattr(torch, args.dtype)
    q, k, v, seqlens, table = make_inputs(B, H, G, D, lens, args.page_size, dtype=torch_dtype)
    paged = {} if table is None else dict(page_size=args.page_size, num_pages=k.shape[0],
                                          max_pages=table.shape[1])
    kernel = FlashDecode(B, H, G, D, max_seq=max(lens), num_splits=args.splits,
                         target=args.target, dtype=args.dtype, block_N=args.block_n, **paged)
    dev = [to_device(x, kernel.device) for x in (q, k, v, seqlens)]
    if table is not None:
        dev.append(to_device(table, kernel.device))
    o = kernel(*dev)  # (without a GPU, a CUDA kernel stops here)
    torch.backends.cuda.matmul.allow_tf32 = False
    err = relative_error(o, reference(*dev))
    split_args = kernel.split_args(*dev)
    seconds = kernel.split.time(*split_args)
    if kernel.combine is not None:  # (one split: the split kernel writes O itself)
        seconds += kernel.combine.time(*kernel.combine_args(*kernel.split(*split_args)))
    cache_bytes = 2 * sum(lens) * G * D * torch_dtype.itemsize
    print(f"target {kernel.target}: flash decode {args.dtype} B={B} H={H} KV heads={G} D={D} "
          f"cache<={args.cache}{' paged' if table is not None else ''} "
          f"splits={kernel.num_splits}, relative error {err:.1e}, "
          f"{seconds * 1e3:.3f} ms ({cache_bytes / seconds / 1e9:.0f} GB/s of cache)")
    if not err < 1e-2:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
