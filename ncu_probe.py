# Temporary (not committed): run the D=64 forward configs once each for ncu.
import sys, os
sys.path.insert(0, "benchmarks")
import torch
import tilelang_mlir as tl
import flash_attn as fa
configs = [dict(fa.ours.CONFIGS[0], rotate=True, pingpong=True),
           dict(fa.ours.CONFIGS[0], rotate=True, pingpong=True, ex4=True),
           dict(block_M=192, block_N=128, num_stages=2, threads=384, rotate=True)]
for causal in (False,):
    case = fa.Case(8, 32, 4096, 64, causal)
    q, k, v = (torch.randn(8, 32, 4096, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    for cfg in configs:
        kern = tl.compile(case.program(cfg), out_idx=[3, 4], target="cuda",
                          pass_configs=fa.pass_configs(cfg))
        kern(q, k, v)
        torch.cuda.synchronize()
        print("ran", fa.describe(cfg), flush=True)
