"""T.atomic_add(dst, shared_tile, use_tma=True): a shared tile added into a
global tensor as one bulk reduction by the TMA unit (sm_90 and newer), the
block's threads synchronized before and after it; elsewhere the same adds
element by element. Random inputs, checked against numpy: several blocks
adding into the same rows (the adds are atomic), a tile rewritten and added
again in a loop (the tile may only be written once the bulk read is done),
rows past the destination's end (dropped), float32 and float16."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put


def accumulate(rows, blocks, steps, M=32, N=64, dtype="float32"):
    """Block b adds, at step s, the tile A[b, s] (written into a shared tile
    from a fragment) into Out rows ((b + s) % 3) * M ... of an Out of
    `rows` rows: blocks overlap, and a tile may hang past the end."""

    @T.prim_func
    def main(A: T.Tensor((blocks, steps, M, N), dtype), Out: T.Tensor((rows, N), dtype)):
        with T.Kernel(blocks, threads=128) as bx:
            tile = T.alloc_shared((M, N), dtype)
            frag = T.alloc_fragment((M, N), dtype)
            for s in T.serial(steps):
                T.copy(A[bx, s, 0, 0], frag)
                for i, j in T.Parallel(M, N):
                    frag[i, j] *= 2
                T.copy(frag, tile)
                T.atomic_add(Out[((bx + s) % 3) * M, 0], tile, use_tma=True)

    return main


def reference(a, rows, dtype):
    blocks, steps, M, N = a.shape
    out = np.zeros((rows, N), np.float64)
    for b in range(blocks):
        for s in range(steps):
            r = ((b + s) % 3) * M
            n = min(M, rows - r)
            out[r:r + n] += 2 * a[b, s, :n].astype(np.float64)
    return out


@pytest.mark.parametrize("dtype,rows", [("float32", 96), ("float32", 80), ("float16", 96)])
def test_bulk_atomic_add(target, rng, dtype, rows):
    blocks, steps = 6, 5
    a = rng.standard_normal((blocks, steps, 32, 64)).astype(dtype)
    if dtype == "float16":  # halves: sums of at most 10 are exact in float16
        a = (np.round(a * 4) / 4).astype(dtype)
    kernel = tl.compile(accumulate(rows, blocks, steps, dtype=dtype), target=target)
    out = put(np.zeros((rows, 64), dtype), target)
    kernel(put(a, target), out)
    got = np.asarray(get(out)).astype(np.float64)
    np.testing.assert_allclose(got, reference(a, rows, dtype), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_bulk_atomic_add_is_a_tma_reduction_on_sm90(dtype):
    """On sm_90a one cp.reduce.async.bulk.tensor per 128-byte panel of the
    (swizzled) tile, and no element atomics; on sm_80 element atomics."""
    program = accumulate(96, 2, 1, dtype=dtype)  # (one step: one add in the code)
    hopper = tl.compile(program, target="cuda:sm_90a").get_source()
    panels = 64 * (4 if dtype == "float32" else 2) // 128  # 128-byte panels of a row
    assert hopper.count("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile") == panels
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", hopper)
    assert "atom.global" not in hopper and "red.global" not in hopper
    ampere = tl.compile(program, target="cuda:sm_80").get_source()
    assert "cp.reduce.async.bulk" not in ampere
    assert re.search(r"\b(atom|red)\.", ampere)  # (bfloat16 on sm_80: a compare-and-swap loop)
