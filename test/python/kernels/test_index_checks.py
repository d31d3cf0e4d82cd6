"""kernels/attention/index_checks.py: the device assertions on the attention
kernels' index tensors, as kernels of their own (run here on the CPU target,
whose device assertions raise DeviceAssertionError; ops launches them on a
GPU before the attention kernel). The attention kernels themselves hold no
assertion (test_examples: no kernel has ptxas serialize its wgmma)."""

import numpy as np
import pytest

import tilelang_mlir as tl
from tilelang_mlir.base.errors import DeviceAssertionError
from tilelang_mlir.kernels.attention import index_checks


def offsets(rng, batch, max_seqlen):
    lens = rng.integers(0, max_seqlen + 1, batch)
    lens[1] = max(lens[1], 1)  # sequence 1 at least one token long, so that the breaks bite
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)


@pytest.mark.parametrize("break_it,message", [
    (None, None),
    (lambda cu: cu.__setitem__(0, 1), "cu_seqlens\\[0\\] must be 0"),
    (lambda cu: cu.__setitem__(3, cu[2] - 1), "must not decrease"),
    (lambda cu: cu.__setitem__(slice(4, None), cu[4:] + 40), "longer than max_seqlen"),
])
def test_check_offsets(rng, break_it, message):
    batch, max_seqlen = 6, 32
    kernel = tl.compile(index_checks.check_offsets(batch, max_seqlen), target="cpu")
    cu = offsets(rng, batch, max_seqlen)
    total = int(cu[-1])
    if break_it is None:
        kernel(cu, total)
        with pytest.raises(DeviceAssertionError, match="must be the number of tokens"):
            kernel(cu, total + 1)
        return
    break_it(cu)
    with pytest.raises(DeviceAssertionError, match=message):
        kernel(cu, int(cu[-1]))


def test_check_pages(rng):
    batch, max_pages, num_pages, page_size = 5, 8, 20, 16
    kernel = tl.compile(index_checks.check_pages(batch, max_pages, num_pages, page_size),
                        target="cpu")
    lens = rng.integers(0, max_pages * page_size + 1, batch).astype(np.int32)
    lens[0] = 3 * page_size + 1  # four pages
    table = rng.integers(0, num_pages, (batch, max_pages)).astype(np.int32)
    table[0, 4:] = -1  # past the sequence's end: not read
    kernel(lens, table)
    bad = table.copy()
    bad[0, 3] = num_pages
    with pytest.raises(DeviceAssertionError, match="a page outside"):
        kernel(lens, bad)
    long = lens.copy()
    long[1] = max_pages * page_size + 1
    with pytest.raises(DeviceAssertionError, match="a length outside"):
        kernel(long, table)
