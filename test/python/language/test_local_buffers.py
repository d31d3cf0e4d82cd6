"""Local buffers (T.alloc_local: per-thread arrays, every thread holds the
whole buffer) with TileLang's meaning on every target.

A T.Parallel that writes only local buffers and touches no fragment is
per-thread code: every thread runs every iteration on its own copy (TileLang
partitions a T.Parallel among the threads only when it writes a non-local
buffer or touches a fragment). A T.copy with a local side runs whole in
every thread; its stores to global or shared memory come from one thread
when every thread stores the same values at the same places, else from
every thread. The GPU campaign (seed 44) found the first rule broken on
every CUDA config: the loop was shared out, each thread computed a quarter
of its own `o`, and thread 0 copied its `o` out with the rest unset.

CPU runs and GPU runs (marked `gpu`) against NumPy on random inputs; the
compile-only tests check the loop layouts for sm_90a, sm_80 and gfx942."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put


def _elementwise_1d(n=48, tile=16, threads=160, dtype="float16"):
    """The campaign's simplest failure: a local copy of a local tile."""
    @T.prim_func
    def main(X: T.Tensor((n,), dtype), Out: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as (bx,):
            a = T.alloc_local((tile,), dtype)
            T.copy(X[bx * tile], a)
            o = T.alloc_local((tile,), dtype)
            for i0 in T.Parallel(tile):
                o[i0] = a[i0]
            T.copy(o, Out[bx * tile])

    return main


def _elementwise_2d(dtype, m=8, n=6, tm=4, tn=3, threads=64):
    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype),
             Out: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, tm), T.ceildiv(n, tn), threads=threads) as (bx, by):
            a = T.alloc_local((tm, tn), dtype)
            T.copy(X[bx * tm, by * tn], a)
            b = T.alloc_local((tm, tn), dtype)
            T.copy(Y[bx * tm, by * tn], b)
            o = T.alloc_local((tm, tn), dtype)
            for i, j in T.Parallel(tm, tn):
                o[i, j] = a[i, j] * 2 - b[i, j]
            T.copy(o, Out[bx * tm, by * tn])

    return main


def _cleared_accumulation(n=64, tile=16, threads=128):
    """T.clear of a local buffer, then a T.Parallel accumulating into it
    with a load of global memory."""
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Out: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as (bx,):
            o = T.alloc_local((tile,), "float32")
            T.clear(o)
            for r in T.serial(3):
                for i in T.Parallel(tile):
                    o[i] += X[bx * tile + i] * (r + 1)
            T.copy(o, Out[bx * tile])

    return main


def _reduce_into_local(m=4, n=8, threads=64):
    """A T.Parallel fills a local tile that T.reduce_sum reduces into a
    local buffer within each thread."""
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Out: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=threads):
            a = T.alloc_local((m, n), "float32")
            T.copy(X, a)
            sq = T.alloc_local((m, n), "float32")
            for i, j in T.Parallel(m, n):
                sq[i, j] = a[i, j] * a[i, j]
            r = T.alloc_local((m,), "float32")
            T.reduce_sum(sq, r, dim=1)
            T.copy(r, Out)

    return main


def _through_shared(n=32, tile=16, threads=128):
    """Local to shared, then shared to global."""
    @T.prim_func
    def main(X: T.Tensor((n,), "int32"), Out: T.Tensor((n,), "int32")):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as (bx,):
            a = T.alloc_local((tile,), "int32")
            T.copy(X[bx * tile], a)
            o = T.alloc_local((tile,), "int32")
            for i in T.Parallel(tile):
                o[i] = a[i] * 3 + 1
            s = T.alloc_shared((tile,), "int32")
            T.copy(o, s)
            T.copy(s, Out[bx * tile])

    return main


