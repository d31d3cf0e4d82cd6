"""T.copy between regions whose extents differ, with TileLang's meaning:
the copy runs over the region of the more local side (fragment or local,
then shared, then global; the source's when both are global), which must
cover the source's region in every dimension. TileLang's
test_tilelang_copy_shape_mismatched copies A[:, :2] into B[:, :3]: only
B[:, :2] is written. Runs against NumPy; compile-only for sm_80 and sm_90a."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put

M, N = 16, 16


def _global_to_global():
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            T.copy(A[:, :2], B[:, :3])

    return main


def _global_to_wider_shared():
    """The shared tile is the more local side: 16x4 elements of A are read
    although the source names a 16x2 region."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((M, 4), "float32")
            T.copy(A[:, 0:2], S)
            T.copy(S, B[:, 4:8])

    return main


def _global_to_narrower_shared():
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((M, 2), "float32", scope="shared")
            T.copy(A[:, 0:4], S)
            T.copy(S, B[:, 0:2])

    return main


def test_copy_runs_over_the_source_between_global_tensors(target, rng):
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    kernel = tl.compile(_global_to_global(), target=target)
    b_dev = put(b, target)
    kernel(put(a, target), b_dev)
    want = b.copy()
    want[:, :2] = a[:, :2]
    np.testing.assert_array_equal(get(b_dev), want)


def test_copy_runs_over_the_more_local_side(target, rng):
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = np.zeros((M, N), np.float32)
    kernel = tl.compile(_global_to_wider_shared(), target=target)
    b_dev = put(b, target)
    kernel(put(a, target), b_dev)
    want = b.copy()
    want[:, 4:8] = a[:, 0:4]
    np.testing.assert_array_equal(get(b_dev), want)


def test_copy_into_a_smaller_local_region_is_refused():
    with pytest.raises(tl.TileLangError, match="is smaller than the region of 'A'"):
        tl.compile(_global_to_narrower_shared(), target="cpu")


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_copy_extents_compile(chip):
    for program in (_global_to_global(), _global_to_wider_shared()):
        assert tl.compile(program, target=chip).get_kernel_source()


B_, S_, D_, BS_ = 2, 100, 64, 32


def _ragged_chunks():
    """Chunks of BS_ rows of each sequence (its length in L) through shared
    memory: the shared side's region has the run-time extent (rows past the
    end stay as T.clear left them); then the chunk's rows from the global
    region of run-time extent into the whole shared tile, which TileLang
    copies over the shared tile (rows past the region come from the tensor,
    zeros past its end)."""
    @T.prim_func
    def main(X: T.Tensor((B_, S_, D_), "float32"), L: T.Tensor((B_,), "int32"),
             O: T.Tensor((B_, 4, BS_, D_), "float32"), P: T.Tensor((B_, 4, BS_, D_), "float32")):
        with T.Kernel(4, B_, threads=128) as (c, b):
            sh = T.alloc_shared((BS_, D_), "float32")
            T.clear(sh)
            start = c * BS_
            end = T.min(start + BS_, L[b])
            T.copy(X[b, start:end, :], sh[0:end - start, :])
            T.copy(sh, O[b, c, :, :])
            T.copy(X[b, start:end, 0:D_], sh)
            T.copy(sh, P[b, c, :, :])

    return main


def test_regions_of_run_time_extent(target, rng):
    x = rng.standard_normal((B_, S_, D_)).astype(np.float32)
    lengths = np.array([70, 100], np.int32)
    kernel = tl.compile(_ragged_chunks(), out_idx=[2, 3], target=target)
    o, p = (get(v) for v in kernel(put(x, target), put(lengths, target)))
    want_o = np.zeros((B_, 4, BS_, D_), np.float32)
    want_p = np.zeros((B_, 4, BS_, D_), np.float32)
    for b in range(B_):
        for c in range(4):
            s0, e = c * BS_, min(c * BS_ + BS_, lengths[b])
            if e > s0:
                want_o[b, c, :e - s0] = x[b, s0:e]
            rows = x[b, s0:s0 + BS_]
            want_p[b, c, :len(rows)] = rows
    np.testing.assert_array_equal(o, want_o)
    np.testing.assert_array_equal(p, want_p)
    if target == "cpu":
        for chip in ("cuda:sm_80", "cuda:sm_90a"):
            tl.compile(_ragged_chunks(), out_idx=[2, 3], target=chip)
