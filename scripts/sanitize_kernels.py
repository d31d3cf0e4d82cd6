"""Runs the GEMM (3-stage pipeline) and softmax kernels once, for
compute-sanitizer (memcheck, racecheck) on a GPU machine."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python"))

import kernels  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
from tilelang_mlir.runtime.cuda import NoCUDADevice  # noqa: E402


def main():
    gemm = tl.compile(kernels.matmul(256, 256, 256, 128, 128, 32, num_stages=3), out_idx=[2],
                      target="cuda")
    ragged = tl.compile(kernels.matmul(200, 136, 72, 64, 64, 32, num_stages=3), out_idx=[2],
                        target="cuda")
    softmax = tl.compile(kernels.softmax(70, 96, 16), out_idx=[1], target="cuda")
    if not torch.cuda.is_available():
        print("compiled only: no GPU here (AOT prepare)")
        return
    a = torch.randn(256, 256, device="cuda").half()
    b = torch.randn(256, 256, device="cuda").half()
    c = gemm(a, b)
    ra, rb = torch.randn(200, 72, device="cuda").half(), torch.randn(72, 136, device="cuda").half()
    rc = ragged(ra, rb)
    x = torch.randn(70, 96, device="cuda")
    y = softmax(x)
    torch.cuda.synchronize()
    assert ((c.float() - a.float() @ b.float()).norm() / (a.float() @ b.float()).norm()) < 1e-2
    assert ((rc.float() - ra.float() @ rb.float()).norm() / (ra.float() @ rb.float()).norm()) < 1e-2
    assert ((y - torch.softmax(x, 1)).abs().max()) < 1e-5
    print("kernels ran and matched PyTorch")


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here (AOT prepare)")
