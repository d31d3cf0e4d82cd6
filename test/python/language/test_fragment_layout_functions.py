"""`T.Fragment` layouts written as any index arithmetic (TileLang's
`forward_fn`), as TileLang's kernels write them: a row reduction whose
fragments live on 64 of the block's 128 threads, the same on threads
[32, 96) (a constant thread offset), and a flattened `(i * W + j) // 4 % 128`
layout of a bf16 row. The compiler fits digits to the function's values:
the offset only moves elements between threads, and the threads a layout
leaves out hold replicas. A layout that places elements on a number of
threads that does not divide the block, or whose dimensions do not add
their contributions, is refused with the reason.

Run on the CPU target and on the GPU (marked `gpu`) against NumPy, and
compiled for sm_80, sm_90a and gfx942."""

import ml_dtypes
import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put

ROWS, WIDTH, VEC = 4, 512, 8


def _row_normalize(offset: int):
    """out[i, j] = x[i, j] / sum_j x[i, j], the fragments on threads
    [offset, offset + 64) of 128."""

    @T.prim_func
    def main(x: T.Tensor((ROWS, WIDTH), "float32"), out: T.Tensor((ROWS, WIDTH), "float32")):
        with T.Kernel(1, threads=128):
            x_frag = T.alloc_fragment((ROWS, WIDTH), "float32")
            sum_frag = T.alloc_fragment((ROWS,), "float32")
            T.annotate_layout({
                x_frag: T.Fragment(x_frag.shape, forward_fn=lambda i, j: (
                    offset + j // VEC, i * VEC + j % VEC)),
                sum_frag: T.Fragment(sum_frag.shape, forward_fn=lambda i, rep: (offset + rep, i),
                                     replicate=64),
            })
            for i, j in T.Parallel(ROWS, WIDTH):
                x_frag[i, j] = x[i, j]
            T.reduce_sum(x_frag, sum_frag, dim=1)
            for i, j in T.Parallel(ROWS, WIDTH):
                out[i, j] = x_frag[i, j] / sum_frag[i]

    return main


TOKENS, HIDDEN = 8, 2560


def _row_absmax():
    """The largest magnitude of each bf16 row, the row in a flattened
    layout `(i * HIDDEN + j) // 4 % 128` (register (i * HIDDEN + j) // 512 * 4
    + j % 4)."""

    def layout(i, j):
        idx = i * HIDDEN + j
        return idx // 4 % 128, idx // 512 * 4 + idx % 4

    @T.prim_func
    def main(A: T.Tensor((TOKENS, HIDDEN), "bfloat16"), B: T.Tensor((TOKENS,), "float32")):
        with T.Kernel(TOKENS, threads=128) as pid:
            src = T.alloc_fragment((1, HIDDEN), "bfloat16")
            dst = T.alloc_fragment((1,), "float32")
            T.annotate_layout({src: T.Fragment((1, HIDDEN), forward_fn=layout)})
            T.copy(A[pid, 0], src)
            T.reduce_absmax(src, dst, dim=1)
            B[pid] = dst[0]

    return main


def _normalize_reference(x):
    return x / x.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("offset", [0, 32])
def test_partial_thread_layout(target, rng, offset):
    x = rng.uniform(0.5, 1.5, (ROWS, WIDTH)).astype(np.float32)
    kernel = tl.compile(_row_normalize(offset), out_idx=[1], target=target)
    got = get(kernel(put(x, target)))
    np.testing.assert_allclose(got, _normalize_reference(x), rtol=1e-5)


def test_flattened_layout(target, rng):
    a = rng.standard_normal((TOKENS, HIDDEN)).astype(np.float32)
    a[np.arange(TOKENS), rng.integers(0, HIDDEN, TOKENS)] = -40.0  # one large value a row
    a16 = a.astype(ml_dtypes.bfloat16)
    kernel = tl.compile(_row_absmax(), out_idx=[1], target=target)
    got = get(kernel(put(a16, target)))
    np.testing.assert_array_equal(got, np.abs(a16.astype(np.float32)).max(axis=1))


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_layout_functions_compile(chip):
    for program in (_row_normalize(32), _row_absmax()):
        kernel = tl.compile(program, out_idx=[1], target=chip)
        assert kernel.get_kernel_source()


def test_layout_on_threads_not_dividing_the_block():
    @T.prim_func
    def main(x: T.Tensor((384,), "float32"), out: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            x_frag = T.alloc_fragment((384,), "float32")
            T.annotate_layout({x_frag: T.Fragment((384,), forward_fn=lambda j: (j // 8, j % 8))})
            for j in T.Parallel(384):
                x_frag[j] = x[j]
            out[0] = x_frag[0]

    with pytest.raises(Exception, match="places elements on 48 threads, which does not divide "
                                        "the block's 128"):
        tl.compile(main, out_idx=[1], target="cuda:sm_90a")


def _thread_only(thread_fn):
    """Column sums of x (64 x 32) in a fragment given by its thread function
    alone (TileLang derives the register index: the index parts the thread
    does not read, in order)."""

    @T.prim_func
    def main(x: T.Tensor((64, 32), "float32"), out: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, threads=64):
            frag = T.alloc_fragment((64, 32), "float32")
            T.annotate_layout({frag: T.Fragment((64, 32), forward_thread_fn=thread_fn)})
            for i, j in T.Parallel(64, 32):
                frag[i, j] = x[i, j] * 2.0
            for i, j in T.Parallel(64, 32):
                out[i, j] = frag[i, j] + 1.0

    return main


@pytest.mark.parametrize("thread_fn", [lambda i, j: i, lambda i, j: i // 2 + j // 16 * 32,
                                       lambda i, j: (i % 8) * 8 + j % 8],
                         ids=["rows", "split", "mod"])
def test_layout_from_the_thread_function_alone(target, rng, thread_fn):
    x = rng.standard_normal((64, 32)).astype(np.float32)
    kernel = tl.compile(_thread_only(thread_fn), out_idx=[1], target=target)
    np.testing.assert_allclose(get(kernel(put(x, target))), x * 2 + 1, rtol=1e-6)
    if target == "cpu":
        tl.compile(_thread_only(thread_fn), out_idx=[1], target="cuda:sm_90a")


def test_register_index_inferred_as_tilelang_does():
    f = T.Fragment((64, 32), forward_thread_fn=lambda i, j: i // 2 + j // 16 * 32)
    assert f.map.endswith("-> (((d0 floordiv 2) + ((d1 floordiv 16) * 32)), "
                          "((d0 mod 2) * 16 + (d1 mod 16)))>"), f.map
    with pytest.raises(tl.TileLangError, match="give forward_index_fn"):
        T.Fragment((8, 8), forward_thread_fn=lambda i, j: (i + j) % 8)
