"""T.gemm of packed int4 tiles (TileLang's gemm_int4 example): A (M x K) and
B (N x K) hold two signed 4-bit integers a byte, the even K index in the
low nibble; C accumulates in int32. On NVIDIA GPUs it runs on mma.sync
m16n8k64 .s4 (sm_80 and sm_90a alike: wgmma has no 4-bit integers), its
tiles loaded by cp.async as bytes; the CPU target unpacks the nibbles.

Checked against NumPy on the CPU target and on the GPU (marked `gpu`), the
PTX for sm_80 and sm_90a, and the refusals (uint4, B not K-major, a K tile
of fewer than 64 values, AMD)."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
from tilelang_mlir.kernels import gemm
from support.devices import get, put


def _matmul(M, N, K, bm=64, bn=64, bk=64, threads=128, stages=2, dtype="int4",
            transpose_B=True):
    """The kernel library's GEMM of A (M x K) by B (N x K) (`matmul_nt`),
    or by B (K x N) (`matmul`) without `transpose_B`, accumulated in int32."""
    make = gemm.matmul_nt if transpose_B else gemm.matmul
    return make(M, N, K, bm, bn, bk, num_stages=stages, threads=threads, dtype=dtype,
                accum_dtype="int32", out_dtype="int32")


def _pack(x: np.ndarray) -> np.ndarray:
    """TileLang's packing: element 2j in the low nibble of byte j."""
    return ((x[:, ::2] & 0xF) | ((x[:, 1::2] & 0xF) << 4)).astype(np.uint8).view(np.int8)


@pytest.mark.parametrize("M,N,K,config", [
    (128, 128, 256, dict()),
    (192, 160, 512, dict(bm=128, bn=32, bk=128, stages=3)),
    (100, 72, 192, dict(bm=64, bn=64, bk=64, threads=64)),  # partial tiles
])
def test_int4_gemm(target, rng, M, N, K, config):
    a = rng.integers(-8, 8, (M, K))
    b = rng.integers(-8, 8, (N, K))
    kernel = tl.compile(_matmul(M, N, K, **config), out_idx=[2], target=target)
    c = get(kernel(put(_pack(a), target), put(_pack(b), target)))
    np.testing.assert_array_equal(c, a @ b.T)


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_int4_gemm_ptx(chip):
    kernel = tl.compile(_matmul(256, 256, 512), out_idx=[2], target=chip)
    ptx = kernel.get_kernel_source()
    assert set(re.findall(r"mma\.sync[.\w]*", ptx)) == \
        {"mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32"}
    assert "cp.async.cg.shared.global" in ptx or "cp.async.ca.shared.global" in ptx


@pytest.mark.parametrize("kwargs,chip,message", [
    (dict(dtype="uint4"), "cuda:sm_90a", "takes int4 A and B"),
    (dict(transpose_B=False), "cuda:sm_90a", "B as N x K"),
    (dict(bk=32), "cuda:sm_90a", "K a multiple of 64 int4 values"),
    (dict(), "rocm:gfx942", "on an NVIDIA target"),
])
def test_int4_gemm_refusals(kwargs, chip, message):
    with pytest.raises(Exception, match=message):
        tl.compile(_matmul(128, 128, 256, **kwargs), out_idx=[2], target=chip)


def test_int8_gemm_on_mma_sync(target, rng):
    """The int8 mma.sync path the int4 one shares (m16n8k32 .s8), also
    where wgmma would take int8 (tl.disable_wgmma)."""
    M, N, K = 128, 96, 256
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (N, K)).astype(np.int8)
    kernel = tl.compile(_matmul(M, N, K, bn=32, dtype="int8"), out_idx=[2], target=target,
                        pass_configs={"tl.disable_wgmma": True})
    if target != "cpu":
        assert "m16n8k32.row.col.s32.s8.s8.s32" in kernel.get_kernel_source()
    c = get(kernel(put(a, target), put(b, target)))
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64).T)
