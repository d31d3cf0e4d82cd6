"""Runs the GEMM (3-stage pipeline) and softmax kernels once, and the
explicitly warp-specialized GEMMs of test_explicit_ws.py (roles, user
barriers, TMA and per-thread cp.async), for compute-sanitizer (memcheck,
racecheck) on a GPU machine."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python"))

import kernels  # noqa: E402
import test_explicit_ws  # noqa: E402
import tilelang_mlir as tl  # noqa: E402
from tilelang_mlir.runtime.cuda import NoCUDADevice  # noqa: E402


def main():
    gemm = tl.compile(kernels.matmul(256, 256, 256, 128, 128, 32, num_stages=3), out_idx=[2],
                      target="cuda")
    ragged = tl.compile(kernels.matmul(200, 136, 72, 64, 64, 32, num_stages=3), out_idx=[2],
                        target="cuda")
    softmax = tl.compile(kernels.softmax(70, 96, 16), out_idx=[1], target="cuda")
    explicit = [tl.compile(program(128, 256, 256), out_idx=[2], target="cuda")
                for program in (test_explicit_ws.barrierpipe, test_explicit_ws.three_roles,
                                test_explicit_ws.cp_async_gemm)]
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
    ea, eb = torch.randn(128, 256, device="cuda").half(), torch.randn(256, 256, device="cuda").half()
    for kernel in explicit:
        ec = kernel(ea, eb).float()
        ref = ea.float() @ eb.float()
        assert ((ec - ref).norm() / ref.norm()) < 1e-2, kernel
    print("kernels ran and matched PyTorch")


if __name__ == "__main__":
    try:
        main()
    except NoCUDADevice:
        print("compiled only: no GPU here (AOT prepare)")
