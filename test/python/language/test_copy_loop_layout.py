"""A copy's loop_layout (TileLang's T.copy / T.async_copy(..., loop_layout=
T.Fragment(...))): the element-wise copy whose iterations run on the threads
the layout names. deepseek-ai/TileKernels' engram gate backward relies on it:
each thread reads, after its own T.ptx_wait_group and with no barrier, the
elements it copied itself. Numerics on the GPU (the CPU target has no
thread index), the placement in the IR and refusals everywhere."""

import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import TileLangError

HC, TPH, VS = 4, 32, 8      # rows, threads per row, elements per thread run
BLK = 2 * TPH * VS          # columns per copied block: two runs per thread
THREADS = HC * TPH


def _layout(i, j):
    """Thread i*TPH + (j // VS) % TPH holds element (i, j): runs of VS."""
    return i * TPH + (j // VS) % TPH, j % VS + j // (TPH * VS) * VS


def _own_reads(N, asynchronous, with_layout=True):
    """Copies N/BLK blocks of x into shared memory, each followed by reads of
    exactly the copying thread's elements with no barrier in between."""
    @T.prim_func
    def main(x: T.Tensor((HC, N), "bfloat16"), out: T.Tensor((HC, N), "float32")):
        with T.Kernel(1, threads=THREADS):
            tid = T.get_thread_binding()
            row, sub = tid // TPH, tid % TPH
            layout = T.Fragment((HC, BLK), forward_fn=_layout) if with_layout else None
            s = T.alloc_shared((HC, BLK), "bfloat16")
            for b in T.serial(N // BLK):
                if asynchronous:
                    T.async_copy(x[:, b * BLK:(b + 1) * BLK], s, loop_layout=layout)
                    T.ptx_wait_group(0)
                else:
                    T.copy(x[0:HC, b * BLK:(b + 1) * BLK], s, loop_layout=layout)
                for r in T.serial(BLK // (TPH * VS)):
                    for k in T.serial(VS):
                        col = r * TPH * VS + sub * VS + k
                        out[row, b * BLK + col] = s[row, col] * 2.0

    return main


@pytest.mark.gpu
@pytest.mark.parametrize("asynchronous", [True, False])
def test_each_thread_reads_what_it_copied(asynchronous):
    N = 4 * BLK
    x = torch.randn(HC, N, dtype=torch.bfloat16, device="cuda")
    out = torch.zeros(HC, N, dtype=torch.float32, device="cuda")
    tl.compile(_own_reads(N, asynchronous), target="cuda")(x, out)
    torch.testing.assert_close(out, x.float() * 2.0, rtol=0, atol=0)


@pytest.mark.parametrize("asynchronous", [True, False])
def test_the_layout_places_the_copy_loop(asynchronous):
    kernel = tl.compile(_own_reads(2 * BLK, asynchronous), target="cuda:sm_90a")
    loops = [line for line in kernel.mlir("tile").splitlines() if "tile.parallel" in line]
    assert len(loops) == 1 and "loop_layout" in loops[0], loops
    # Without a layout, the asynchronous copy stays one tile.copy (cp.async).
    plain = tl.compile(_own_reads(2 * BLK, asynchronous, with_layout=False),
                       target="cuda:sm_90a").mlir("tile")
    assert "tile.parallel" not in plain and "tile.copy" in plain


def _copy(layout, src_slice=True, asynchronous=True):
    @T.prim_func
    def main(x: T.Tensor((HC, BLK), "bfloat16"), y: T.Tensor((HC, BLK), "bfloat16")):
        with T.Kernel(1, threads=THREADS):
            s = T.alloc_shared((HC, BLK), "bfloat16")
            if asynchronous:
                T.async_copy(x[:, :] if src_slice else s, s if src_slice else x[:, :],
                             loop_layout=layout)
            else:
                T.copy(x, s, loop_layout=layout)
            T.copy(s, y)

    return main


def test_refusals():
    with pytest.raises(TileLangError, match=r"T.async_copy loop_layout: a T.Fragment of shape "
                                            r"\[4, 64\] for a copy whose loop runs over "
                                            r"\[4, 512\]"):
        tl.compile(_copy(T.Fragment((HC, 64), forward_fn=_layout)), target="cpu")
    with pytest.raises(TileLangError, match="T.copy loop_layout must be a T.Fragment"):
        tl.compile(_copy("row", asynchronous=False), target="cpu")
    with pytest.raises(TileLangError, match="only supports global->shared"):
        tl.compile(_copy(T.Fragment((HC, BLK), forward_fn=_layout), src_slice=False),
                   target="cpu")
