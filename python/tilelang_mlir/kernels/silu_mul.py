"""Fused SiLU gate, out = silu(a) * b, in float16: the elementwise half of a
SwiGLU MLP. Each block copies a tile of both inputs into register fragments,
computes in float32 and writes float16 back.

Offers `silu_mul` (the program) and `silu_mul_bwd`, its backward in one
pass: from gate, up and dOut, d gate = dOut up s (1 + gate (1 - s)) and
d up = dOut silu(gate), s = sigmoid(gate), in float32.
"""

import tilelang_mlir.language as T


def silu_mul(M, N, block_M=32, block_N=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), Out: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_fragment((block_M, block_N), dtype)
            b = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], a)
            T.copy(B[by * block_M, bx * block_N], b)
            for i, j in T.Parallel(block_M, block_N):
                x = T.float32(a[i, j])
                a[i, j] = T.cast(x * T.sigmoid(x) * T.float32(b[i, j]), dtype)
            T.copy(a, Out[by * block_M, bx * block_N])

    return main


def silu_mul_bwd(M, N, block_M=32, block_N=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             DOut: T.Tensor((M, N), dtype), DA: T.Tensor((M, N), dtype),
             DB: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_fragment((block_M, block_N), dtype)
            b = T.alloc_fragment((block_M, block_N), dtype)
            d = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], a)
            T.copy(B[by * block_M, bx * block_N], b)
            T.copy(DOut[by * block_M, bx * block_N], d)
            for i, j in T.Parallel(block_M, block_N):
                x = T.float32(a[i, j])
                s = T.sigmoid(x)
                dy = T.float32(d[i, j])
                a[i, j] = T.cast(dy * T.float32(b[i, j]) * s * (1.0 + x * (1.0 - s)), dtype)
                b[i, j] = T.cast(dy * x * s, dtype)
            T.copy(a, DA[by * block_M, bx * block_N])
            T.copy(b, DB[by * block_M, bx * block_N])

    return main
