"""RMS norm, y = x / sqrt(mean(x^2) + eps) * w, bfloat16 in and out,
float32 inside. A block owns `block_M` whole rows; the weight is loaded once
per block.

Offers `rms_norm` (the program) and `rms_norm_bwd`, its backward: with
r = rsqrt(mean(x^2) + eps) and g = dy w per row, dx = r g - x r^3 mean(g x)
and dw = sum over rows of dy x r. A block owns `chunks` groups of
`block_M` rows and writes its float32 partial dw as one row of DW (the
caller sums the rows: ceil(M / (block_M chunks)) of them).
"""

import tilelang_mlir.language as T


@T.macro
def inv_rms(x, sq, r, rows, N, eps):
    """r[i] = 1 / sqrt(mean(x[i, :]^2) + eps) in float32, through sq."""
    for i, j in T.Parallel(rows, N):
        sq[i, j] = T.float32(x[i, j]) * T.float32(x[i, j])
    T.reduce_sum(sq, r, dim=1)
    for i in T.Parallel(rows):
        r[i] = T.rsqrt(r[i] / N + eps)


def rms_norm(M, N, eps=1e-6, block_M=4, dtype="bfloat16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), "float32")
            w = T.alloc_fragment((N,), dtype)
            ms = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            inv_rms(x, sq, ms, block_M, N, eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.cast(T.float32(x[i, j]) * ms[i] * T.float32(w[j]), dtype)
            T.copy(x, Y[bx * block_M, 0])

    return main


def rms_norm_bwd(M, N, eps=1e-6, block_M=2, chunks=16, threads=512, dtype="bfloat16"):
    """(the defaults: 113 registers a thread at N = 4096 on sm_90a, no spills)"""
    rows = block_M * chunks

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), DY: T.Tensor((M, N), dtype),
             DX: T.Tensor((M, N), dtype), DW: T.Tensor((T.ceildiv(M, rows), N), "float32")):
        with T.Kernel(T.ceildiv(M, rows), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            dy = T.alloc_fragment((block_M, N), dtype)
            t = T.alloc_fragment((block_M, N), "float32")
            w = T.alloc_fragment((N,), dtype)
            r = T.alloc_fragment((block_M,), "float32")
            dot = T.alloc_fragment((block_M,), "float32")
            col = T.alloc_fragment((N,), "float32")
            dw = T.alloc_fragment((N,), "float32")
            T.copy(W, w)
            T.clear(dw)
            for c in T.serial(chunks):
                T.copy(X[bx * rows + c * block_M, 0], x)
                T.copy(DY[bx * rows + c * block_M, 0], dy)
                inv_rms(x, t, r, block_M, N, eps)
                for i, j in T.Parallel(block_M, N):
                    t[i, j] = T.float32(dy[i, j]) * T.float32(w[j]) * T.float32(x[i, j])
                T.reduce_sum(t, dot, dim=1)
                for i in T.Parallel(block_M):
                    dot[i] = dot[i] / N * r[i] * r[i] * r[i]
                for i, j in T.Parallel(block_M, N):
                    t[i, j] = T.float32(dy[i, j]) * T.float32(x[i, j]) * r[i]
                T.reduce_sum(t, col, dim=0)
                for j in T.Parallel(N):
                    dw[j] = dw[j] + col[j]
                for i, j in T.Parallel(block_M, N):
                    x[i, j] = T.cast(r[i] * T.float32(dy[i, j]) * T.float32(w[j])
                                     - T.float32(x[i, j]) * dot[i], dtype)
                T.copy(x, DX[bx * rows + c * block_M, 0])
            T.copy(dw, DW[bx, 0])

    return main
