"""Child process of test_device_assert's GPU test: runs the sqrt kernel with
a CUDA device assert on fresh random inputs, one of them negative when
argv[1] == "fail". A device assert kills the CUDA context, hence a process
of its own. Prints "ok" after a correct run; "compiled" where no GPU is
present (AOT prepare)."""

import sys

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.runtime.cuda import NoCUDADevice


def sqrt_kernel():
    @T.prim_func
    def main(X: T.Tensor((4096,), "float32"), Y: T.Tensor((4096,), "float32")):
        with T.Kernel(32, threads=128) as bx:
            for i in T.Parallel(128):
                T.device_assert(X[bx * 128 + i] >= 0, "X must be non-negative")
                Y[bx * 128 + i] = T.sqrt(X[bx * 128 + i])

    return main


def main(mode: str) -> None:
    try:
        kernel = tl.compile(sqrt_kernel(), out_idx=[1], target="cuda")
        if not torch.cuda.is_available():
            raise NoCUDADevice("no GPU here")
        x = torch.rand(4096, device="cuda")
        if mode == "fail":
            x[int(torch.randint(0, 4096, ()))] = -1.0
        y = kernel(x)
        torch.cuda.synchronize()
    except NoCUDADevice:
        print("compiled")
        return
    assert torch.allclose(y, x.sqrt()), "wrong result"
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
