"""Barriers and branches that differ between threads (TileLang's SIMT
style, as in its radix top-k): a stream compaction where each thread whose
element passes takes a slot with an atomic on a shared counter and stores
its index there, beside a shared histogram filled with atomics. The
compiler's barriers go before such a branch (or a loop whose trip count is
the thread's own), never inside it: threads that skip the branch would not
arrive, and the kernel hung. Atomics need no barrier among themselves, but
one orders them after the fill of their buffer and before its reads.

GPU runs (marked `gpu`) against NumPy, compile-only for sm_80, sm_90a and
gfx942, and the tile IR after tile-insert-barriers: no tile.barrier inside
an scf.if or scf.for that differs between threads."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put

N, THREADS, BUCKETS = 4096, 256, 16


def _compact():
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "int32"),
             Hist: T.Tensor((BUCKETS,), "int32"), Count: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=THREADS):
            slots = T.alloc_shared((N,), "int32")
            hist = T.alloc_shared((BUCKETS,), "int32")
            counter = T.alloc_shared((1,), "int32")
            pos = T.alloc_var("int32")
            tx = T.get_thread_binding()
            T.fill(slots, -1)
            T.fill(hist, 0)
            T.fill(counter, 0)
            for r in T.serial(N // THREADS):
                idx = r * THREADS + tx
                if X[idx] > 0:
                    pos = T.atomic_add(counter[0], 1, return_prev=True)
                    slots[pos] = idx
                    T.atomic_add(hist[T.Cast("int32", X[idx] * BUCKETS) % BUCKETS], 1)
            # A loop whose trip count is the thread's own: every thread
            # copies its share of the slots (threads past the count none).
            for j in T.serial(T.ceildiv(counter[0] - tx, THREADS)):
                Out[tx + j * THREADS] = slots[tx + j * THREADS]
            for i in T.Parallel(BUCKETS):
                Hist[i] = hist[i]
            Count[0] = counter[0]

    return main


@pytest.mark.gpu
def test_compaction_on_gpu(rng):
    x = rng.standard_normal(N).astype(np.float32)
    x[rng.integers(0, N, 64)] = 0.0  # (zeros do not pass)
    kernel = tl.compile(_compact(), out_idx=[1, 2, 3], target="cuda")
    out, hist, count = (get(v) for v in kernel(put(x, "cuda")))
    passing = np.flatnonzero(x > 0)
    assert count[0] == len(passing)
    np.testing.assert_array_equal(np.sort(out[:count[0]]), passing)
    buckets = (x[passing] * BUCKETS).astype(np.int32) % BUCKETS
    np.testing.assert_array_equal(hist, np.bincount(buckets, minlength=BUCKETS))


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"])
def test_compaction_compiles(chip):
    kernel = tl.compile(_compact(), out_idx=[1, 2, 3], target=chip)
    assert kernel.get_kernel_source()


def _nested_barriers(ir: str):
    """The tile.barrier ops nested in an scf.if or scf.for of the kernel
    (by indentation: MLIR prints one region level per two spaces)."""
    lines = ir.splitlines()
    found = []
    for k, line in enumerate(lines):
        if line.strip() != "tile.barrier":
            continue
        depth = len(line) - len(line.lstrip())
        for up in range(k - 1, -1, -1):
            above = lines[up]
            d = len(above) - len(above.lstrip())
            if d < depth and above.strip() and not above.strip().startswith("}"):
                if re.search(r"\bscf\.(if|for)\b", above):
                    found.append(above.strip())
                break
    return found


def test_no_barrier_inside_divergent_control():
    """The fill of the slots, the histogram and the counter is ordered
    before the loop by one barrier; the branch on X[idx] > 0 and the copy
    loop to the thread's own count get none inside. (The serial loop over
    r is the same in every thread: its body starts with the branch, so a
    barrier may go before the branch, inside that loop.)"""
    kernel = tl.compile(_compact(), out_idx=[1, 2, 3], target="cuda:sm_90a")
    ir = kernel.mlir("layout")
    nested = _nested_barriers(ir)
    assert all("scf.for" in op and "step" in op for op in nested), nested
    assert not any(re.search(r"scf\.if", op) for op in nested), nested
