#!/usr/bin/env python3
"""One call of each FlashAttention backward to profile with Nsight Compute
(issue 21): ours in the given configs, then cuDNN's (torch SDPA's backward).

    python scripts/investigations/profile_attn_bwd.py [--dim 128] [--causal] [--batch 1]
        [--configs '128x64 s2 t256 dq-tma,...']

Here (no GPU) it compiles our kernels into the kernel cache and exits; on
the GPU machine run it under ncu, e.g.

    ncu --clock-control none -k regex:'main_kernel|sdpa|fmha|dgrad|bprop' \\
        --section SpeedOfLight --section WarpStateStats \\
        python3 scripts/investigations/profile_attn_bwd.py

Each kernel runs twice (a warm-up and the profiled call, marked by the
NVTX ranges 'ours <config>' and 'cudnn'). Configs are named as
flash_attn_bwd.describe names them; pass configs after a '+', e.g.
'128x64 s2 t256 dq-tma+tl.enable_loop_thread_index'.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import common  # noqa: E402
from common import SDPBackend, sdpa_kernel  # noqa: E402

from tilelang_mlir.kernels.attention import flash_attn_bwd as ours  # noqa: E402


def parse(name):
    """'128x64 s2 t256 dq-tma+tl.x' -> the config dict (with pass_configs)."""
    name, *passes = name.split("+")
    for config in ours.CONFIGS:
        if ours.describe(config) == name.strip() and not config.get("pass_configs"):
            out = dict(config)
            if passes:
                out["pass_configs"] = {p.strip(): True for p in passes}
            return out
    raise SystemExit(f"no config {name!r} in flash_attn_bwd.CONFIGS")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--configs", default="128x64 s2 t256 dq-tma")
    args = p.parse_args()
    gpu, target = common.init_cuda()
    B, H, S, D = args.batch, args.heads, args.seq, args.dim
    configs = [parse(c) for c in args.configs.split(",")]
    kernels = [ours.FlashAttnBwd(B, H, S, D, args.causal, target=target, **c) for c in configs]
    if not gpu:
        print(f"compiled {len(kernels)} configs: no GPU here")
        return
    q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
                   for _ in range(4))
    o, lse = ours.forward(q, k, v, args.causal)
    for name, bwd in zip(args.configs.split(","), kernels):
        for _ in range(2):
            torch.cuda.nvtx.range_push(f"ours {name}")
            bwd(q, k, v, o, do, lse)
            torch.cuda.nvtx.range_pop()
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        out = F.scaled_dot_product_attention(*leaves, is_causal=args.causal)
    for _ in range(2):
        torch.cuda.nvtx.range_push("cudnn")
        torch.autograd.grad(out, leaves, do, retain_graph=True)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print("done")


if __name__ == "__main__":
    main()
