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