def _pipelined_accumulation(k=128, step=16, threads=128):
    """A local accumulator over the stages of a T.Pipelined loop."""
    @T.prim_func
    def main(X: T.Tensor((k,), "float32"), Out: T.Tensor((step,), "float32")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((step,), "float32")
            acc = T.alloc_local((step,), "float32")
            T.fill(acc, 1.0)
            for ko in T.Pipelined(k // step, num_stages=2):
                T.copy(X[ko * step], s)
                for i in T.Parallel(step):
                    acc[i] += s[i]
            T.copy(acc, Out)

    return main


def _mixed_loop(n=32, tile=16, threads=64):
    """A T.Parallel writing a local buffer and global memory is shared out
    (TileLang's rule); its global stores cover the tile."""
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Out: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as (bx,):
            o = T.alloc_local((tile,), "float32")
            for i in T.Parallel(tile):
                o[i] = X[bx * tile + i]
                Out[bx * tile + i] = X[bx * tile + i] + 1.0

    return main


def _long_local_loop(n=2048, threads=32):
    """A per-thread loop of more iterations than a thread may unroll: it
    runs as a loop in each thread."""
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):
            a = T.alloc_local((n,), "float32")
            T.copy(X, a)
            for i in T.Parallel(n):
                a[i] = a[i] * 0.5 + 1.0
            T.copy(a, Out)

    return main


def _thread_offsets(per=4, threads=32):
    """Each thread copies its own part in and out of its local buffers
    (SIMT style): every thread stores its own results."""
    n = per * threads

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            a = T.alloc_local((per,), "float32")
            T.copy(X[tx * per], a)
            o = T.alloc_local((per,), "float32")
            for i in T.Parallel(per):
                o[i] = a[i] * 3.0
            T.copy(o, Out[tx * per])

    return main


def _run(func, target, inputs, out_idx):
    kernel = tl.compile(func, out_idx=out_idx, target=target)
    outs = kernel(*[put(x, target) for x in inputs])
    return [get(o) for o in (outs if isinstance(outs, (list, tuple)) else [outs])]


def test_copy_of_a_local_tile(target, rng):
    x = rng.standard_normal(48).astype(np.float16)
    (got,) = _run(_elementwise_1d(), target, [x], [1])
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32"])
def test_rank2_local_elementwise(dtype, target, rng):
    x = rng.integers(-5, 6, (8, 6)).astype(dtype)
    y = rng.integers(-5, 6, (8, 6)).astype(dtype)
    (got,) = _run(_elementwise_2d(dtype), target, [x, y], [2])
    np.testing.assert_array_equal(got, (x * 2 - y).astype(dtype))


def test_cleared_local_accumulation(target, rng):
    x = rng.standard_normal(64).astype(np.float32)
    (got,) = _run(_cleared_accumulation(), target, [x], [1])
    np.testing.assert_allclose(got, x * 6, rtol=1e-6)


def test_reduction_of_a_local_tile(target, rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    (got,) = _run(_reduce_into_local(), target, [x], [1])
    np.testing.assert_allclose(got, (x * x).sum(1), rtol=1e-5)


def test_local_through_shared(target, rng):
    x = rng.integers(-100, 100, 32).astype(np.int32)
    (got,) = _run(_through_shared(), target, [x], [1])
    np.testing.assert_array_equal(got, x * 3 + 1)


def test_local_accumulator_in_pipelined_loop(target, rng):
    x = rng.standard_normal(128).astype(np.float32)
    (got,) = _run(_pipelined_accumulation(), target, [x], [1])
    np.testing.assert_allclose(got, 1.0 + x.reshape(8, 16).sum(0), rtol=1e-5, atol=1e-5)


def test_mixed_local_and_global_loop(target, rng):
    x = rng.standard_normal(32).astype(np.float32)
    (got,) = _run(_mixed_loop(), target, [x], [1])
    np.testing.assert_array_equal(got, x + np.float32(1))


def test_long_per_thread_loop(target, rng):
    x = rng.standard_normal(2048).astype(np.float32)
    (got,) = _run(_long_local_loop(), target, [x], [1])
    np.testing.assert_array_equal(got, x * np.float32(0.5) + np.float32(1))


@pytest.mark.gpu
def test_each_thread_copies_out_its_own_part(rng):
    """On the CPU (one thread of control) the thread index has no meaning
    past one thread: GPU only (its compile-only sibling is below)."""
    x = rng.standard_normal(128).astype(np.float32)
    (got,) = _run(_thread_offsets(), "cuda", [x], [1])
    np.testing.assert_array_equal(got, x * np.float32(3))


# ---------------------------------------------------------------------------
# Compile-only: the loop layouts and code for the GPU targets
# ---------------------------------------------------------------------------

_GPU_TARGETS = ["cuda:sm_90a", "cuda:sm_80", "rocm:gfx942"]


def _replicated_over(kernel, threads):
    """For each tile.parallel after layout inference: whether every one of
    `threads` threads runs all of its iterations (a layout replicated
    `threads` times)."""
    return [f"threads = {threads}, replicate = {threads}>" in line
            for line in kernel.mlir("layout").splitlines() if "tile.parallel" in line]


@pytest.mark.parametrize("gpu_target", _GPU_TARGETS)
def test_per_thread_loops_are_not_shared_out(gpu_target):
    """Every tile.parallel of these programs writes only local buffers:
    every thread runs all its iterations (the layout replicates the whole
    loop over the block), so each thread's copy out reads only elements it
    computed. The mixed loop (a global store too) stays shared out."""
    cases = [(_elementwise_1d(), 160, True),
             (_elementwise_2d("int8"), 64, True),
             (_cleared_accumulation(), 128, True),
             (_reduce_into_local(), 64, True),
             (_through_shared(), 128, True),
             (_pipelined_accumulation(), 128, True),  # expanded into stages on sm_80
             (_long_local_loop(), 32, True),
             (_thread_offsets(), 32, True),
             (_mixed_loop(), 64, False)]
    for func, threads, per_thread in cases:
        kernel = tl.compile(func, target=gpu_target)
        loops = _replicated_over(kernel, threads)
        assert loops and loops == [per_thread] * len(loops), kernel.mlir("layout")
        assert kernel.get_source()


@pytest.mark.parametrize("gpu_target", ["cuda:sm_90a", "cuda:sm_80"])
def test_copy_out_of_a_local_buffer_writer(gpu_target):
    """The copy out of a local buffer: one thread stores when every thread
    holds the same values for the same places (a tile of the block's), every
    thread when its destination is its own (offset by the thread index;
    thread 0 alone used to store, leaving the other threads' parts unset).
    A per-thread loop longer than a thread may unroll is a loop (its body
    once, over all 2048 iterations) in every thread."""
    thread_zero = "arith.cmpi eq, %thread_id_x, %c0"
    uniform = tl.compile(_elementwise_1d(), target=gpu_target).mlir("gpu")
    assert thread_zero in uniform
    own = tl.compile(_thread_offsets(), target=gpu_target).mlir("gpu")
    assert thread_zero not in own and "memref.store" in own
    long = tl.compile(_long_local_loop(), target=gpu_target).mlir("gpu")
    assert long.count("scf.for %arg2 = %c0 to %c2048 step %c1") == 3, long
    assert long.count("arith.mulf") == 1, long
