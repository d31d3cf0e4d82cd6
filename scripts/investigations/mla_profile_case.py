"""One MLA decode case for a profiler (ncu, compute-sanitizer): the seesaw
program (kernels/attention/mla_decode_roles.py) or another variant, on
random inputs, launched a few times and checked against the reference.

    python scripts/investigations/mla_profile_case.py [--variant seesaw|roles|split]
        [--batch 128] [--cache 8192] [--splits 1] [--dtype float16]
"""

import argparse

import torch

from tilelang_mlir.kernels.attention import mla_decode as mla
from tilelang_mlir.kernels.attention import mla_decode_roles as roles

WRAPPERS = {"seesaw": roles.MlaDecodeSeesaw, "roles": roles.MlaDecodeRoles}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--variant", default="seesaw")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--cache", type=int, default=8192)
    p.add_argument("--splits", type=int, default=1)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--launches", type=int, default=3)
    a = p.parse_args()
    heads = 128
    inputs = mla.make_inputs(a.batch, heads, [a.cache] * a.batch, dtype=getattr(torch, a.dtype),
                             device="cuda", seed=0)
    num_pages, max_pages = inputs[2].shape[0], inputs[3].shape[1]
    config = mla.HOPPER if a.variant == "split" else {}
    kernel = WRAPPERS.get(a.variant, mla.MlaDecode)(a.batch, heads, num_pages, max_pages,
                                                    a.splits, target="cuda", dtype=a.dtype,
                                                    **config)
    for _ in range(a.launches):
        o = kernel(*inputs)
    torch.cuda.synchronize()
    b = min(a.batch, 4)  # the reference on a few sequences (it gathers per sequence)
    sub = (inputs[0][:b], inputs[1][:b], inputs[2], inputs[3][:b], inputs[4][:b])
    ref = mla.reference(*sub)
    err = ((o[:b].double() - ref.double()).norm() / ref.double().norm()).item()
    print(f"{a.variant}: relative error of the first {b} sequences {err:.2e}")


if __name__ == "__main__":
    main()
