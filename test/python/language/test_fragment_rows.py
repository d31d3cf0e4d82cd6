"""A fragment written and read row by row: a T.Parallel over the columns
inside a serial loop over the rows (TileOPs' tiled vector norm). The row
index is the same in every iteration of the T.Parallel, so each thread
holds all rows of its columns and indexes its registers by the row at run
time (after unrolling: plain registers). Where the fragment's layout spreads
rows over threads (a gemm accumulator), the access goes through shared
memory, as before. Checked against NumPy on the CPU and (marked `gpu`) the
GPU; the sm_90a / sm_80 code keeps the rows in registers (no shared memory
staging, no local memory)."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.compiler.cuda import resource_report
from support.devices import get, put


def _norms(M, N, bm, tn, threads, kind):
    """Per-row l2 norm or abs-max of x in column tiles of tn, bm rows a block."""

    @T.prim_func
    def main(x: T.Tensor((M, N), "float16"), out: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as pid:
            xf = T.alloc_fragment((bm, tn), "float32")
            tr = T.alloc_fragment((bm, tn), "float32")
            acc = T.alloc_fragment((bm,), "float32")
            part = T.alloc_fragment((bm,), "float32")
            T.fill(acc, 0.0)
            for t in T.Serial(T.ceildiv(N, tn)):
                for i in T.serial(bm):
                    for j in T.Parallel(tn):
                        xf[i, j] = T.if_then_else(
                            pid * bm + i < M and t * tn + j < N,
                            T.cast(x[pid * bm + i, t * tn + j], "float32"), 0.0)
                for i in T.serial(bm):
                    for j in T.Parallel(tn):
                        if kind == "l2":
                            tr[i, j] = xf[i, j] * xf[i, j]
                        else:
                            tr[i, j] = T.abs(xf[i, j])
                if kind == "l2":
                    T.reduce_sum(tr, part, dim=1)
                    for i in T.Parallel(bm):
                        acc[i] += part[i]
                else:
                    T.reduce_max(tr, part, dim=1)
                    for i in T.Parallel(bm):
                        acc[i] = T.max(acc[i], part[i])
            if kind == "l2":
                for i in T.Parallel(bm):
                    acc[i] = T.sqrt(acc[i])
            for i in T.Parallel(bm):
                if pid * bm + i < M:
                    out[pid * bm + i] = acc[i]

    return main


def _scaled_gemm(M, N, K):
    """C = (A @ B) * s[row], the scale applied row by row to the gemm's
    accumulator, whose layout spreads rows over the threads."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             s: T.Tensor((M,), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            for i in T.serial(M):
                for j in T.Parallel(N):
                    c[i, j] = c[i, j] * s[i]
            T.copy(c, C)

    return main


def _mirrored_rows(M, N, bm, tn):
    """A fragment no reduction or gemm places, filled row by row (scaled by
    a per-row fragment) and read back in mirrored row order (the row index
    `bm - 1 - i` computed inside the T.Parallel): the loop gives it its
    layout, every row in each thread's registers."""

    @T.prim_func
    def main(x: T.Tensor((M, N), "float32"), s: T.Tensor((M,), "float32"),
             out: T.Tensor((M, N), "float32")):
        with T.Kernel(M // bm, threads=128) as pid:
            sf = T.alloc_fragment((bm,), "float32")
            xf = T.alloc_fragment((bm, tn), "float32")
            for i in T.Parallel(bm):
                sf[i] = s[pid * bm + i]
            for t in T.serial(N // tn):
                for i in T.serial(bm):
                    for j in T.Parallel(tn):
                        xf[i, j] = x[pid * bm + i, t * tn + j] * sf[i]
                for i in T.serial(bm):
                    for j in T.Parallel(tn):
                        out[pid * bm + i, t * tn + j] = xf[i, j] + xf[bm - 1 - i, j]

    return main


def _check_mirrored(rng, target, device):
    M, N, bm, tn = 16, 512, 4, 256
    x = rng.standard_normal((M, N)).astype(np.float32)
    s = rng.standard_normal(M).astype(np.float32)
    kernel = tl.compile(_mirrored_rows(M, N, bm, tn), out_idx=[2], target=target)
    got = get(kernel(put(x, device), put(s, device)))
    y = (x * s[:, None]).reshape(M // bm, bm, N)
    want = (y + y[:, ::-1, :]).reshape(M, N)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_mirrored_rows_on_cpu(rng):
    _check_mirrored(rng, "cpu", "cpu")


@pytest.mark.gpu
def test_mirrored_rows_on_gpu(rng):
    _check_mirrored(rng, "cuda", "cuda")


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_mirrored_rows_stay_in_registers(chip):
    kernel = tl.compile(_mirrored_rows(16, 512, 4, 256), out_idx=[2], target=chip,
                        pass_configs={"tl.disable_cache": True})
    assert kernel.shared_bytes == 0, kernel.shared_bytes
    ptx = kernel.get_kernel_source()
    assert "ld.local" not in ptx and "st.local" not in ptx


CASES = [(64, 8192, 4, 2048, 256, "l2"), (37, 3000, 4, 1024, 128, "max"),
         (10, 500, 2, 256, 64, "l2")]


def _check_norms(rng, target, device, M, N, bm, tn, threads, kind):
    x = rng.standard_normal((M, N)).astype(np.float16)
    kernel = tl.compile(_norms(M, N, bm, tn, threads, kind), out_idx=[1], target=target)
    got = get(kernel(put(x, device)))
    xf = x.astype(np.float64)
    want = np.sqrt((xf * xf).sum(1)) if kind == "l2" else np.abs(xf).max(1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _check_scaled_gemm(rng, target, device):
    M, N, K = 64, 64, 32
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    s = rng.standard_normal(M).astype(np.float32)
    kernel = tl.compile(_scaled_gemm(M, N, K), out_idx=[3], target=target)
    got = get(kernel(put(A, device), put(B, device), put(s, device)))
    want = (A.astype(np.float32) @ B.astype(np.float32)) * s[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rows_on_cpu(rng, case):
    _check_norms(rng, "cpu", "cpu", *case)


def test_rows_of_a_gemm_accumulator_on_cpu(rng):
    _check_scaled_gemm(rng, "cpu", "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=str)
def test_rows_on_gpu(rng, case):
    _check_norms(rng, "cuda", "cuda", *case)


@pytest.mark.gpu
def test_rows_of_a_gemm_accumulator_on_gpu(rng):
    _check_scaled_gemm(rng, "cuda", "cuda")


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a"])
def test_rows_stay_in_registers(chip):
    kernel = tl.compile(_norms(64, 8192, 4, 2048, 256, "l2"), out_idx=[1], target=chip,
                        pass_configs={"tl.disable_cache": True})
    # Only the reduction's scratch: the two 4 x 2048 float32 fragments
    # (64 KB) are not staged through shared memory.
    assert kernel.shared_bytes <= 1024, kernel.shared_bytes
    ptx = kernel.get_kernel_source()
    assert "ld.local" not in ptx and "st.local" not in ptx
    report = resource_report(kernel.ptxas_info)
    assert report["spill_stores"] == 0 and report["registers"] <= 128, report
    assert not re.search(r"__local_depot", ptx)
