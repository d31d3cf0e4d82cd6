"""Tensors of dtype T.tfloat32 (float32 storage that tensor cores read as
TF32), as TileLang's float32 GEMM tests declare them: a pipelined copy of
them into shared memory uses TMA on sm_90a (a tensor map of float32
elements: TMA moves the bits), cp.async on sm_80, and the gemm the TF32
tensor-core instructions. tile.tensormaps refused tfloat32 tensors
("TMA cannot copy tfloat32 elements")."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.bounds import assert_float32_matmul

M, N, K = 128, 128, 64


def _tf32_gemm():
    @T.prim_func
    def main(A: T.Tensor((M, K), "tfloat32"), B: T.Tensor((K, N), "tfloat32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), "tfloat32")
            B_s = T.alloc_shared((32, 64), "tfloat32")
            C_l = T.alloc_fragment((64, 64), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 64, bx * 64])

    return main


@pytest.mark.parametrize("chip, copy", [("cuda:sm_90a", "cp.async.bulk.tensor"),
                                        ("cuda:sm_80", "cp.async.cg")])
def test_tfloat32_tensors_compile(chip, copy):
    kernel = tl.compile(_tf32_gemm(), out_idx=[2], target=chip)
    ptx = kernel.get_kernel_source()
    assert copy in ptx and ".tf32" in ptx


def test_tfloat32_tensors_on_the_cpu(rng):
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = tl.compile(_tf32_gemm(), out_idx=[2], target="cpu")(a, b)
    assert_float32_matmul(c, a, b)  # (the CPU target multiplies in float32)


@pytest.mark.gpu
def test_tfloat32_tensors_on_gpu(rng):
    import torch
    a = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32)).cuda()
    b = torch.from_numpy(rng.standard_normal((K, N)).astype(np.float32)).cuda()
    c = tl.compile(_tf32_gemm(), out_idx=[2], target="cuda")(a, b)
    ref = a.double() @ b.double()
    # TF32 keeps 10 mantissa bits of each input: 2^-11 relative per product
    assert ((c.double() - ref).abs() <= 2.0 ** -10 * (a.abs().double() @ b.abs().double())).all()
