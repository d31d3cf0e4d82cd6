"""Gemm tiles whose warps cannot split them evenly (TileLang issue 2537's
shapes: 12 warps over N = 104, 17 over M = 288, 20 over M = 336, 7 over a
16 x 16 tile). TileLang refuses them ("No valid warp partition"); here the
gemm takes the tensor-core grid where one covers the tile and otherwise
runs on the CUDA cores, and the result is the product either way. Checked
against NumPy on the CPU and (marked `gpu`) on the GPU, with and without
wgmma."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put

SHAPES = [  # M, N, K, threads, policy
    (16, 104, 32, 384, "Square"), (288, 8, 32, 544, "Square"), (16, 104, 32, 384, "FullRow"),
    (336, 8, 32, 640, "FullCol"), (16, 16, 32, 224, "Square"), (64, 104, 32, 384, "Square"),
    (336, 16, 32, 640, "Square"), (336, 16, 32, 640, "FullCol"), (48, 64, 32, 256, "FullRow"),
]


def _matmul(M, N, K, threads, policy):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1, threads=threads):
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.clear(c)
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, policy=getattr(T.GemmWarpPolicy, policy))
            T.copy(c, C)

    return main


def _check(rng, shape, target, device, pass_configs=None):
    M, N, K, threads, policy = shape
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    kernel = tl.compile(_matmul(*shape), out_idx=[2], target=target, pass_configs=pass_configs)
    c = get(kernel(put(a, device), put(b, device)))
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_uneven_partitions_on_cpu(rng, shape):
    _check(rng, shape, "cpu", "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("wgmma", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_uneven_partitions_on_gpu(rng, shape, wgmma):
    _check(rng, shape, "cuda", "cuda", {"tl.disable_wgmma": not wgmma})


# The one shape of SHAPES whose warps cover the tile on the tensor cores
# (8 warps along N of a 48 x 64 tile); the others run on the CUDA cores.
COVERED = {(48, 64, 32, 256, "FullRow"): [1, 8]}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_uneven_partitions_compile(shape):
    """sm_80 and sm_90a: ptxas assembles the kernel, and the gemm takes the
    tensor-core grid only where its warps cover the tile (mma.sync with that
    warp partition), else no tensor-core instruction at all."""
    for chip in ("cuda:sm_80", "cuda:sm_90a"):
        kernel = tl.compile(_matmul(*shape), out_idx=[2], target=chip,
                            pass_configs={"tl.disable_cache": True})
        assert kernel.cubin[:4] == b"\x7fELF", (chip, shape)
        ptx = kernel.get_kernel_source()
        gemm = next(line for line in kernel.mlir("layout").splitlines() if "tile.gemm" in line)
        grid = re.search(r"warp_partition = array<i64: (\d+), (\d+)>", gemm)
        if shape in COVERED:
            assert grid and [int(g) for g in grid.groups()] == COVERED[shape], gemm
            assert "mma.sync" in ptx and "wgmma" not in ptx
        else:
            assert grid is None and "wgmma" not in gemm, gemm
            assert "mma.sync" not in ptx and "wgmma" not in ptx
