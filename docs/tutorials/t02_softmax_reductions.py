"""
Softmax and reductions
======================

A row softmax, y = softmax(x) over the last axis: a block owns a few whole
rows in a register fragment, reduces each row to its maximum, exponentiates
and reduces again to the sum. ``T.Parallel`` loops run element-wise over a
fragment, each thread on the elements it holds; ``T.reduce_max`` and
``T.reduce_sum`` reduce a fragment along one dimension (across threads where
a row is spread over several).

Runs on the CPU when the site is built; on a GPU::

    TUTORIAL_TARGET=cuda python docs/tutorials/t02_softmax_reductions.py

``examples/softmax/softmax.py --target cuda`` runs the library's softmax
(``tilelang_mlir.kernels.softmax``) at full size and times it.
"""

import math
import os

import numpy as np

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.testing import to_device, to_numpy

TARGET = os.environ.get("TUTORIAL_TARGET", "cpu")

# %%
# The program
# -----------
#
# The exponent is taken as ``exp2`` with log2(e) folded into the scale (what
# the GPU's special-function unit computes). ``T.cast`` converts back to
# float16 (one rounding rule on every target).


def softmax(M, N, block_M=4, dtype="float16"):
    log2e = math.log2(math.e)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            s = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                s[i, j] = T.float32(x[i, j]) * log2e
            T.reduce_max(s, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                s[i, j] = T.exp2(s[i, j] - row_max[i])
            T.reduce_sum(s, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.cast(s[i, j] / row_sum[i], dtype)
            T.copy(x, Y[bx * block_M, 0])

    return main


M, N = 64, 512
kernel = tl.compile(softmax(M, N), out_idx=[1], target=TARGET)
x = np.random.default_rng(0).standard_normal((M, N)).astype(np.float16)
y = to_numpy(kernel(to_device(x, kernel.device)))
z = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
ref = z / z.sum(axis=1, keepdims=True)
print("max abs error:", float(np.abs(y - ref).max()))
np.testing.assert_allclose(y.astype(np.float64), ref, atol=2e-3)

# %%
# Other reductions
# ----------------
#
# The reduce family takes a fragment (or shared buffer) and the dimension:
# ``T.reduce_sum``, ``T.reduce_max``, ``T.reduce_min``, ``T.reduce_abssum``,
# ``T.reduce_absmax``; ``T.cumsum`` is the running sum. Here the absolute
# maximum and the sum of each column of a tile, and the running sum of
# each row.


def column_stats(M, N):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), amax: T.Tensor((N,), "float32"),
             total: T.Tensor((N,), "float32"), run: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((M, N), "float32")
            a = T.alloc_fragment((N,), "float32")
            t = T.alloc_fragment((N,), "float32")
            c = T.alloc_shared((M, N), "float32")
            T.copy(X[0, 0], x)
            T.reduce_absmax(x, a, dim=0)
            T.reduce_sum(x, t, dim=0)
            T.copy(X[0, 0], c)
            T.cumsum(c, dim=1)
            T.copy(a, amax[0])
            T.copy(t, total[0])
            T.copy(c, run[0, 0])

    return main


stats = tl.compile(column_stats(32, 64), out_idx=[1, 2, 3], target=TARGET)
x = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32)
amax, total, run = (to_numpy(r) for r in stats(to_device(x, stats.device)))
np.testing.assert_allclose(amax, np.abs(x).max(axis=0), rtol=1e-6)
np.testing.assert_allclose(total, x.sum(axis=0), rtol=1e-4, atol=1e-4)
np.testing.assert_allclose(run, np.cumsum(x, axis=1), rtol=1e-4, atol=1e-4)
print("column abs-max, sums and row running sums match NumPy")

# %%
# On a GPU, a row reduction that spans several threads is a butterfly of
# warp shuffles plus, across warps, a round through shared memory; the
# compiler picks it from the fragment's layout. The PTX for sm_80 shows the
# shuffles:

gpu = tl.compile(softmax(M, N), out_idx=[1], target="cuda:sm_80")
print(sorted({line.split()[0] for line in gpu.get_source().splitlines()
              if "shfl.sync" in line}))
